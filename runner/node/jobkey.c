/* jobkey.c - the job's secret and the keys derived from it (see jobkey.h). */
#include "jobkey.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nettle/hmac.h>
#include <nettle/memops.h>

#include "privdir.h"
#include "strv.h"
#include "util.h"

int jobkey_path(char *buf, size_t size, struct err *e)
{
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");

	/* XDG: a relative XDG_CONFIG_HOME is invalid and ignored. */
	if (xdg != NULL && xdg[0] == '/')
		return xsnprintf(buf, size, "%s/ctrun/job.key", xdg) < 0
			? err_set(e, EXIT_CTRUN, "job key path: XDG_CONFIG_HOME is too long") : 0;
	if (home == NULL || home[0] != '/')
		return err_set(e, EXIT_CTRUN, "no job key: HOME is not set, so there is no "
			       "~/.config/ctrun/job.key (set HOME or XDG_CONFIG_HOME, or "
			       JOBKEY_SECRET_ENV " to 64 hex digits on every node)");
	return xsnprintf(buf, size, "%s/.config/ctrun/job.key", home) < 0
		? err_set(e, EXIT_CTRUN, "job key path: HOME is too long") : 0;
}

/* Creates the key file unless it exists: a private temporary file of 32
 * random bytes linked to the name.  link(2) never replaces, so when two
 * nodes race the loser's link fails with EEXIST and both read the winner's. */
static int key_create(const char *path, struct err *e)
{
	char dir[PATH_MAX], tmp[PATH_MAX + 16], *slash;
	uint8_t key[JOBKEY_LEN];
	int fd = -1, rv = -1;

	tmp[0] = '\0';
	if (xsnprintf(dir, sizeof(dir), "%s", path) < 0 || (slash = strrchr(dir, '/')) == NULL) {
		err_set(e, EXIT_CTRUN, "job key %s: bad path", path);
		goto out;
	}
	*slash = '\0';
	if (privdir_make(dir, PRIVDIR_PARENTS, e) < 0) {
		err_wrap(e, "job key");
		goto out;
	}
	if (xsnprintf(tmp, sizeof(tmp), "%s/.job.key.XXXXXX", dir) < 0 ||
	    (fd = mkstemp(tmp)) < 0) { /* mkstemp: mode 0600 */
		tmp[0] = '\0';
		err_sys(e, EXIT_CTRUN, "job key: creating a file in %s", dir);
		goto out;
	}
	if (jobkey_random(key, sizeof(key), e) < 0)
		goto out;
	if (fchmod(fd, 0600) < 0 || write_all(fd, key, sizeof(key)) < 0 || fsync(fd) < 0) {
		err_sys(e, EXIT_CTRUN, "job key: writing %s", tmp);
		goto out;
	}
	if (link(tmp, path) < 0 && errno != EEXIST) {
		err_sys(e, EXIT_CTRUN, "job key: creating %s", path);
		goto out;
	}
	rv = 0;
out:
	explicit_bzero(key, sizeof(key));
	if (fd >= 0)
		close(fd);
	if (tmp[0] != '\0')
		unlink(tmp);
	return rv;
}

int jobkey_file(const char *path, uint8_t key[JOBKEY_LEN], struct err *e)
{
	struct stat st;
	ssize_t n;
	int fd, rv = -1;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT) {
		if (key_create(path, e) < 0)
			return -1;
		fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd < 0)
		return err_sys(e, EXIT_CTRUN, "job key %s (a symlink is refused; remove it and "
			       "ctrun makes a new key)", path);
	if (fstat(fd, &st) < 0) {
		err_sys(e, EXIT_CTRUN, "job key %s", path);
		goto out;
	}
	/* Anyone else who could read or replace the key could join the
	 * user's jobs: such a file is refused, not repaired. */
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 07777) != 0600 ||
	    st.st_size != JOBKEY_LEN) {
		err_set(e, EXIT_CTRUN, "job key %s is not a regular file of uid %u with mode 0600 and "
			"%d bytes (uid %u, mode %04o, %lld bytes): others could read or change it; "
			"remove it and ctrun makes a new one", path, (unsigned)geteuid(), JOBKEY_LEN,
			(unsigned)st.st_uid, (unsigned)(st.st_mode & 07777), (long long)st.st_size);
		goto out;
	}
	n = read(fd, key, JOBKEY_LEN);
	if (n != JOBKEY_LEN) {
		err_sys(e, EXIT_CTRUN, "job key %s: reading", path);
		goto out;
	}
	rv = 0;
out:
	close(fd);
	return rv;
}

int jobkey_secret(char *const *envp, uint8_t secret[JOBKEY_LEN], struct err *e)
{
	const char *env = envp_get(envp, JOBKEY_SECRET_ENV);
	char path[PATH_MAX];

	if (env != NULL) {
		if (jobkey_from_hex(env, secret) < 0)
			return err_set(e, EXIT_USAGE, JOBKEY_SECRET_ENV " is not 64 hex digits (unset it, "
				       "or set the same 32 random bytes in hex on every node)");
		return 0;
	}
	if (jobkey_path(path, sizeof(path), e) < 0)
		return -1;
	return jobkey_file(path, secret, e);
}

void jobkey_mac(const uint8_t key[JOBKEY_LEN], const struct jobkey_part *parts, size_t n,
		uint8_t mac[JOBKEY_LEN])
{
	struct hmac_sha256_ctx ctx;

	hmac_sha256_set_key(&ctx, JOBKEY_LEN, key);
	for (size_t i = 0; i < n; i++)
		hmac_sha256_update(&ctx, parts[i].len, parts[i].p);
	hmac_sha256_digest(&ctx, JOBKEY_LEN, mac);
	explicit_bzero(&ctx, sizeof(ctx));
}

void jobkey_derive(const uint8_t secret[JOBKEY_LEN], const char *purpose, const char *job,
		   const char *step, uint8_t key[JOBKEY_LEN])
{
	char label[64];

	job = job != NULL ? job : "none";
	step = step != NULL ? step : "none";
	if (xsnprintf(label, sizeof(label), "ctrun-%s", purpose) < 0)
		label[0] = '\0';
	/* NUL-separated, so no two (purpose, job, step) give the same bytes. */
	jobkey_mac(secret, (struct jobkey_part[]){ { label, strlen(label) + 1 },
						   { job, strlen(job) + 1 },
						   { step, strlen(step) + 1 } },
		   3, key);
}

bool jobkey_equal(const uint8_t a[JOBKEY_LEN], const uint8_t b[JOBKEY_LEN])
{
	return memeql_sec(a, b, JOBKEY_LEN) != 0;
}

int jobkey_random(uint8_t *buf, size_t len, struct err *e)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = getrandom(buf + got, len - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return err_sys(e, EXIT_CTRUN, "getrandom");
		got += (size_t)n;
	}
	return 0;
}

void jobkey_to_hex(const uint8_t key[JOBKEY_LEN], char *hex)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < JOBKEY_LEN; i++) {
		hex[2 * i] = digits[key[i] >> 4];
		hex[2 * i + 1] = digits[key[i] & 15];
	}
	hex[JOBKEY_HEX_LEN] = '\0';
}

static int nibble(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int jobkey_from_hex(const char *s, uint8_t key[JOBKEY_LEN])
{
	if (s == NULL || strlen(s) != JOBKEY_HEX_LEN)
		return -1;
	for (size_t i = 0; i < JOBKEY_LEN; i++) {
		int hi = nibble(s[2 * i]), lo = nibble(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		key[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}
