/* creds.c - registry credentials from the files users already keep (see
 * creds.h): which files, in which order, read how (creds_find,
 * creds_read_file), and containers' auth.json and docker's config.json
 * (the lookup of containers/image's pkg/docker/config); enroot's netrc
 * .credentials is netrc.c's.  Read as data: no credential helper and no
 * shell ever runs. */
#include "creds.h"

#include <errno.h>
#include <fcntl.h>
#include <nettle/base64.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jsonbody.h"
#include "ref.h"
#include "strv.h"
#include "util.h"

#define CREDS_FILE_MAX (1u << 20)

/* name (n bytes) names host: the same (host names are case-insensitive),
 * or both Docker Hub. */
bool creds_same_host(const char *name, size_t n, const char *host)
{
	size_t hn = strlen(host);

	/* Docker Hub answers to several names; a credential for one is for all. */
	return (n == hn && strncasecmp(name, host, n) == 0) ||
	       (ref_is_docker_hub(name, n) && ref_is_docker_hub(host, hn));
}

int creds_copy_value(char *dst, size_t size, const char *src, size_t len)
{
	if (len >= size || memchr(src, '\0', len) != NULL)
		return -1;
	memcpy(dst, src, len);
	dst[len] = '\0';
	return 0;
}

/* ---- auth.json / config.json ---- */

/* How well auths key `key` fits host/repo: -1 not; else longer namespaces
 * fit better, and a key spelled as the host better than an alias or URL. */
static long key_fit(const char *key, const char *host, const char *repo)
{
	size_t hn, pn = 0;
	bool url = false;

	/* docker login wrote URLs ("https://index.docker.io/v1/"): the host only. */
	if (strncasecmp(key, "https://", 8) == 0 || strncasecmp(key, "http://", 7) == 0) {
		key += key[4] == ':' ? 7 : 8;
		url = true;
	}
	hn = strcspn(key, "/");
	if (!creds_same_host(key, hn, host))
		return -1;
	if (!url && key[hn] == '/') {
		const char *path = key + hn + 1;

		pn = strlen(path);
		if (pn > 0 && (strncmp(repo, path, pn) != 0 || (repo[pn] != '\0' && repo[pn] != '/')))
			return -1;
	}
	return (long)(pn > 0 ? pn + 1 : 0) * 2 +
	       (!url && hn == strlen(host) && strncasecmp(key, host, hn) == 0);
}

/* auths[key] into c: 1, 0 when it holds no user and password (docker's
 * marker for a credential helper, an identitytoken), -1 malformed. */
static int auth_entry(json_object *v, const char *key, const char *file, struct cred *c,
		      struct err *e)
{
	char what[512];
	json_object *auth = jsonbody_get(v, "auth", json_type_string);
	int ru, rp;

	snprintf(what, sizeof(what), "%s: auths.\"%.200s\"", file, key);
	if (!json_object_is_type(v, json_type_object))
		return err_set(e, EXIT_USAGE, "%s is not an object", what);
	if (auth != NULL && json_object_get_string_len(auth) > 0) {
		const char *b64 = json_object_get_string(auth), *colon;
		size_t blen = (size_t)json_object_get_string_len(auth), dlen = 0;
		struct base64_decode_ctx ctx;
		uint8_t *dec = malloc(BASE64_DECODE_LENGTH(blen) + 1);
		int ok;

		if (dec == NULL)
			return err_sys(e, EXIT_CTRUN, "%s", what);
		base64_decode_init(&ctx);
		ok = base64_decode_update(&ctx, &dlen, dec, blen, b64) && base64_decode_final(&ctx);
		dec[ok ? dlen : 0] = '\0';
		colon = ok ? memchr(dec, ':', dlen) : NULL;
		/* containers/image trims NULs around the password. */
		while (colon != NULL && dlen > 0 && dec[dlen - 1] == '\0')
			dlen--;
		ok = colon != NULL &&
		     creds_copy_value(c->user, sizeof(c->user), (char *)dec,
				      (size_t)(colon - (char *)dec)) == 0 &&
		     creds_copy_value(c->pass, sizeof(c->pass), colon + 1,
				      dlen - (size_t)(colon + 1 - (char *)dec)) == 0;
		explicit_bzero(dec, BASE64_DECODE_LENGTH(blen) + 1);
		free(dec);
		if (!ok)
			return err_set(e, EXIT_USAGE, "%s: auth is not the base64 of USER:PASSWORD "
				       "(or is too long)", what);
	} else {
		ru = jsonbody_string(v, "username", c->user, sizeof(c->user), EXIT_USAGE, what, e);
		rp = ru < 0 ? -1 : jsonbody_string(v, "password", c->pass, sizeof(c->pass), EXIT_USAGE,
						    what, e);
		if (ru < 0 || rp < 0)
			return -1;
		if (ru == 0 || rp == 0 || c->user[0] == '\0' || c->pass[0] == '\0')
			return 0;
	}
	if (xsnprintf(c->source, sizeof(c->source), "%s (entry %s)", file, key) < 0)
		snprintf(c->source, sizeof(c->source), "%s (entry %.64s...)", file, key);
	c->found = true;
	return 1;
}

/* creds_authjson, the entries restricted to login `user` when it is not "". */
static int authjson_find(const char *text, size_t len, const char *file, const char *host,
			 const char *repo, const char *user, struct cred *c, struct err *e)
{
	json_object *o, *auths = NULL;
	struct cred *cand = malloc(sizeof(*cand));
	size_t blank = 0;
	long best = -1;
	int rv = -1;

	memset(c, 0, sizeof(*c));
	if (repo == NULL)
		repo = ""; /* a token realm's host: host keys only */
	if (cand == NULL)
		return err_sys(e, EXIT_CTRUN, "%s", file);
	/* An empty file is an empty configuration (podman's, after logout). */
	for (size_t i = 0; i < len && strchr(" \t\r\n", text[i]) != NULL && text[i] != '\0'; i++)
		blank++;
	if (blank == len) {
		free(cand);
		return 0;
	}
	o = jsonbody_parse(text, len, CREDS_FILE_MAX, EXIT_USAGE, file, e);
	if (o == NULL) {
		free(cand);
		return -1;
	}
	if (json_object_object_get_ex(o, "auths", &auths) && !json_object_is_type(auths, json_type_null) &&
	    !json_object_is_type(auths, json_type_object)) {
		err_set(e, EXIT_USAGE, "%s: auths is not an object", file);
		goto out;
	}
	if (json_object_is_type(auths, json_type_object)) {
		json_object_object_foreach(auths, key, v) {
			long fit = key_fit(key, host, repo);
			int r;

			if (fit <= best)
				continue;
			memset(cand, 0, sizeof(*cand));
			r = auth_entry(v, key, file, cand, e);
			if (r < 0)
				goto out;
			if (r == 0 || (user[0] != '\0' && strcmp(cand->user, user) != 0))
				continue;
			*c = *cand;
			best = fit;
		}
	}
	rv = best >= 0;
out:
	explicit_bzero(cand, sizeof(*cand));
	free(cand);
	json_object_put(o);
	return rv;
}

int creds_authjson(const char *text, size_t len, const char *file, const char *host,
		   const char *repo, struct cred *c, struct err *e)
{
	return authjson_find(text, len, file, host, repo, "", c, e);
}

/* ---- the files ---- */

char *creds_read_file(const char *path, size_t *len, bool quiet, struct err *e)
{
	static struct strv warned; /* each file's warning once per process */
	struct stat st;
	char *buf = NULL;
	size_t n = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	if (fd < 0) {
		if (errno == ENOTDIR)
			errno = ENOENT; /* a file in the way of the directory: no such file */
		if (errno != ENOENT)
			err_sys(e, EXIT_USAGE, "%s", path);
		return NULL;
	}
	if (fstat(fd, &st) < 0) {
		err_sys(e, EXIT_USAGE, "%s", path);
		goto fail;
	}
	/* A FIFO or a device would stall or stream forever. */
	if (!S_ISREG(st.st_mode)) {
		err_set(e, EXIT_USAGE, "%s is not a regular file", path);
		goto fail;
	}
	if (st.st_size > (off_t)CREDS_FILE_MAX) {
		err_set(e, EXIT_USAGE, "%s is larger than 1 MiB", path);
		goto fail;
	}
	if ((st.st_mode & 044) != 0 && !quiet && strv_find(&warned, path) < 0) {
		fprintf(stderr, "ctrun: warning: %s is readable by others (chmod 600 %s)\n", path,
			path);
		strv_push(&warned, path);
	}
	/* The size can change under us: read at most one byte past the bound. */
	buf = read_fd_max(fd, CREDS_FILE_MAX + 1, &n);
	if (buf == NULL) {
		err_sys(e, errno == ENOMEM ? EXIT_CTRUN : EXIT_USAGE, "%s", path);
		goto fail;
	}
	if (n > CREDS_FILE_MAX) {
		err_set(e, EXIT_USAGE, "%s is larger than 1 MiB", path);
		goto fail;
	}
	close(fd);
	buf[n] = '\0';
	*len = n;
	return buf;
fail:
	free(buf);
	close(fd);
	errno = EINVAL;
	return NULL;
}

/* dir/name (dir alone when name is ""), or "" where dir is unset (NULL or
 * "") or the path too long. */
static void path_in(char *out, size_t size, const char *dir, const char *name)
{
	if (dir == NULL || dir[0] == '\0' ||
	    xsnprintf(out, size, "%s%s%s", dir, name[0] != '\0' ? "/" : "", name) < 0)
		out[0] = '\0';
}

int creds_find(const char *host, const char *repo, const char *user, char *const *envp, bool quiet,
	       struct cred *c, struct err *e)
{
	const char *home = envp_get(envp, "HOME"), *xdg = envp_get(envp, "XDG_CONFIG_HOME");
	const char *docker = envp_get(envp, "DOCKER_CONFIG");
	const char *enroot = envp_get(envp, "ENROOT_CONFIG_PATH");
	const char *auth = envp_get(envp, "REGISTRY_AUTH_FILE");
	char config[PATH_MAX], paths[5][PATH_MAX];
	int r = 0;

	memset(c, 0, sizeof(*c));
	if (user == NULL)
		user = "";
	/* containers/image: $XDG_CONFIG_HOME, else ~/.config; docker: $DOCKER_CONFIG,
	 * else ~/.docker; enroot: $ENROOT_CONFIG_PATH, else $XDG_CONFIG_HOME/enroot. */
	if (xdg != NULL && xdg[0] != '\0')
		path_in(config, sizeof(config), xdg, "");
	else
		path_in(config, sizeof(config), home, ".config");
	path_in(paths[0], PATH_MAX, auth, "");
	path_in(paths[1], PATH_MAX, envp_get(envp, "XDG_RUNTIME_DIR"), "containers/auth.json");
	path_in(paths[2], PATH_MAX, config, "containers/auth.json");
	if (docker != NULL && docker[0] != '\0')
		path_in(paths[3], PATH_MAX, docker, "config.json");
	else
		path_in(paths[3], PATH_MAX, home, ".docker/config.json");
	if (enroot != NULL && enroot[0] != '\0')
		path_in(paths[4], PATH_MAX, enroot, ".credentials");
	else
		path_in(paths[4], PATH_MAX, config, "enroot/.credentials");
	for (size_t i = 0; i < 5 && r == 0; i++) {
		size_t len = 0;
		char *text;

		if (paths[i][0] == '\0')
			continue;
		text = creds_read_file(paths[i], &len, quiet, e);
		if (text == NULL) {
			if (errno == ENOENT)
				continue;
			return -1;
		}
		if (i < 4) {
			r = authjson_find(text, len, paths[i], host, repo, user, c, e);
		} else if (memchr(text, '\0', len) != NULL) {
			r = err_set(e, EXIT_USAGE, "%s holds a NUL byte", paths[i]);
		} else {
			r = creds_netrc_user(text, paths[i], host, user, envp, c, e);
		}
		explicit_bzero(text, len);
		free(text);
	}
	return r;
}
