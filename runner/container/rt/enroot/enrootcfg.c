/* enrootcfg.c - --runtime auto's question to enroot's configuration on this
 * node (enroot.h enroot_adds, the driver's adds): does enroot's start of an image give a container
 * anything that ctrun's own start does not?  Reads what enroot reads at each
 * start (NVIDIA/enroot runtime.sh and its `enroot` script): its environment,
 * enroot.conf and enroot.conf.d/NAME.conf (the path compiled into the
 * script), and hooks.d, mounts.d and environ.d in its system directory
 * ($ENROOT_SYSCONF_PATH, else the script's default) and in the user's
 * (core/enrootdir.h).  rt/enroot/enrootstock.h judges the bytes.  Whatever
 * cannot be read or told apart counts as adding: enroot is then taken, as
 * before, and nothing of the site's is skipped. */
#include "enroot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drivers.h"
#include "enrootdir.h"
#include "enrootstock.h"
#include "util.h"

/* What enroot's configuration files hold is small; a bigger file is not
 * one of its own. */
#define CFG_MAX (1u << 20)

/* A regular file's bytes (NUL-terminated, *len), opened without blocking
 * (a FIFO planted there never stalls the run) and bounded; NULL with errno
 * (EINVAL: not a regular file, EFBIG: too big). */
static char *read_cfg(const char *path, size_t *len)
{
	struct stat st;
	char *buf = NULL;
	size_t n = 0;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC), saved;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0)
		goto fail;
	if (!S_ISREG(st.st_mode) || st.st_size > (off_t)CFG_MAX) {
		errno = S_ISREG(st.st_mode) ? EFBIG : EINVAL;
		goto fail;
	}
	buf = read_fd_max(fd, CFG_MAX, &n);
	if (buf == NULL)
		goto fail;
	close(fd);
	*len = n;
	return buf;
fail:
	saved = errno;
	free(buf);
	close(fd);
	errno = saved;
	return NULL;
}

/* An enroot.conf: whether a setting of it changes a container. */
static bool conf_adds(const char *path, char *why, size_t size)
{
	char key[128];
	size_t len;
	char *text = read_cfg(path, &len);
	bool adds;

	if (text == NULL) {
		if (errno == ENOENT)
			return false;
		snprintf(why, size, "cannot read %s (%s): enroot's settings are unknown", path,
			 strerror(errno));
		return true;
	}
	adds = enroot_conf_adds(text, key, sizeof(key));
	if (adds)
		snprintf(why, size, "%s sets %s, which only enroot applies", path, key);
	free(text);
	return adds;
}

/* enroot.conf.d/NAME.conf, read after enroot.conf (config::init). */
static bool dropins_add(const char *conf, char *why, size_t size)
{
	char dir[PATH_MAX], path[PATH_MAX];
	struct dirent *de;
	bool adds = false;
	DIR *d;

	if (xsnprintf(dir, sizeof(dir), "%s.d", conf) < 0 || (d = opendir(dir)) == NULL)
		return false;
	while (!adds && (de = readdir(d)) != NULL) {
		size_t n = strlen(de->d_name);

		if (n > 5 && strcmp(de->d_name + n - 5, ".conf") == 0 &&
		    xsnprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= 0)
			adds = conf_adds(path, why, size);
	}
	closedir(d);
	return adds;
}

/* One file of hooks.d, mounts.d or environ.d that enroot reads. */
static bool file_adds(const char *sub, const char *path, const char *name, char *why,
		      size_t size)
{
	size_t len;
	char *text;
	bool adds;

	/* A hook runs only when executable (common::runparts). */
	if (strcmp(sub, "hooks.d") == 0 && access(path, X_OK) < 0 && errno != ELOOP)
		return false;
	text = read_cfg(path, &len);
	if (text == NULL) {
		snprintf(why, size, "cannot read %s (%s): what enroot does with it is unknown", path,
			 strerror(errno));
		return true;
	}
	adds = !enroot_stock_file(sub, name, text, len) &&
	       !(strcmp(sub, "hooks.d") == 0 && strlen(text) == len &&
		 enroot_hookfile.is_ours(text));
	if (adds)
		snprintf(why, size, "%s is not one of enroot's own files (it is the site's or the "
			 "user's), and only enroot applies it", path);
	free(text);
	return adds;
}

/* A configuration directory's hooks.d, mounts.d and environ.d. */
static bool dir_adds(const char *base, char *why, size_t size)
{
	static const char *const subs[] = { "hooks.d", "mounts.d", "environ.d", NULL };
	char dir[PATH_MAX], path[PATH_MAX];

	for (const char *const *sub = subs; *sub != NULL; sub++) {
		struct dirent *de;
		bool adds = false;
		DIR *d;

		if (xsnprintf(dir, sizeof(dir), "%s/%s", base, *sub) < 0) {
			snprintf(why, size, "%s: path too long", base);
			return true;
		}
		d = opendir(dir);
		if (d == NULL) {
			if (errno == ENOENT || errno == ENOTDIR)
				continue;
			snprintf(why, size, "cannot read %s (%s)", dir, strerror(errno));
			return true;
		}
		while (!adds && (de = readdir(d)) != NULL)
			if (enroot_cfg_read(*sub, de->d_name))
				adds = xsnprintf(path, sizeof(path), "%s/%s", dir, de->d_name) < 0 ||
				       file_adds(*sub, path, de->d_name, why, size);
		closedir(d);
		if (adds)
			return true;
	}
	return false;
}

bool enroot_adds(const struct ctr_driver *d, const char *bin, char *const *envp, char *why,
		 size_t size)
{
	char conf[PATH_MAX], sysconf[PATH_MAX], user[PATH_MAX], key[128];
	const char *env_sysconf = envp_get(envp, "ENROOT_SYSCONF_PATH");
	size_t len;
	char *script;
	int rc;

	(void)d;
	if (enroot_env_adds(envp, key, sizeof(key))) {
		snprintf(why, size, "%s is set, which only enroot applies", key);
		return true;
	}
	script = read_cfg(bin, &len);
	rc = script != NULL ? enroot_script_paths(script, conf, sizeof(conf), sysconf,
						  sizeof(sysconf))
			    : -1;
	free(script);
	if (rc < 0) {
		snprintf(why, size, "%s is not an enroot script ctrun can read its configuration's "
			 "place from", bin);
		return true;
	}
	/* enroot's own rule: a set, non-empty variable wins (config::export). */
	if (env_sysconf != NULL && env_sysconf[0] != '\0' &&
	    xsnprintf(sysconf, sizeof(sysconf), "%s", env_sysconf) < 0) {
		snprintf(why, size, "ENROOT_SYSCONF_PATH too long");
		return true;
	}
	if (conf_adds(conf, why, size) || dropins_add(conf, why, size) ||
	    dir_adds(sysconf, why, size))
		return true;
	if (enroot_config_path(envp, user, sizeof(user)) < 0) {
		/* No HOME: enroot takes the passwd entry's home. */
		struct passwd *pw = errno == ENOENT ? getpwuid(geteuid()) : NULL;

		if (pw == NULL ||
		    xsnprintf(user, sizeof(user), "%s/.config/enroot", pw->pw_dir) < 0) {
			snprintf(why, size, "the user's enroot directory is unknown");
			return true;
		}
	}
	return dir_adds(user, why, size);
}
