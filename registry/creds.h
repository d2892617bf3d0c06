/* creds.h - registry credentials as users already keep them, read as data
 * (never through a shell):
 *   - containers' auth.json ($REGISTRY_AUTH_FILE, $XDG_RUNTIME_DIR/containers/auth.json,
 *     ~/.config/containers/auth.json) and docker's ~/.docker/config.json:
 *     {"auths": {"HOST" or "HOST/NAMESPACE..." or "https://index.docker.io/v1/":
 *                {"auth": base64("USER:PASSWORD")}}} (or "username"/"password"),
 *     the longest matching HOST/REPO prefix wins (containers-auth.json(5));
 *   - enroot's $ENROOT_CONFIG_PATH/.credentials (default ~/.config/enroot/.credentials):
 *     netrc lines `machine HOST login USER password PASS`, where a login or
 *     password written $VAR or ${VAR} is that environment variable's value
 *     (as enroot does; $oauthtoken stays literal when no such variable is set).
 *   - ctrun.ini's [registry] credentials (the caller passes them in first).
 */
#ifndef CTRUN_CREDS_H
#define CTRUN_CREDS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "err.h"

struct cred {
	bool found;
	char user[256];
	char pass[2048];
	char source[PATH_MAX + 64]; /* "FILE (entry KEY)" for -v and for 401 messages */
};

/* Pure: the entry of netrc `text` for host (an exact machine match; a
 * `default` entry is not used).  envp resolves $VAR / ${VAR}; `file` names
 * the source.  1 found, 0 not, -1 malformed (names the line). */
int creds_netrc(const char *text, const char *file, const char *host, char *const *envp,
		struct cred *c, struct err *e);

/* Pure: the entry of an auth.json / config.json body (len bytes) for
 * host/repo (docker.io also matches "https://index.docker.io/v1/",
 * "index.docker.io" and "registry-1.docker.io").  1 found, 0 not, -1
 * malformed. */
int creds_authjson(const char *text, size_t len, const char *file, const char *host,
		   const char *repo, struct cred *c, struct err *e);

/* Looks through the files above in this order: $REGISTRY_AUTH_FILE,
 * $XDG_RUNTIME_DIR/containers/auth.json, $HOME/.config/containers/auth.json,
 * $HOME/.docker/config.json, enroot's .credentials; the first entry for
 * host/repo wins.  `user` (enroot's USER@, may be "") restricts netrc
 * entries to that login.  A file others can read (mode & 044) gets one
 * warning line on stderr unless quiet.  Files are read bounded (1 MiB),
 * opened with O_NOFOLLOW off only for the user's own paths... (see
 * creds.c).  1 found, 0 none, -1 a file unreadable or malformed. */
int creds_find(const char *host, const char *repo, const char *user, char *const *envp, bool quiet,
	       struct cred *c, struct err *e);

#endif
