/* ident.c - who the workers are inside the container: the caller (uid,
 * gid, name, $HOME, the home directory bound at the same path) unless
 * --root, as enroot and apptainer give it (docs/containers.md "Identity
 * and home", docs/decisions/environment-and-identity.md).
 *
 * The runtimes differ in what they do themselves (drivers.h ctrun_home,
 * ctrun_passwd): enroot's hooks and apptainer write the user into the
 * container's passwd and bind the home; ch-run writes passwd but binds no
 * home at the same path; runc and crun do neither.  What they do not,
 * ctrun does here: a bind of the home, and /etc/passwd and /etc/group made
 * from the image's (read through the in-root resolver, bounded) and bound
 * read-only over the image's. */
#include "container.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agentspec.h"
#include "drivers.h"
#include "idfiles.h"
#include "inroot.h"
#include "util.h"

#define ROOT_HOME "/root"

bool ctr_ident_nests(const struct ctr_spec *s)
{
	return s->rt != NULL && s->rt->ctrun_passwd && s->rootless && !s->as_root;
}

/* --root in a user namespace that maps one id (rootless OCI and crun;
 * ch-run always): apt cannot drop to its sandbox user _apt (unmapped, and
 * setgroups is denied), so `apt-get install` fails.  As enroot's
 * 10-aptfix.sh does for --root, apt is told to stay root: a one-line
 * apt.conf.d file, bound read-only from the run directory, in a Debian or
 * Ubuntu image (it has /etc/debian_version and /etc/apt/apt.conf.d). */
#define APT_ROOT_FILE "apt-root.conf"
#define APT_ROOT_DST "/etc/apt/apt.conf.d/00ctrun-root"
#define APT_ROOT_TEXT "APT::Sandbox::User \"root\";\n"

static bool apt_root(const struct ctr_spec *s)
{
	struct stat st;
	int rootfd, fd;
	bool debian = false;

	if (!s->as_root || s->rt == NULL || !s->rt->ctrun_home || s->rootfs == NULL ||
	    (!s->rootless && s->rt->ctrun_passwd))
		return false;
	rootfd = open(s->rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return false;
	fd = inroot_open(rootfd, "/etc/debian_version", O_PATH, 0, INROOT_CHROOT, NULL);
	if (fd >= 0) {
		debian = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
		close(fd);
	}
	fd = debian ? inroot_open(rootfd, "/etc/apt/apt.conf.d", O_PATH | O_DIRECTORY, 0,
				  INROOT_CHROOT, NULL)
		    : -1;
	if (fd >= 0)
		close(fd);
	close(rootfd);
	return fd >= 0;
}

int ctr_ident_init(struct ctr_setup *c, struct err *e)
{
	struct ctr_spec *s = &c->spec;
	const char *home = NULL;
	struct passwd *pw;

	errno = 0;
	pw = getpwuid(s->uid);
	if (pw != NULL && pw->pw_name[0] != '\0') {
		if (xsnprintf(c->user, sizeof(c->user), "%s", pw->pw_name) < 0)
			return err_set(e, EXIT_CTRUN, "your user name is too long");
	} else if (xsnprintf(c->user, sizeof(c->user), "%u", (unsigned)s->uid) < 0) {
		return err_set(e, EXIT_CTRUN, "user name");
	}
	/* A home that is not absolute (or none) is "/", as login(1) does. */
	if (xsnprintf(c->user_home, sizeof(c->user_home), "%s",
		      pw != NULL && pw->pw_dir[0] == '/' ? pw->pw_dir : "/") < 0)
		return err_set(e, EXIT_CTRUN, "your home directory's path is too long");
	home = c->user_home;
	s->user = c->user;
	s->user_home = c->user_home;
	/* The plugin's containers (ask.home_env): the directory $HOME names,
	 * as enroot's 10-home.sh binds it for pyxis (the caller binds only
	 * what they can reach anyway); the passwd entry in the container
	 * keeps the database's. */
	for (char *const *p = c->ask.envp; c->ask.home_env && p != NULL && *p != NULL; p++)
		if (strncmp(*p, "HOME=/", 6) == 0)
			home = *p + 5;
	if (xsnprintf(c->home, sizeof(c->home), "%s", home) < 0)
		return err_set(e, EXIT_CTRUN, "$HOME is too long");
	s->home = c->home;
	return 0;
}

/* Whether the overlay can hold a mount point at dst: it is in the image
 * already, or the nearest directory of the image above it is the caller's
 * (rootless, a directory of another user cannot get a new entry: a
 * root-made directory image, a root-made shared cache). */
static bool mount_point_possible(const struct ctr_spec *s, const char *dst)
{
	char path[PATH_MAX];
	int rootfd, fd = -1;
	struct stat st;
	bool ok = true;

	if (!s->rootless || s->rootfs == NULL || xsnprintf(path, sizeof(path), "%s", dst) < 0)
		return true;
	rootfd = open(s->rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return true;
	for (bool first = true;; first = false) {
		char *slash;

		fd = inroot_open(rootfd, path[0] != '\0' ? path : "/", O_PATH, 0, INROOT_CHROOT, NULL);
		if (fd >= 0) {
			ok = first || (fstat(fd, &st) == 0 && (st.st_uid == s->uid ||
								(st.st_mode & S_IWOTH) != 0));
			break;
		}
		slash = strrchr(path, '/');
		if (slash == NULL)
			break;
		*slash = '\0';
	}
	if (fd >= 0)
		close(fd);
	close(rootfd);
	return ok;
}

int ctr_ident_mounts(struct ctr_setup *c, bool agent, struct err *e)
{
	struct ctr_spec *s = &c->spec;
	struct ctr_mounts *ms = &s->mounts;
	struct stat st;
	char path[PATH_MAX];

	/* A runtime that binds a passwd and group of its own (ch-run) needs
	 * mount points for them, which the overlay may not be able to hold. */
	s->no_idfile_points = !mount_point_possible(s, "/etc/passwd") ||
			      !mount_point_possible(s, "/etc/group");
	/* The home at its own path (with --root at /root, as enroot --root and
	 * apptainer --fakeroot bind it); one that is not a directory here is
	 * not bound (HOME still names it). */
	if (s->rt->ctrun_home && !s->no_home && strcmp(s->home, "/") != 0 &&
	    stat(s->home, &st) == 0 && S_ISDIR(st.st_mode)) {
		const char *dst = s->as_root ? ROOT_HOME : s->home;

		if (!mount_point_possible(s, dst)) {
			/* Not worth failing the run for: said, and HOME still names it. */
			if (!s->quiet)
				fprintf(stderr, "ctrun: your home %s is not bound: the image has no %s and "
					"its parent directory is another user's, so no mount point can "
					"be made there without root (--no-home: not tried; --mount it "
					"elsewhere if you need it)\n", s->home, dst);
		} else if (mounts_add(ms, s->home, dst, false, false, e) < 0) {
			return -1;
		}
	}
	if (apt_root(s)) {
		if (xsnprintf(path, sizeof(path), "%s/%s", c->rundir, APT_ROOT_FILE) < 0)
			return err_set(e, EXIT_CTRUN, "run directory path too long");
		if (mount_point_possible(s, APT_ROOT_DST) &&
		    mounts_add(ms, path, APT_ROOT_DST, true, true, e) < 0)
			return -1;
	}
	if (!ctr_ident_nests(s))
		return 0;
	for (const char *const *f = (const char *const[]){ "passwd", "group", NULL }; *f; f++) {
		char dst[32];

		if (xsnprintf(path, sizeof(path), "%s/%s", c->rundir, *f) < 0 ||
		    xsnprintf(dst, sizeof(dst), "/etc/%s", *f) < 0)
			return err_set(e, EXIT_CTRUN, "run directory path too long");
		/* An image without it whose /etc is another user's: the ids stay
		 * unnamed rather than the run failing. */
		if (!mount_point_possible(s, dst))
			continue;
		if (mounts_add(ms, path, dst, true, true, e) < 0)
			return -1;
	}
	/* A shell has no agent: `/.ctrun/agent --as-user` switches for it. */
	if (!agent) {
		if (sibling_path("ctrun-agent", c->agent, sizeof(c->agent)) < 0)
			return err_set(e, EXIT_CTRUN, "ctrun-agent not found next to ctrun (%s): it "
				       "gives the shell your identity inside the container",
				       c->agent);
		if (mounts_add(ms, c->agent, AGENT_BIN, true, true, e) < 0)
			return -1;
	}
	return 0;
}

/* The image's FILE (/etc/passwd), read inside its root, a plain file of at
 * most IDFILES_MAX bytes; *text NULL when there is none. */
static int read_image_file(int rootfd, const char *file, char **text, size_t *len,
			   struct err *e)
{
	int fd = inroot_open(rootfd, file, O_RDONLY | O_NONBLOCK | O_CLOEXEC, 0, INROOT_CHROOT,
			     NULL);
	struct stat st;
	char *buf;
	size_t n = 0;

	*text = NULL;
	*len = 0;
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return 0;
	}
	if ((unsigned long long)st.st_size > IDFILES_MAX) {
		close(fd);
		return err_set(e, EXIT_CTRUN, "the image's %s is larger than %u MiB: ctrun cannot "
			       "add you to it; shrink it in the image, or run with --root", file,
			       IDFILES_MAX >> 20);
	}
	/* Bounded even if it grows while read. */
	buf = read_fd_max(fd, IDFILES_MAX, &n);
	if (buf == NULL) {
		close(fd);
		return err_sys(e, EXIT_CTRUN, "reading the image's %s", file);
	}
	close(fd);
	*text = buf;
	*len = n;
	return 0;
}

static int write_text(const char *dir, const char *name, const char *text, size_t len,
		      struct err *e)
{
	char path[PATH_MAX];
	int fd;

	if (xsnprintf(path, sizeof(path), "%s/%s", dir, name) < 0)
		return err_set(e, EXIT_CTRUN, "run directory path too long");
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return err_sys(e, EXIT_CTRUN, "%s", path);
	if (write_all(fd, text, len) < 0 || fchmod(fd, 0644) < 0) {
		close(fd);
		return err_sys(e, EXIT_CTRUN, "%s", path);
	}
	if (close(fd) < 0)
		return err_sys(e, EXIT_CTRUN, "%s", path);
	return 0;
}

int ctr_ident_files(struct ctr_setup *c, struct err *e)
{
	struct ctr_spec *s = &c->spec;
	struct idfiles_user u = { .name = s->user, .uid = s->uid, .gid = s->gid,
				  .home = s->user_home, .shell = "/bin/sh" };
	struct passwd *pw = getpwuid(s->uid);
	struct group *gr = getgrgid(s->gid);
	char gname[256], *text = NULL, *out = NULL;
	size_t len = 0, out_len = 0;
	int rootfd = -1, rv = -1;

	if (apt_root(s) && write_text(c->rundir, APT_ROOT_FILE, APT_ROOT_TEXT,
				       sizeof(APT_ROOT_TEXT) - 1, e) < 0)
		return -1;
	if (!ctr_ident_nests(s))
		return 0;
	if (s->rootfs == NULL)
		return err_set(e, EXIT_CTRUN, "identity: the image has no root file system here");
	/* The group's name; one the host cannot name is the user's. */
	if (xsnprintf(gname, sizeof(gname), "%s", gr != NULL ? gr->gr_name : s->user) < 0)
		return err_set(e, EXIT_CTRUN, "your group name is too long");
	u.group = gname;
	u.gecos = pw != NULL ? pw->pw_gecos : NULL;
	rootfd = open(s->rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return err_sys(e, EXIT_CTRUN, "image root %s", s->rootfs);
	/* The login shell when the image has it, else /bin/sh (enroot's rule). */
	if (pw != NULL && pw->pw_shell[0] == '/') {
		struct stat st;
		int fd = inroot_open(rootfd, pw->pw_shell, O_PATH, 0, INROOT_CHROOT, NULL);

		if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
			u.shell = pw->pw_shell;
		if (fd >= 0)
			close(fd);
	}
	if (read_image_file(rootfd, "/etc/passwd", &text, &len, e) < 0 ||
	    idfiles_passwd(&u, text, len, &out, &out_len, e) < 0 ||
	    write_text(c->rundir, "passwd", out, out_len, e) < 0)
		goto out;
	free(text);
	free(out);
	text = out = NULL;
	if (read_image_file(rootfd, "/etc/group", &text, &len, e) < 0 ||
	    idfiles_group(&u, text, len, &out, &out_len, e) < 0 ||
	    write_text(c->rundir, "group", out, out_len, e) < 0)
		goto out;
	rv = 0;
out:
	free(text);
	free(out);
	close(rootfd);
	return rv;
}

int ctr_ident_env(const struct ctr_spec *s, struct strv *env)
{
	const char *name = s->as_root ? "root" : s->user;

	if (strv_setenv(env, "HOME", s->as_root ? ROOT_HOME : s->home, 1) < 0 ||
	    strv_setenv(env, "USER", name, 1) < 0 || strv_setenv(env, "LOGNAME", name, 1) < 0)
		return -1;
	return 0;
}
