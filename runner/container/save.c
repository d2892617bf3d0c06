/* save.c - --save PATH.sqsh and `ctrun save NAME -o PATH.sqsh`: the image
 * plus the container's changes written as a new squashfs.
 *
 * OCI, crun, charliecloud: the run's upper layer is on disk (the named
 * container's, or RUNDIR/save for a --save run), so after the run ctrun
 * mounts the merged view read-only (lowerdir=UPPER:IMAGE: overlayfs itself
 * applies the whiteouts and opaque directories) in a private mount
 * namespace of a child (the holder's namespaces joined when the image is
 * mounted there; a user namespace mapping the caller to root when
 * rootless) and runs mksquashfs on it.  enroot (--name only): its
 * container is a plain directory, squashed as it is.
 *
 * Published by rename(2) of a temporary file in the target directory: a
 * reader never sees half a file, a failure (disk full) leaves nothing,
 * and of two runs saving to one path at once the last rename wins, each
 * file whole.  ctrun's own mount point (/.ctrun) is left out. */
#include "container.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "holder.h"
#include "userns.h"
#include "util.h"

int ctr_save_check(const char *path, struct err *e)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	struct stat st;

	if (*path == '\0' || (slash != NULL && slash[1] == '\0'))
		return err_set(e, EXIT_USAGE, "--save '%s': give a file name (PATH.sqsh)", path);
	if (slash == NULL)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else if (xsnprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path) < 0)
		return err_set(e, EXIT_USAGE, "--save %s: path too long", path);
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return err_set(e, EXIT_USAGE, "--save %s: directory %s does not exist (create it "
			       "first)", path, dir);
	if (access(dir, W_OK | X_OK) < 0)
		return err_set(e, EXIT_USAGE, "--save %s: directory %s is not writable by you "
			       "(choose another)", path, dir);
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return err_set(e, EXIT_USAGE, "--save %s: is a directory (give a file name)", path);
	return 0;
}

/* The child: namespaces, the merged view, then mksquashfs (never returns). */
static void squash_child(const struct ctr_setup *c, const char *tree, const char *upper,
			 const char *tmp)
{
	const struct ctr_spec *s = &c->spec;
	struct err e = { 0 };
	char merged[PATH_MAX], opts[3 * PATH_MAX];
	const char *src = tree;

	if (upper != NULL) {
		const char *lower = s->holder ? s->rootfs_ns : s->rootfs;

		if ((s->holder ? holder_join(s->holder_mnt, s->holder_user, &e) < 0 ||
					 unshare(CLONE_NEWNS) < 0
			       : s->rootless ? userns_enter(s->uid, s->gid, &e) < 0
					     : unshare(CLONE_NEWNS) < 0) ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
			fprintf(stderr, "ctrun: --save: namespaces: %s\n",
				e.msg[0] ? e.msg : strerror(errno));
			_exit(EXIT_CTRUN);
		}
		/* Paths ctrun made itself (no ',' or ':' in them: checked by
		 * the caller) and the image's lower directory. */
		if (xsnprintf(merged, sizeof(merged), "%s/save-merged", s->rundir) < 0 ||
		    xsnprintf(opts, sizeof(opts), "lowerdir=%s:%s%s", upper, lower,
			      s->rootless ? ",userxattr" : "") < 0 ||
		    (mkdir(merged, 0700) < 0 && errno != EEXIST) ||
		    (mount("overlay", merged, "overlay", MS_RDONLY | MS_NODEV | MS_NOSUID, opts) < 0 &&
		     (!s->rootless || (opts[strlen(opts) - strlen(",userxattr")] = '\0',
				       mount("overlay", merged, "overlay",
					     MS_RDONLY | MS_NODEV | MS_NOSUID, opts) < 0)))) {
			fprintf(stderr, "ctrun: --save: the merged view of %s and %s: %s\n", upper,
				lower, strerror(errno));
			_exit(EXIT_CTRUN);
		}
		src = merged;
	}
	/* gzip, mksquashfs's default: Singularity 3.x reads no zstd. */
	/* An enroot container: its /.lock is enroot's (runtime.sh lock_file);
	 * rootless, its files are the caller's, root inside: -all-root. */
	if (upper == NULL)
		execvp("mksquashfs", (char *[]){ "mksquashfs", (char *)src, (char *)tmp, "-noappend",
						 "-no-progress", "-quiet", "-e", ".ctrun", ".lock",
						 s->rootless ? "-all-root" : NULL, NULL });
	else
		execvp("mksquashfs", (char *[]){ "mksquashfs", (char *)src, (char *)tmp, "-noappend",
						 "-no-progress", "-quiet", "-e", ".ctrun", NULL });
	fprintf(stderr, "ctrun: --save: mksquashfs: %s (apt install squashfs-tools)\n",
		strerror(errno));
	_exit(EXIT_NOTFOUND);
}

int ctr_save(const struct ctr_setup *c, const char *path, bool quiet, struct err *e)
{
	const struct ctr_spec *s = &c->spec;
	char tmp[PATH_MAX], tree[PATH_MAX] = "", host[256] = "host";
	const char *upper = s->named_upper;
	int ws, fd;
	pid_t pid;

	if (ctr_save_check(path, e) < 0)
		return -1;
	if (ctr_root_need(s->rt) == ROOT_ENROOT) {
		/* A named enroot container: its directory is the whole tree. */
		if (xsnprintf(tree, sizeof(tree), "%s", s->rootfs != NULL ? s->rootfs : "") < 0 ||
		    tree[0] == '\0')
			return err_set(e, EXIT_CTRUN, "--save: no enroot container to save");
		upper = NULL;
	} else if (upper == NULL || s->rootfs == NULL) {
		return err_set(e, EXIT_CTRUN, "--save: no writable layer to save");
	} else if (strpbrk(upper, ",:\\") != NULL) {
		return err_set(e, EXIT_CTRUN, "--save: %s has a ',' ':' or '\\' that an overlay "
			       "mount cannot take: set [cache] dir or TMPDIR elsewhere", upper);
	}
	gethostname(host, sizeof(host) - 1);
	host[strcspn(host, ".")] = '\0';
	if (xsnprintf(tmp, sizeof(tmp), "%s.ctrun-tmp.%s.%ld", path, host, (long)getpid()) < 0)
		return err_set(e, EXIT_USAGE, "--save %s: path too long", path);
	unlink(tmp);
	if (!quiet)
		fprintf(stderr, "ctrun: saving the container to %s\n", path);
	pid = fork();
	if (pid < 0)
		return err_sys(e, EXIT_CTRUN, "--save: fork");
	if (pid == 0)
		squash_child(c, tree, upper, tmp);
	while (waitpid(pid, &ws, 0) < 0)
		if (errno != EINTR) {
			unlink(tmp);
			return err_sys(e, EXIT_CTRUN, "--save: waiting for mksquashfs");
		}
	if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
		unlink(tmp);
		return err_set(e, EXIT_CTRUN, "--save %s: mksquashfs failed (status %d; a full "
			       "disk?): nothing was written", path,
			       WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws));
	}
	fd = open(tmp, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) < 0 || chmod(tmp, 0644) < 0 || rename(tmp, path) < 0) {
		err_sys(e, EXIT_CTRUN, "--save %s", path);
		if (fd >= 0)
			close(fd);
		unlink(tmp);
		return -1;
	}
	close(fd);
	return 0;
}
