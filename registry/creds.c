/* creds.c - registry credentials from the files users already keep (see
 * creds.h): containers' auth.json and docker's config.json (the lookup of
 * containers/image's pkg/docker/config), and enroot's netrc .credentials
 * (as enroot's docker.sh and curl --netrc-file read it).  Read as data: no
 * credential helper and no shell ever runs. */
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
static bool same_host(const char *name, size_t n, const char *host)
{
	size_t hn = strlen(host);

	/* Docker Hub answers to several names; a credential for one is for all. */
	return (n == hn && strncasecmp(name, host, n) == 0) ||
	       (ref_is_docker_hub(name, n) && ref_is_docker_hub(host, hn));
}

static int copy_value(char *dst, size_t size, const char *src, size_t len)
{
	if (len >= size || memchr(src, '\0', len) != NULL)
		return -1;
	memcpy(dst, src, len);
	dst[len] = '\0';
	return 0;
}

/* ---- enroot's .credentials (netrc) ---- */

struct netrc {
	const char *p, *file;
	size_t line;
	struct err *e;
	char tok[sizeof(((struct cred *)0)->pass)];
	bool quoted;
};

static int netrc_bad(struct netrc *n, const char *why, const char *what)
{
	return err_set(n->e, EXIT_USAGE, "%s line %zu: %s%s (enroot's .credentials lines are "
		       "'machine HOST login USER password PASS')", n->file, n->line, why, what);
}

/* Skips blanks, newlines (counted) and, where a keyword is due, # comments. */
static void netrc_skip(struct netrc *n, bool comments)
{
	for (;;) {
		n->p += strspn(n->p, " \t\r\f\v");
		if (*n->p == '\n') {
			n->line++;
			n->p++;
		} else if (comments && *n->p == '#') {
			n->p += strcspn(n->p, "\n");
		} else {
			return;
		}
	}
}

/* The next word into n->tok ("quoted" with \ escapes, as curl reads them);
 * 0 at the end of the text. */
static int netrc_word(struct netrc *n, bool keyword)
{
	size_t len = 0;

	netrc_skip(n, keyword);
	n->quoted = *n->p == '"';
	if (*n->p == '\0')
		return 0;
	if (n->quoted)
		n->p++;
	while (*n->p != '\0') {
		char ch = *n->p;

		if (n->quoted ? ch == '"' : strchr(" \t\r\n\f\v", ch) != NULL)
			break;
		if (n->quoted && ch == '\n')
			return netrc_bad(n, "a quoted word runs past the end of the line", "");
		if (n->quoted && ch == '\\' && n->p[1] != '\0')
			ch = *++n->p;
		if (len + 1 >= sizeof(n->tok))
			return netrc_bad(n, "a word is too long", "");
		n->tok[len++] = ch;
		n->p++;
	}
	if (n->quoted) {
		if (*n->p != '"')
			return netrc_bad(n, "a quoted word has no closing '\"'", "");
		n->p++;
	}
	n->tok[len] = '\0';
	return 1;
}

/* The word after keyword key: -1 (e set) at the end of the text. */
static int netrc_value(struct netrc *n, const char *key)
{
	int r = netrc_word(n, false);

	if (r == 0)
		return netrc_bad(n, key, " without its value");
	return r < 0 ? -1 : 0;
}

/* A value written $NAME or ${NAME}: NAME into name, else false. */
static bool var_name(const char *v, char *name, size_t size)
{
	size_t n;

	if (v[0] != '$')
		return false;
	v += v[1] == '{' ? 2 : 1;
	n = strspn(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");
	if (n == 0 || (v[0] >= '0' && v[0] <= '9') || n >= size ||
	    strcmp(v + n, v[-1] == '{' ? "}" : "") != 0)
		return false;
	memcpy(name, v, n);
	name[n] = '\0';
	return true;
}

/* One entry as read: machine (or default), login, password. */
struct netrc_entry {
	bool used, matches, is_default, has_login, has_pass, pass_runs;
	size_t line;
	char machine[256], login[sizeof(((struct cred *)0)->user)],
		pass[sizeof(((struct cred *)0)->pass)];
};

/* The entry's credentials into c: 1, or -1 when the entry cannot give them. */
static int netrc_take(struct netrc *n, const struct netrc_entry *en, char *const *envp,
		      struct cred *c)
{
	char name[128];
	const char *v;

	n->line = en->line;
	if (!en->has_login || !en->has_pass)
		return netrc_bad(n, en->has_login ? "no password for machine " : "no login for machine ",
				 en->machine);
	if (en->pass_runs)
		return err_set(n->e, EXIT_USAGE, "%s line %zu: the password of %s runs a command, "
			       "which ctrun does not do (it reads credentials as data): write the "
			       "value, or $VARIABLE", n->file, en->line, en->machine);
	/* nvcr.io's login is the literal "$oauthtoken": a login is a variable's
	 * value only where that variable is set. */
	v = var_name(en->login, name, sizeof(name)) ? envp_get(envp, name) : NULL;
	if (copy_value(c->user, sizeof(c->user), v != NULL ? v : en->login,
		       strlen(v != NULL ? v : en->login)) < 0)
		return netrc_bad(n, "the login's value is too long", "");
	v = en->pass;
	if (var_name(en->pass, name, sizeof(name)) && (v = envp_get(envp, name)) == NULL)
		return err_set(n->e, EXIT_USAGE, "%s line %zu: the password of %s is $%s, which is "
			       "not set", n->file, en->line, en->machine, name);
	if (copy_value(c->pass, sizeof(c->pass), v, strlen(v)) < 0)
		return netrc_bad(n, "the password's value is too long", "");
	if (xsnprintf(c->source, sizeof(c->source), "%s (machine %s, line %zu)", n->file,
		      en->machine, en->line) < 0)
		snprintf(c->source, sizeof(c->source), "%s", "(a file with a long name)");
	c->found = true;
	return 1;
}

/* Does machine name host?  Also without host's :PORT, as curl and enroot
 * match (curl looks up the URL's host name; enroot greps ${registry%:*}). */
static bool netrc_matches(const char *machine, const char *host)
{
	const char *colon = strrchr(host, ':');
	size_t n = strlen(machine);

	if (same_host(machine, n, host))
		return true;
	return colon != NULL && host[0] != '[' && (size_t)(colon - host) == n &&
	       strncasecmp(machine, host, n) == 0;
}

/* The keywords of a .netrc, as curl and enroot read them. */
enum netrc_key { NETRC_MACHINE, NETRC_DEFAULT, NETRC_LOGIN, NETRC_PASSWORD, NETRC_ACCOUNT,
		 NETRC_PORT, NETRC_MACDEF };
static const struct {
	const char *word;
	enum netrc_key key;
} netrc_keys[] = {
	{ "machine", NETRC_MACHINE }, { "default", NETRC_DEFAULT }, { "login", NETRC_LOGIN },
	{ "password", NETRC_PASSWORD }, { "account", NETRC_ACCOUNT }, { "port", NETRC_PORT },
	{ "macdef", NETRC_MACDEF },
};

/* The keyword `word`: 0, or -1 (e set) when it is none. */
static int netrc_keyword(struct netrc *n, const char *word, enum netrc_key *key)
{
	for (size_t i = 0; i < sizeof(netrc_keys) / sizeof(*netrc_keys); i++)
		if (strcmp(word, netrc_keys[i].word) == 0) {
			*key = netrc_keys[i].key;
			return 0;
		}
	return netrc_bad(n, "unexpected word ", word);
}

/* machine NAME, or default: a new entry. */
static int netrc_entry_start(struct netrc *n, enum netrc_key key, size_t line, const char *host,
			     struct netrc_entry *en)
{
	memset(en, 0, sizeof(*en));
	en->used = true;
	en->line = line;
	en->is_default = key == NETRC_DEFAULT;
	if (en->is_default)
		return 0;
	if (netrc_value(n, "machine") < 0)
		return -1;
	if (copy_value(en->machine, sizeof(en->machine), n->tok, strlen(n->tok)) < 0)
		return netrc_bad(n, "a machine name is too long", "");
	en->matches = netrc_matches(en->machine, host);
	return 0;
}

/* login, password, account or port VALUE of the current entry. */
static int netrc_field(struct netrc *n, enum netrc_key key, const char *word,
		       struct netrc_entry *en)
{
	bool runs;

	if (!en->used)
		return netrc_bad(n, word, " before any machine");
	if (netrc_value(n, word) < 0)
		return -1;
	/* enroot hands a password to the shell: $(...) or `...` runs a
	 * command, to the end of the line. */
	runs = key == NETRC_PASSWORD && !n->quoted &&
	       (strncmp(n->tok, "$(", 2) == 0 || n->tok[0] == '`');
	if (runs)
		n->p += strcspn(n->p, "\n");
	if (key == NETRC_LOGIN) {
		en->has_login = true;
		if (copy_value(en->login, sizeof(en->login), n->tok, strlen(n->tok)) < 0)
			return netrc_bad(n, "a login is too long", "");
	} else if (key == NETRC_PASSWORD) {
		en->has_pass = true;
		en->pass_runs = runs;
		memcpy(en->pass, n->tok, strlen(n->tok) + 1);
	}
	return 0;
}

/* macdef NAME: the macro's lines, up to an empty one. */
static void netrc_macdef(struct netrc *n)
{
	n->p += strcspn(n->p, "\n");
	while (*n->p == '\n' && n->p[1] != '\n' && n->p[1] != '\0') {
		n->line++;
		n->p++;
		n->p += strcspn(n->p, "\n");
	}
}

/* creds_netrc, the entries restricted to login `user` when it is not "". */
static int netrc_find(const char *text, const char *file, const char *host, const char *user,
		      char *const *envp, struct cred *c, struct err *e)
{
	struct netrc *n = calloc(1, sizeof(*n));
	struct netrc_entry *en = calloc(1, sizeof(*en));
	int rv = -1, r;

	memset(c, 0, sizeof(*c));
	if (n == NULL || en == NULL) {
		err_sys(e, EXIT_CTRUN, "%s", file);
		goto out;
	}
	*n = (struct netrc){ .p = text, .file = file, .line = 1, .e = e };
	for (;;) {
		char word[16];
		enum netrc_key key = NETRC_MACDEF;
		size_t keyline;

		r = netrc_word(n, true);
		if (r < 0)
			goto out;
		keyline = n->line;
		snprintf(word, sizeof(word), "%s", n->tok);
		if (r > 0 && netrc_keyword(n, word, &key) < 0)
			goto out;
		/* An entry ends where the next begins, or at the end. */
		if (en->used && en->matches &&
		    (r == 0 || key == NETRC_MACHINE || key == NETRC_DEFAULT) &&
		    (user[0] == '\0' || strcmp(en->login, user) == 0)) {
			rv = netrc_take(n, en, envp, c);
			goto out;
		}
		if (r == 0)
			break;
		switch (key) {
		case NETRC_MACHINE:
		case NETRC_DEFAULT:
			r = netrc_entry_start(n, key, keyline, host, en);
			break;
		case NETRC_LOGIN:
		case NETRC_PASSWORD:
		case NETRC_ACCOUNT:
		case NETRC_PORT:
			r = netrc_field(n, key, word, en);
			break;
		case NETRC_MACDEF:
			netrc_macdef(n);
			break;
		}
		if (r < 0)
			goto out;
	}
	rv = 0;
out:
	/* They held passwords. */
	if (n != NULL)
		explicit_bzero(n, sizeof(*n));
	if (en != NULL)
		explicit_bzero(en, sizeof(*en));
	free(n);
	free(en);
	return rv;
}

int creds_netrc(const char *text, const char *file, const char *host, char *const *envp,
		struct cred *c, struct err *e)
{
	return netrc_find(text, file, host, "", envp, c, e);
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
	if (!same_host(key, hn, host))
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
		     copy_value(c->user, sizeof(c->user), (char *)dec, (size_t)(colon - (char *)dec)) == 0 &&
		     copy_value(c->pass, sizeof(c->pass), colon + 1,
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
			r = netrc_find(text, paths[i], host, user, envp, c, e);
		}
		explicit_bzero(text, len);
		free(text);
	}
	return r;
}
