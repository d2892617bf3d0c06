/* command.c - PATH resolution for worker commands (see command.h). */
#include "command.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

/* What one candidate path turned out to be. */
enum cand { C_MISSING, C_OK, C_DIR, C_NOEXEC };

static enum cand check(const char *path)
{
	struct stat st;

	if (stat(path, &st) < 0)
		return C_MISSING;
	if (S_ISDIR(st.st_mode))
		return C_DIR;
	/* AT_EACCESS: execve checks the effective ids, so do we. */
	if (!S_ISREG(st.st_mode) || faccessat(AT_FDCWD, path, X_OK, AT_EACCESS) < 0)
		return C_NOEXEC;
	return C_OK;
}

static int fail(struct err *e, const char *argv0, enum cand c)
{
	if (c == C_DIR)
		return err_set(e, EXIT_NOEXEC, "cannot execute %s: is a directory", argv0);
	if (c == C_NOEXEC)
		return err_set(e, EXIT_NOEXEC, "cannot execute %s: permission denied", argv0);
	return err_set(e, EXIT_NOTFOUND, "command not found: %s", argv0);
}

int command_resolve(const char *argv0, const char *path_env, char *out, size_t size,
		    struct err *e)
{
	enum cand c, worst = C_MISSING;
	const char *p, *end;

	if (argv0 == NULL || *argv0 == '\0')
		return err_set(e, EXIT_NOTFOUND, "command not found: (empty)");
	if (strchr(argv0, '/') != NULL) {
		c = check(argv0);
		if (c != C_OK)
			return fail(e, argv0, c);
		if (xsnprintf(out, size, "%s", argv0) < 0)
			return err_set(e, EXIT_NOTFOUND, "command path too long: %s", argv0);
		return 0;
	}
	if (path_env == NULL)
		path_env = COMMAND_DEFAULT_PATH;
	for (p = path_env;; p = end + 1) {
		size_t dlen;

		end = strchrnul(p, ':');
		dlen = (size_t)(end - p);
		/* An empty element is the current directory (POSIX). */
		if (dlen == 0 ? xsnprintf(out, size, "%s", argv0) >= 0
			      : xsnprintf(out, size, "%.*s/%s", (int)dlen, p, argv0) >= 0) {
			c = check(out);
			if (c == C_OK)
				return 0;
			if (c != C_MISSING && worst == C_MISSING)
				worst = c;
		}
		if (*end == '\0')
			break;
	}
	if (size > 0)
		out[0] = '\0';
	return fail(e, argv0, worst);
}
