/* creds.h - registry credentials as users already keep them, read as data
 * (never through a shell, never through a credential helper):
 *   - containers' auth.json ($REGISTRY_AUTH_FILE, $XDG_RUNTIME_DIR/containers/auth.json,
 *     ${XDG_CONFIG_HOME:-~/.config}/containers/auth.json) and docker's
 *     ${DOCKER_CONFIG:-~/.docker}/config.json:
 *     {"auths": {"HOST" or "HOST/NAMESPACE..." or "https://index.docker.io/v1/":
 *                {"auth": base64("USER:PASSWORD")}}} (or "username"/"password"),
 *     the longest matching HOST/REPO prefix wins (containers-auth.json(5)); a
 *     key written as a URL counts for its host only; an entry with neither
 *     (docker's marker for a credential helper, an identitytoken) is no entry;
 *   - enroot's $ENROOT_CONFIG_PATH/.credentials (default
 *     ${XDG_CONFIG_HOME:-~/.config}/enroot/.credentials, as enroot's):
 *     netrc `machine HOST login USER password PASS` (one entry may span
 *     lines; "quoted" words, # comments and macdef as curl reads them).
 *     enroot hands the password to its shell: here a password written
 *     $VAR or ${VAR} is that environment variable's value (an error naming
 *     the line when it is not set), and one that runs a command ($(...),
 *     `...`) is an error that says to use a variable.  A login written
 *     $VAR is the variable's value only where it is set, so nvcr.io's
 *     literal login $oauthtoken stays as written.
 *   - ctrun.ini's [registry] credentials (the caller passes them in first).
 * Host names match case-insensitively, and docker.io, index.docker.io and
 * registry-1.docker.io are one host.
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
	char pass[8192]; /* an ECR token, a GCR _json_key: more than 2 KiB */
	char source[PATH_MAX + 64]; /* "FILE (entry KEY)" or "FILE (machine HOST, line N)",
				     * for -v and for 401 messages */
};

/* Pure: the first entry of netrc `text` (NUL-terminated) for host: its
 * machine is host, or host without its :PORT (curl looks up the URL's host
 * name, enroot greps the registry without the port); a `default` entry is
 * not used.  curl --netrc-file looks up the host of the URL it fetches, so
 * enroot users keep Docker Hub's and nvcr.io's entries under the token
 * realm's host (auth.docker.io, authn.nvidia.com) as well as the registry's:
 * the caller asks for both.  envp resolves $VAR / ${VAR}; `file` names the
 * source.  1 found, 0 not, -1 malformed or unusable (names the line;
 * EXIT_USAGE). */
int creds_netrc(const char *text, const char *file, const char *host, char *const *envp,
		struct cred *c, struct err *e);

/* Pure: the entry of an auth.json / config.json body (len bytes, not
 * NUL-terminated; blank is empty) for host/repo (repo NULL or "": keys
 * naming the host alone) (docker.io also matches
 * "https://index.docker.io/v1/", "index.docker.io" and
 * "registry-1.docker.io").  1 found, 0 not, -1 malformed (EXIT_USAGE). */
int creds_authjson(const char *text, size_t len, const char *file, const char *host,
		   const char *repo, struct cred *c, struct err *e);

/* Looks through the files above in this order: $REGISTRY_AUTH_FILE,
 * $XDG_RUNTIME_DIR/containers/auth.json, ${XDG_CONFIG_HOME:-$HOME/.config}/containers/auth.json,
 * ${DOCKER_CONFIG:-$HOME/.docker}/config.json, enroot's .credentials (the
 * variables from envp); the first entry for host/repo wins.  `user`
 * (enroot's USER@; NULL or "" for any) restricts entries to that login, in
 * every file.  A file that does not exist is skipped.  Files are the user's
 * own, so links are followed, but only a regular file is read, at most
 * 1 MiB of it; one that others can read (mode & 044) gets one warning line
 * on stderr per process ("ctrun: warning: FILE is readable by others
 * (chmod 600 FILE)") unless quiet.  1 found, 0 none, -1 a file unreadable
 * or malformed (EXIT_USAGE). */
/* A credentials file whole (NUL-terminated), opened without blocking, only
 * when it is a regular file of at most 1 MiB (a FIFO would stall a pull,
 * a device stream forever); warns once when others can read it (unless
 * quiet).  NULL with errno ENOENT when there is none, else NULL with e set
 * (EXIT_USAGE).  The caller wipes and frees it. */
char *creds_read_file(const char *path, size_t *len, bool quiet, struct err *e);

int creds_find(const char *host, const char *repo, const char *user, char *const *envp, bool quiet,
	       struct cred *c, struct err *e);

/* For the two readers (creds.c's auth.json, netrc.c's .credentials):
 * creds_netrc, its entries restricted to login `user` when it is not "";
 * whether name (n bytes) names host (case-insensitive; Docker Hub's names
 * are one host); src (len bytes) copied into dst with its NUL, -1 when it
 * does not fit or holds a NUL. */
int creds_netrc_user(const char *text, const char *file, const char *host, const char *user,
		     char *const *envp, struct cred *c, struct err *e);
bool creds_same_host(const char *name, size_t n, const char *host);
int creds_copy_value(char *dst, size_t size, const char *src, size_t len);

#endif
