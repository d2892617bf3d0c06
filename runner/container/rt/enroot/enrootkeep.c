/* enrootkeep.c - enroot's containers made by `enroot create` (enroot.h),
 * and its keep phase: --name (enroot's own container, made once, then
 * `enroot start --rw`, as pyxis's --container-name) kept inside the named
 * container's directory (ENROOT_DATA_PATH=containers/NAME, container
 * "rootfs"), so listing, removing and the lock are the same for every
 * runtime (images/cache/named.h); a --save run without --name gets such a
 * container of its own in the run directory. */
#include "enroot.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rootpath.h"
#include "util.h"

/* The container inside a named container's directory. */
#define NAMED_ENROOT "rootfs"

/* cache_create_once_e's callback: `enroot create` under the temporary name,
 * which cache_create_once_e then renames into place (enroot's create is not
 * atomic, and `create -f` deletes recursively). */
int enroot_create(const char *tmp, void *arg, struct err *e)
{
	struct enroot_create *c = arg;
	struct strv argv = { 0 }, env = { 0 };
	const char *name = strrchr(tmp, '/');
	int ws, rv = -1;
	pid_t pid;

	if (rt_enroot_create_argv(c->bin, c->image, name != NULL ? name + 1 : tmp, &argv, e) < 0)
		goto out;
	if (strv_extend(&env, c->envp) < 0 || strv_setenv(&env, "ENROOT_DATA_PATH", c->data, 1) < 0) {
		err_sys(e, EXIT_CTRUN, "enroot create");
		goto out;
	}
	pid = fork();
	if (pid < 0) {
		err_sys(e, EXIT_CTRUN, "fork");
		goto out;
	}
	if (pid == 0) {
		/* Its notes ("Extracting squashfs filesystem...") are not the
		 * job's output. */
		dup2(STDERR_FILENO, STDOUT_FILENO);
		execvpe(argv.v[0], argv.v, env.v);
		_exit(EXIT_NOTFOUND);
	}
	while (waitpid(pid, &ws, 0) < 0)
		if (errno != EINTR) {
			err_sys(e, EXIT_CTRUN, "enroot create");
			goto out;
		}
	if (!WIFEXITED(ws) || WEXITSTATUS(ws) != 0) {
		err_set(e, EXIT_CTRUN, "enroot create of %s failed (status %d)", c->image,
			WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws));
		goto out;
	}
	rv = 0;
out:
	strv_free(&argv);
	strv_free(&env);
	return rv;
}

int enroot_create_named(const char *bin, const char *image, const char *data,
			    const char *name, char *const *envp, struct err *e)
{
	struct enroot_create ec = { bin, image, data, envp };
	char tmp[PATH_MAX], final[PATH_MAX];

	if (xsnprintf(tmp, sizeof(tmp), "%s/%s.ctrun-tmp.%ld", data, name, (long)getpid()) < 0 ||
	    xsnprintf(final, sizeof(final), "%s/%s", data, name) < 0)
		return err_set(e, EXIT_CTRUN, "enroot data %s: path too long", data);
	(void)remove_tree(tmp);
	if (enroot_create(tmp, &ec, e) < 0 || rename(tmp, final) < 0) {
		if (e->code == 0)
			err_sys(e, EXIT_CTRUN, "enroot create: %s", final);
		(void)remove_tree(tmp);
		return -1;
	}
	return 0;
}


/* enroot-mount's x-create makes a missing mount point with mode 0
 * (mkdir(path, 0): bin/enroot-mount.c create_file).  In a kept container
 * the next run's user then cannot look into /.ctrun for /.ctrun/agent:
 * give that directory of ours its search bits back. */
static int unzero_ctrun(const char *rootfs, struct err *e)
{
	struct stat st;
	int fd = open(rootfs, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return err_sys(e, EXIT_CTRUN, "%s", rootfs);
	if (fstatat(fd, ".ctrun", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
	    st.st_uid == geteuid() && (st.st_mode & 0777) == 0 &&
	    fchmodat(fd, ".ctrun", 0755, 0) < 0) {
		close(fd);
		return err_sys(e, EXIT_CTRUN, "%s/.ctrun", rootfs);
	}
	close(fd);
	return 0;
}

/* Its container "rootfs" in dir (--dry-run: named, not made). */
static int kept(struct ctr_spec *s, const struct ctr_ask *a, const char *dir, struct err *e)
{
	struct enroot_own *own = s->own;

	if (s->kind != IMAGE_SQUASHFS)
		return err_set(e, EXIT_USAGE, "--name: enroot keeps containers of a squashfs "
			       "only, and %s is not one (use --runtime oci)", s->image);
	if (xsnprintf(own->path, sizeof(own->path), "%s/%s", dir, NAMED_ENROOT) < 0 ||
	    xsnprintf(own->data, sizeof(own->data), "%s", dir) < 0 ||
	    xsnprintf(own->name, sizeof(own->name), "%s", NAMED_ENROOT) < 0)
		return err_set(e, EXIT_CTRUN, "named container %s: path too long", dir);
	s->rootfs_real = access(own->path, F_OK) == 0;
	if (!a->dry_run) {
		if (!s->rootfs_real &&
		    enroot_create_named(s->bin, s->image, dir, NAMED_ENROOT, a->envp, e) < 0)
			return -1;
		if (unzero_ctrun(own->path, e) < 0)
			return -1;
		s->rootfs_real = true;
	}
	s->rootfs = s->rootfs_real ? own->path : NULL;
	/* --save squashes it whole: it is the container, not a layer. */
	s->kept_whole = true;
	return 0;
}

int enroot_keep(struct ctr_spec *s, const struct ctr_ask *a, const struct ctr_keep *k,
		struct err *e)
{
	struct enroot_own *own = s->own;

	if (k->dir != NULL)
		return kept(s, a, k->dir, e);
	/* --save without --name, in the task that saves: enroot's own
	 * writable start keeps its layer in a tmpfs of its namespace, gone when
	 * the container ends, so the run gets an enroot container of its own,
	 * made as a named one is (`enroot create`, then `enroot start --rw`,
	 * as pyxis's --container-save), in the run directory (ENROOT_DATA_PATH
	 * RUNDIR/save): saved after the run, removed with the run directory
	 * (after a kill -9 by the next ctrun of the node, gc_rundirs). */
	if (!a->saves)
		return 0;
	if (xsnprintf(own->save_dir, sizeof(own->save_dir), "%s/save", s->rundir) < 0)
		return err_set(e, EXIT_CTRUN, "run directory path too long");
	if (!a->dry_run) {
		if (!*k->rundir_made && mkdir(s->rundir, 0700) < 0)
			return err_sys(e, EXIT_CTRUN, "run directory %s", s->rundir);
		*k->rundir_made = true;
		if (mkdir(own->save_dir, 0700) < 0)
			return err_sys(e, EXIT_CTRUN, "--save: %s", own->save_dir);
	}
	return kept(s, a, own->save_dir, e);
}

bool enroot_kept(const char *dir)
{
	char path[PATH_MAX];

	return xsnprintf(path, sizeof(path), "%s/%s", dir, NAMED_ENROOT) >= 0 &&
	       access(path, F_OK) == 0;
}
