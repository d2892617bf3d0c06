/* envctl.c - --env KEY, --env-file and --clean-env (see envctl.h). */
#include "envctl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

static const char *const contract[] = {
	"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK",
	"GROUP_WORLD_SIZE", "ROLE_NAME", "ROLE_RANK", "ROLE_WORLD_SIZE", "NODE_RANK", "NNODES",
	"MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS",
	"TORCHELASTIC_RUN_ID", NULL
};

bool envctl_contract(const char *key, size_t len)
{
	for (size_t i = 0; contract[i] != NULL; i++)
		if (strlen(contract[i]) == len && memcmp(contract[i], key, len) == 0)
			return true;
	return false;
}

int envctl_check(const char *entry, const char *where, struct err *e)
{
	const char *eq = strchr(entry, '=');

	if (entry[0] == '\0' || entry[0] == '=')
		return err_set(e, EXIT_USAGE, "%s: '%s' has no variable name (give KEY=VALUE, or KEY "
			       "for the host's value)", where, entry);
	if (eq == NULL && envctl_contract(entry, strlen(entry)))
		return err_set(e, EXIT_USAGE, "%s: %s is set by ctrun for each worker (the torchrun "
			       "contract), the host's value cannot be passed on; give %s=VALUE to set "
			       "it for every worker", where, entry, entry);
	return 0;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r';
}

int envctl_file_parse(const char *text, size_t len, const char *name, struct strv *out,
		      struct err *e)
{
	size_t off = 0;
	long lineno = 0;

	/* A UTF-8 byte order mark at the start is not part of the first name. */
	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
		off = 3;
	while (off < len) {
		const char *line = text + off, *nl = memchr(line, '\n', len - off);
		size_t n = nl != NULL ? (size_t)(nl - line) : len - off, k;
		char where[64];

		off += n + (nl != NULL);
		lineno++;
		snprintf(where, sizeof(where), "%ld", lineno);
		if (n > 0 && line[n - 1] == '\r') /* as Go's line scanner, which docker uses */
			n--;
		if (memchr(line, '\0', n) != NULL)
			return err_set(e, EXIT_USAGE, "--env-file %s:%s: a NUL byte (an environment "
				       "variable cannot hold one): remove it", name, where);
		while (n > 0 && is_space(*line)) {
			line++;
			n--;
		}
		if (n == 0 || line[0] == '#')
			continue;
		for (k = 0; k < n && line[k] != '='; k++)
			if (is_space(line[k]))
				return err_set(e, EXIT_USAGE, "--env-file %s:%s: the name '%.*s' contains "
					       "white space: write KEY=VALUE, KEY alone, or # for a "
					       "comment", name, where, (int)(n < 64 ? n : 64), line);
		if (k == 0)
			return err_set(e, EXIT_USAGE, "--env-file %s:%s: no variable name before '=': "
				       "write KEY=VALUE, KEY alone, or # for a comment", name, where);
		if (k == n && envctl_contract(line, k))
			return err_set(e, EXIT_USAGE, "--env-file %s:%s: %.*s is set by ctrun for each "
				       "worker (the torchrun contract); write %.*s=VALUE to set it for "
				       "every worker", name, where, (int)k, line, (int)k, line);
		if (strv_pushn(out, line, n) < 0)
			return err_sys(e, EXIT_CTRUN, "--env-file %s", name);
	}
	return 0;
}

int envctl_file_load(const char *path, struct strv *out, struct err *e)
{
	struct stat st;
	char *buf = NULL;
	size_t len = 0;
	int fd, rv = -1;

	/* O_NONBLOCK: a FIFO put in its place must not hang ctrun. */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return err_sys(e, EXIT_USAGE, "--env-file %s", path);
	if (fstat(fd, &st) < 0) {
		err_sys(e, EXIT_USAGE, "--env-file %s", path);
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		err_set(e, EXIT_USAGE, "--env-file %s: not a regular file: give a file of KEY=VALUE "
			"lines", path);
		goto out;
	}
	buf = read_fd_max(fd, ENVFILE_MAX + 1, &len);
	if (buf == NULL) {
		err_sys(e, errno == ENOMEM ? EXIT_CTRUN : EXIT_USAGE, "--env-file %s", path);
		goto out;
	}
	if (len > ENVFILE_MAX) {
		err_set(e, EXIT_USAGE, "--env-file %s: larger than %u bytes: split it or trim it",
			path, ENVFILE_MAX);
		goto out;
	}
	rv = envctl_file_parse(buf, len, path, out, e);
out:
	free(buf);
	close(fd);
	return rv;
}

bool envctl_clean_keep(const char *kv)
{
	/* CTRUN_RDZV_KEY: ctrun's own, for its check and bench workers. */
	static const char *const keep[] = { "TERM=", "HOME=", "USER=", "LOGNAME=",
					    "CTRUN_RDZV_KEY=", NULL };

	if (strncmp(kv, "SLURM_", 6) == 0)
		return strchr(kv, '=') != NULL;
	for (size_t i = 0; keep[i] != NULL; i++)
		if (strncmp(kv, keep[i], strlen(keep[i])) == 0)
			return true;
	return false;
}

int envctl_host_values(char *const *entries, char *const *host, struct strv *out)
{
	for (char *const *p = entries; p != NULL && *p != NULL; p++) {
		const char *v;

		if (strchr(*p, '=') != NULL)
			continue;
		v = envp_get(host, *p);
		if (v != NULL && strv_pushf(out, "%s=%s", *p, v) < 0)
			return -1;
	}
	return 0;
}
