/* store.c - the image store's paths and records (see store.h). */
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

bool digest_valid(const char *d)
{
	if (strncmp(d, "sha256:", 7) != 0 || strlen(d) != 7 + 64)
		return false;
	for (const char *p = d + 7; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
			return false;
	return true;
}

unsigned store_dir_mode(const char *store)
{
	struct stat st;

	/* A group's store (setgid, group-writable): its folders the group's too. */
	if (stat(store, &st) == 0 && (st.st_mode & S_ISGID) && (st.st_mode & 070) == 070)
		return 02770;
	return 0700;
}

/* A folder of a group's store exactly 02770, whatever the umask of the
 * member who made it (or of an older ctrun that made it 2750): on the
 * folder itself, not on a link put there since, and only when it is the
 * caller's (only its owner may chmod it). */
static int group_mode(const char *p, struct err *e)
{
	struct stat st;
	int fd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), rv = 0;

	if (fd < 0)
		return err_sys(e, EXIT_CTRUN, "image store %s", p);
	if (fstat(fd, &st) < 0 ||
	    (st.st_uid == geteuid() && (st.st_mode & 07777) != 02770 && fchmod(fd, 02770) < 0))
		rv = err_sys(e, EXIT_CTRUN, "image store %s", p);
	close(fd);
	return rv;
}

int store_mkdir(const char *store, const char *path, struct err *e)
{
	unsigned mode = store_dir_mode(store);
	size_t from = strlen(store);
	char p[PATH_MAX];

	if (xsnprintf(p, sizeof(p), "%s", path) < 0 || strncmp(p, store, from) != 0)
		return err_set(e, EXIT_CTRUN, "image store %s: %s is not in it", store, path);
	for (char *s = p + from;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		if (s > p + from && s[-1] != '/') {
			char c = *s;

			*s = '\0';
			if (mkdir(p, mode) < 0 && errno != EEXIST)
				return err_sys(e, EXIT_CTRUN, "image store %s ([registry] store)", p);
			if (mode != 0700 && group_mode(p, e) < 0)
				return -1;
			*s = c;
		}
		if (*s == '\0')
			return 0;
	}
}

int store_init(const char *store, struct err *e)
{
	static const char *const sub[] = { "/blobs/sha256", "/images", "/refs", "/tmp", "/jobs" };
	char p[PATH_MAX];
	struct trust t;

	if (mkdir_p(store, 0700) < 0)
		return err_sys(e, EXIT_CTRUN, "image store %s ([registry] store)", store);
	/* Whose it is first: nothing is made in a store that is not trusted. */
	if (store_trust(store, &t, e) < 0)
		return -1;
	for (size_t i = 0; i < sizeof(sub) / sizeof(*sub); i++) {
		if (xsnprintf(p, sizeof(p), "%s%s", store, sub[i]) < 0)
			return err_set(e, EXIT_USAGE, "image store %s: path too long", store);
		if (store_mkdir(store, p, e) < 0)
			return -1;
	}
	return store_trust(store, &t, e) < 0 ? -1 : 0;
}

static int by_digest(const char *store, const char *digest, const char *dir, const char *pre,
		     const char *suf, char *out, size_t size, struct err *e)
{
	if (!digest_valid(digest))
		return err_set(e, EXIT_CTRUN, "'%.80s' is not a sha256 digest", digest);
	if (xsnprintf(out, size, "%s/%s/%s%s%s", store, dir, pre, digest + 7, suf) < 0)
		return err_set(e, EXIT_USAGE, "image store %s: path too long", store);
	return 0;
}

int store_blob(const char *store, const char *digest, char *out, size_t size, struct err *e)
{
	return by_digest(store, digest, "blobs/sha256", "", "", out, size, e);
}

int store_image(const char *store, const char *digest, char *out, size_t size, struct err *e)
{
	return by_digest(store, digest, "images", "sha256-", ".sqsh", out, size, e);
}

int store_tmp(const char *store, const char *name, char *out, size_t size, struct err *e)
{
	char host[64];

	if (gethostname(host, sizeof(host) - 1) < 0)
		snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = '\0';
	host[strcspn(host, "./")] = '\0';
	if (xsnprintf(out, size, "%s/tmp/%s.%s.%ld", store, name, host, (long)getpid()) < 0)
		return err_set(e, EXIT_USAGE, "image store %s: path too long", store);
	return 0;
}

/* <store>/refs/<host>/<repo>/<key>: host and repo as ref.c checked them
 * (no "..", no empty component), the key a tag or "@sha256-<hex>". */
static int ref_path(const char *store, const struct image_ref *r, const char *key, char *out,
		    size_t size, struct err *e)
{
	if (strstr(r->host, "..") || strchr(r->host, '/') || strstr(r->repo, "..") ||
	    key[0] == '.' || strchr(key, '/'))
		return err_set(e, EXIT_USAGE, "reference %s/%s: not a name the store can hold",
			       r->host, r->repo);
	if (xsnprintf(out, size, "%s/refs/%s/%s/%s", store, r->host, r->repo, key) < 0)
		return err_set(e, EXIT_USAGE, "image store %s: path too long", store);
	return 0;
}

static const char *key_of(const struct image_ref *r, char *buf, size_t size)
{
	if (r->digest[0] != '\0') {
		snprintf(buf, size, "@sha256-%s", r->digest + 7);
		return buf;
	}
	return r->tag;
}

int store_ref_read(const char *store, const struct image_ref *r, char *digest, size_t size,
		   struct err *e)
{
	char path[PATH_MAX], kb[80], buf[128];
	struct trust t;
	struct stat st;
	ssize_t n;
	int fd;

	if (ref_path(store, r, key_of(r, kb, sizeof(kb)), path, sizeof(path), e) < 0)
		return -1;
	fd = store_trust(store, &t, e);
	if (fd <= 0)
		return fd;
	fd = store_open(path, &t, &st, e);
	if (fd == -2)
		return 0;
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return err_sys(e, EXIT_CTRUN, "%s", path);
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	if (!digest_valid(buf) || xsnprintf(digest, size, "%s", buf) < 0)
		return 0; /* not a record: as if none */
	return 1;
}

int store_ref_write(const char *store, const struct image_ref *r, const char *key,
		    const char *digest, struct err *e)
{
	char path[PATH_MAX], tmp[PATH_MAX], line[128];
	int fd, n;

	if (ref_path(store, r, key, path, sizeof(path), e) < 0 ||
	    store_tmp(store, "ref", tmp, sizeof(tmp), e) < 0)
		return -1;
	*strrchr(path, '/') = '\0';
	if (store_mkdir(store, path, e) < 0)
		return -1;
	path[strlen(path)] = '/';
	n = snprintf(line, sizeof(line), "%s\n", digest);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, STORE_FILE_MODE);
	if (fd < 0)
		return err_sys(e, EXIT_CTRUN, "%s", tmp);
	if (fchmod(fd, STORE_FILE_MODE) < 0 || write_all(fd, line, (size_t)n) < 0 ||
	    fsync(fd) < 0) {
		err_sys(e, EXIT_CTRUN, "%s", tmp);
		close(fd);
		unlink(tmp);
		return -1;
	}
	close(fd);
	if (rename(tmp, path) < 0) {
		err_sys(e, EXIT_CTRUN, "%s", path);
		unlink(tmp);
		return -1;
	}
	return 0;
}
