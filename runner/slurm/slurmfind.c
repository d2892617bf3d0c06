/* slurmfind.c - the libslurm of the Slurm in use (see slurmfind.h). */
#include "slurmfind.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "strv.h"
#include "util.h"

bool slurmlib_newest_in(const char *dir, char *out, size_t size)
{
	static const char stem[] = "libslurm.so.";
	DIR *d = opendir(dir);
	struct dirent *de;
	long best = -1;

	if (d == NULL)
		return false;
	while ((de = readdir(d)) != NULL) {
		const char *n = de->d_name;
		char path[PATH_MAX];
		struct stat st;
		long v;

		/* libslurm.so.45 (the soname link or file), not .45.0.0. */
		if (strncmp(n, stem, sizeof(stem) - 1) != 0 ||
		    parse_long(n + sizeof(stem) - 1, 0, 9999, &v) < 0 || v <= best ||
		    xsnprintf(path, sizeof(path), "%s/%s", dir, n) < 0 || stat(path, &st) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		if (xsnprintf(out, size, "%s", path) >= 0)
			best = v;
	}
	closedir(d);
	return best >= 0;
}

/* The newest libslurm of the install under prefix; false if none. */
static bool in_prefix(const char *prefix, char *out, size_t size)
{
	static const char *const libs[] = { "lib64", "lib" };
	char dir[PATH_MAX];
	struct dirent *de;
	DIR *d;

	for (size_t i = 0; i < sizeof(libs) / sizeof(*libs); i++)
		if (xsnprintf(dir, sizeof(dir), "%s/%s", prefix, libs[i]) >= 0 &&
		    slurmlib_newest_in(dir, out, size))
			return true;
	/* Debian's multiarch directory: /usr/lib/x86_64-linux-gnu. */
	if (xsnprintf(dir, sizeof(dir), "%s/lib", prefix) < 0 || (d = opendir(dir)) == NULL)
		return false;
	while ((de = readdir(d)) != NULL) {
		char sub[PATH_MAX];

		if (strstr(de->d_name, "-linux-") != NULL &&
		    xsnprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name) >= 0 &&
		    slurmlib_newest_in(sub, out, size)) {
			closedir(d);
			return true;
		}
	}
	closedir(d);
	return false;
}

/* PREFIX of PREFIX/<dir>/<file>: the path without its last two names. */
static bool prefix_of(const char *path, char *out, size_t size)
{
	char *slash;

	if (xsnprintf(out, size, "%s", path) < 0)
		return false;
	for (int i = 0; i < 2; i++) {
		slash = strrchr(out, '/');
		if (slash == NULL)
			return false;
		*slash = '\0';
	}
	if (out[0] == '\0')
		snprintf(out, size, "/");
	return true;
}

/* The first executable `name` in PATH, resolved through symlinks. */
static bool which(char *const *envp, const char *name, char *out, size_t size)
{
	const char *path = envp_get(envp, "PATH");

	if (path == NULL)
		return false;
	for (const char *p = path; *p != '\0';) {
		size_t len = strcspn(p, ":");
		char cand[PATH_MAX];

		if (len > 0 && xsnprintf(cand, sizeof(cand), "%.*s/%s", (int)len, p, name) >= 0 &&
		    access(cand, X_OK) == 0 && realpath(cand, out) != NULL && strlen(out) < size)
			return true;
		p += len + (p[len] == ':');
	}
	return false;
}

static void look(char *const *envp, struct slurmlib_choice *c)
{
	static const char *const tools[] = { "srun", "scontrol", "sinfo" };
	const char *env = envp_get(envp, "CTRUN_LIBSLURM"), *conf = envp_get(envp, "SLURM_CONF");
	char tool[PATH_MAX], prefix[PATH_MAX];

	memset(c, 0, sizeof(*c));
	if (env != NULL && *env != '\0') {
		snprintf(c->path, sizeof(c->path), "%s", env);
		c->only = true;
		snprintf(c->why, sizeof(c->why), "CTRUN_LIBSLURM");
		return;
	}
	for (size_t i = 0; i < sizeof(tools) / sizeof(*tools); i++)
		if (which(envp, tools[i], tool, sizeof(tool)) && prefix_of(tool, prefix, sizeof(prefix)) &&
		    in_prefix(prefix, c->path, sizeof(c->path))) {
			snprintf(c->why, sizeof(c->why), "the Slurm of %s on PATH (%s)", tools[i], tool);
			return;
		}
	if (conf != NULL && conf[0] == '/' && prefix_of(conf, prefix, sizeof(prefix)) &&
	    in_prefix(prefix, c->path, sizeof(c->path))) {
		snprintf(c->why, sizeof(c->why), "the Slurm of SLURM_CONF (%s)", conf);
		return;
	}
	c->path[0] = '\0';
	snprintf(c->why, sizeof(c->why), "no Slurm install found from PATH or SLURM_CONF: the "
		 "dynamic linker's newest libslurm.so.N");
}

/* The last look's answer and the variables it was made from: a ctrun start
 * under Slurm asks several times (slurmlib.c), and a look reads /usr/lib
 * and its multiarch directory, a few ms each on a loaded node. */
static struct {
	bool valid;
	char *key[3];
	struct slurmlib_choice c;
} last;

static bool same(const char *a, const char *b)
{
	return a == NULL ? b == NULL : b != NULL && strcmp(a, b) == 0;
}

void slurmlib_find(char *const *envp, struct slurmlib_choice *c)
{
	static const char *const names[3] = { "CTRUN_LIBSLURM", "PATH", "SLURM_CONF" };
	const char *v[3];
	bool hit = last.valid;

	for (int i = 0; i < 3; i++) {
		v[i] = envp_get(envp, names[i]);
		hit = hit && same(v[i], last.key[i]);
	}
	if (hit) {
		*c = last.c;
		return;
	}
	look(envp, c);
	last.valid = true;
	for (int i = 0; i < 3; i++) {
		free(last.key[i]);
		last.key[i] = v[i] != NULL ? strdup(v[i]) : NULL;
		last.valid = last.valid && (v[i] == NULL || last.key[i] != NULL);
	}
	last.c = *c;
}
