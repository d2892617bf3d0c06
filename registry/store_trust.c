/* store_trust.c - whom the image store is trusted from (see store.h).
 *
 * A store path is often one another user can create first (a site's
 * `[registry] store = /scratch/...`), and whoever can write the store
 * decides what the others run: an image is found by its name alone.  So
 * the store is used only when its root and its folders are the caller's
 * or root's and no one else can write them, or it is a group's store
 * (setgid, group-writable) of a group the caller is in, whose members are
 * trusted as the caller is (docs/images.md, "Who may write the store").
 * Root's runs trust a store only root can write.  The rule itself is the
 * node's shared cache's (core/privdir.h: trust_check). */
#include "store.h"

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

#include "util.h"

/* The folders every store has (store_init makes them). */
static const char *const folders[] = { "/blobs", "/blobs/sha256", "/images", "/refs", "/tmp",
				       "/jobs" };

static void user_name(uid_t uid, char *out, size_t size)
{
	struct passwd pw, *r = NULL;
	char buf[4096];

	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &r) == 0 && r != NULL)
		snprintf(out, size, "%s, uid %u", pw.pw_name, (unsigned)uid);
	else
		snprintf(out, size, "uid %u", (unsigned)uid);
}

static void group_name(gid_t gid, char *out, size_t size)
{
	struct group gr, *r = NULL;
	char buf[16384];

	if (getgrgid_r(gid, &gr, buf, sizeof(buf), &r) == 0 && r != NULL)
		snprintf(out, size, "%s", gr.gr_name);
	else
		snprintf(out, size, "gid %u", (unsigned)gid);
}

static bool caller_in(gid_t gid)
{
	gid_t g[NGROUPS_MAX + 1];
	int n = getgroups(NGROUPS_MAX + 1, g);

	if (getegid() == gid)
		return true;
	for (int i = 0; i < n; i++)
		if (g[i] == gid)
			return true;
	return false;
}

/* Whether uid is a member of gid by the user and group databases. */
static bool member(uid_t uid, gid_t gid)
{
	struct passwd pw, *pr = NULL;
	struct group gr, *gp = NULL;
	char pbuf[4096], gbuf[16384];

	if (getpwuid_r(uid, &pw, pbuf, sizeof(pbuf), &pr) != 0 || pr == NULL)
		return false;
	if (pw.pw_gid == gid)
		return true;
	if (getgrgid_r(gid, &gr, gbuf, sizeof(gbuf), &gp) != 0 || gp == NULL)
		return false;
	for (char **m = gr.gr_mem; m != NULL && *m != NULL; m++)
		if (strcmp(*m, pw.pw_name) == 0)
			return true;
	return false;
}

/* The one refusal: the path, why, its owner and mode, and the rule. */
static int refuse(const char *path, const struct stat *st, const char *why, struct err *e)
{
	char owner[300], group[300];

	user_name(st->st_uid, owner, sizeof(owner));
	group_name(st->st_gid, group, sizeof(group));
	return err_set(e, EXIT_CTRUN, "image store %s: %s (owner %s, group %s, mode %04o): not "
		       "used; a store must be yours or root's and writable by no one else, a group's "
		       "setgid and writable by that group only, and root's runs use a store only "
		       "root can write (docs/images.md, \"Who may write the store\")", path, why,
		       owner, group, (unsigned)(st->st_mode & 07777));
}

/* The store's root: whose it is, and whether it is a group's. */
static int root_trust(const char *store, const struct stat *st, struct trust *t, struct err *e)
{
	char why[400], g[300], o[300];

	if (!S_ISDIR(st->st_mode) || (st->st_mode & S_ISGID) == 0 || (st->st_mode & 020) == 0)
		return 0; /* not a group's: trust_check decides */
	group_name(st->st_gid, g, sizeof(g));
	if (t->me == 0) {
		snprintf(why, sizeof(why), "a store of group %s, which its members can write", g);
		return refuse(store, st, why, e);
	}
	if (!caller_in(st->st_gid)) {
		snprintf(why, sizeof(why), "a store of group %s, which you are not in", g);
		return refuse(store, st, why, e);
	}
	/* Made by a member (or root, or the caller): a setgid folder of the
	 * group's that someone else made is no group store. */
	if (st->st_uid != t->me && st->st_uid != 0 && !member(st->st_uid, st->st_gid)) {
		user_name(st->st_uid, o, sizeof(o));
		snprintf(why, sizeof(why), "a store of group %s made by %s, who is not in it", g, o);
		return refuse(store, st, why, e);
	}
	t->group = st->st_gid;
	return 0;
}

int store_trust(const char *store, struct trust *t, struct err *e)
{
	char path[PATH_MAX], why[160];
	struct stat st;

	*t = (struct trust){ geteuid(), true, TRUST_NO_GROUP };
	if (lstat(store, &st) < 0)
		return errno == ENOENT ? 0 : err_sys(e, EXIT_CTRUN, "image store %s", store);
	/* The root may be a link of the caller's or root's, to a store checked as one. */
	if (S_ISLNK(st.st_mode)) {
		if (st.st_uid != t->me && st.st_uid != 0)
			return refuse(store, &st, "a symlink of another user", e);
		if (stat(store, &st) < 0)
			return errno == ENOENT ? 0 : err_sys(e, EXIT_CTRUN, "image store %s", store);
	}
	if (root_trust(store, &st, t, e) < 0)
		return -1;
	if (trust_check(&st, true, t, why, sizeof(why)) < 0)
		return refuse(store, &st, why, e);
	for (size_t i = 0; i < sizeof(folders) / sizeof(*folders); i++) {
		if (xsnprintf(path, sizeof(path), "%s%s", store, folders[i]) < 0)
			return err_set(e, EXIT_USAGE, "image store %s: path too long", store);
		if (lstat(path, &st) < 0) {
			if (errno == ENOENT)
				continue;
			return err_sys(e, EXIT_CTRUN, "image store %s", path);
		}
		if (trust_check(&st, true, t, why, sizeof(why)) < 0)
			return refuse(path, &st, why, e);
	}
	return 1;
}

int store_open(const char *path, const struct trust *t, struct stat *st, struct err *e)
{
	char why[160];
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0) {
		if (errno == ENOENT)
			return -2;
		/* O_NOFOLLOW's ELOOP: a link where a file of the store belongs. */
		if (errno == ELOOP && lstat(path, st) == 0)
			return refuse(path, st, "a symlink", e);
		return err_sys(e, EXIT_CTRUN, "image store %s", path);
	}
	if (fstat(fd, st) < 0) {
		err_sys(e, EXIT_CTRUN, "image store %s", path);
		close(fd);
		return -1;
	}
	if (trust_check(st, false, t, why, sizeof(why)) < 0) {
		refuse(path, st, why, e);
		close(fd);
		return -1;
	}
	return fd;
}

int store_image_check(const char *store, const char *path, struct err *e)
{
	struct trust t;
	struct stat st;
	int fd, r = store_trust(store, &t, e);

	if (r <= 0)
		return r;
	fd = store_open(path, &t, &st, e);
	if (fd == -2)
		return 0;
	if (fd < 0)
		return -1;
	close(fd);
	return 1;
}
