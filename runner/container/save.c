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
 * file whole.  ctrun's own mount point (/.ctrun) is left out.
 *
 * The target directory may be another user's to write (/tmp): the
 * temporary file is made by ctrun with O_EXCL and a random name
 * (mkostemp: never a link or a file someone planted), and mksquashfs
 * writes it through /proc/self/fd/N, never by its name, so nothing
 * that appears under that name in between is opened; rename(2) replaces
 * whatever is at PATH (a link there is replaced, not followed). */
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
#include "squash/sqimage.h"
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
			 int outfd, const struct sqimage_opts *comp)
{
	const char *argv[24];
	char level[16];
	size_t n = 0;
	const struct ctr_spec *s = &c->spec;
	struct err e = { 0 };
	char merged[PATH_MAX], opts[3 * PATH_MAX], out[64];
	const char *src = tree;

	/* mksquashfs opens the file ctrun made, by descriptor. */
	if (fcntl(outfd, F_SETFD, 0) < 0 ||
	    xsnprintf(out, sizeof(out), "/proc/self/fd/%d", outfd) < 0) {
		fprintf(stderr, "ctrun: --save: %s\n", strerror(errno));
		_exit(EXIT_CTRUN);
	}

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
	/* An enroot container: its /.lock is enroot's (runtime.sh lock_file);
	 * rootless, its files are the caller's, root inside: -all-root.  The
	 * compressor: [cache] compression (docs/images.md, "Compression"). */
	argv[n++] = "mksquashfs";
	argv[n++] = src;
	argv[n++] = out;
	argv[n++] = "-noappend";
	argv[n++] = "-no-progress";
	argv[n++] = "-quiet";
	n += sqimage_comp_args(comp, level, sizeof(level), argv + n);
	argv[n++] = "-e";
	argv[n++] = ".ctrun";
	if (upper == NULL) {
		argv[n++] = ".lock";
		if (s->rootless)
			argv[n++] = "-all-root";
	}
	argv[n] = NULL;
	execvp("mksquashfs", (char **)argv);
	fprintf(stderr, "ctrun: --save: mksquashfs: %s (apt install squashfs-tools)\n",
		strerror(errno));
	_exit(EXIT_NOTFOUND);
}

int ctr_save(const struct ctr_setup *c, const char *path, const char *compression, bool quiet,
	     struct err *e)
{
	const struct ctr_spec *s = &c->spec;
	struct sqimage_opts comp;
	char tmp[PATH_MAX], tree[PATH_MAX] = "";
	const char *upper = s->named_upper;
	int ws, fd;
	pid_t pid;

	if (ctr_save_check(path, e) < 0 ||
	    sqimage_comp_parse(compression != NULL ? compression : SQ_COMP_SAVE,
			       "[cache] compression", &comp, e) < 0)
		return -1;
	if (s->kept_whole) {
		/* A driver's own container (enroot's): the whole tree. */
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
	if (xsnprintf(tmp, sizeof(tmp), "%s.ctrun-tmp.XXXXXX", path) < 0)
		return err_set(e, EXIT_USAGE, "--save %s: path too long", path);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return err_sys(e, EXIT_CTRUN, "--save %s: a temporary file beside it", path);
	if (!quiet)
		fprintf(stderr, "ctrun: saving the container to %s\n", path);
	pid = fork();
	if (pid < 0) {
		err_sys(e, EXIT_CTRUN, "--save: fork");
		goto fail;
	}
	if (pid == 0)
		squash_child(c, tree, upper, fd, &comp);
	while (waitpid(pid, &ws, 0) < 0)
		if (errno != EINTR) {
			err_sys(e, EXIT_CTRUN, "--save: waiting for mksquashfs");
			goto fail;
		}
	if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
		err_set(e, EXIT_CTRUN, "--save %s: mksquashfs failed (status %d; a full disk?): "
			"nothing was written", path,
			WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws));
		goto fail;
	}
	/* Whole on disk before it has the name; readable by all, as an image
	 * file is (mkostemp made it 0600). */
	if (fsync(fd) < 0 || fchmod(fd, 0644) < 0 || rename(tmp, path) < 0) {
		err_sys(e, EXIT_CTRUN, "--save %s", path);
		goto fail;
	}
	close(fd);
	return 0;
fail:
	unlink(tmp);
	close(fd);
	return -1;
}
