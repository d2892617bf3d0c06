/* privdir.c - a directory no one else can change (see privdir.h). */
#include "privdir.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

int privdir_make(const char *path, unsigned flags, struct err *e)
{
	mode_t others = (flags & PRIVDIR_UNREADABLE) != 0 ? 0077 : 0022;
	struct stat st;
	uid_t me = geteuid();

	if ((flags & PRIVDIR_PARENTS) != 0 ? mkdir_p(path, 0700) < 0
					   : mkdir(path, 0700) < 0 && errno != EEXIST)
		return err_sys(e, EXIT_CTRUN, "%s", path);
	if (lstat(path, &st) < 0)
		return err_sys(e, EXIT_CTRUN, "%s", path);
	if (S_ISLNK(st.st_mode)) {
		if (st.st_uid != me)
			return err_set(e, EXIT_CTRUN, "%s is a symlink that another user (uid %u) "
				       "owns: refusing it (remove it, or choose another directory)",
				       path, (unsigned)st.st_uid);
		if (stat(path, &st) < 0)
			return err_sys(e, EXIT_CTRUN, "%s", path);
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != me || (st.st_mode & others) != 0)
		return err_set(e, EXIT_CTRUN, "%s must be a directory of yours (uid %u) that no "
			       "one else can %s (it is %s of uid %u, mode %04o)", path, (unsigned)me,
			       (flags & PRIVDIR_UNREADABLE) != 0 ? "read or write" : "write",
			       S_ISDIR(st.st_mode) ? "a directory" : "not a directory",
			       (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
	return 0;
}

int trust_check(const struct stat *st, bool want_dir, const struct trust *t, char *why,
		size_t size)
{
	bool group_store = t->group != TRUST_NO_GROUP;

	if (want_dir ? !S_ISDIR(st->st_mode) : !S_ISREG(st->st_mode)) {
		snprintf(why, size, "%s", S_ISLNK(st->st_mode) ? "a symlink"
				: want_dir ? "not a directory" : "not a regular file");
		return -1;
	}
	if (!group_store && st->st_uid != t->me && !(t->root && st->st_uid == 0)) {
		if (t->me == 0)
			snprintf(why, size, "not owned by root");
		else
			snprintf(why, size, "owned by uid %u, neither yours (uid %u)%s",
				 (unsigned)st->st_uid, (unsigned)t->me, t->root ? " nor root's" : "");
		return -1;
	}
	if (!group_store && (st->st_mode & 022) != 0) {
		snprintf(why, size, "writable by group or others");
		return -1;
	}
	if ((st->st_mode & 002) != 0) {
		snprintf(why, size, "writable by others");
		return -1;
	}
	if ((st->st_mode & 020) != 0 && st->st_gid != t->group) {
		snprintf(why, size, "writable by group %u", (unsigned)st->st_gid);
		return -1;
	}
	return 0;
}

/* Whether parent/name is a directory of ours that no one else may enter. */
static bool ours(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
	       (st.st_mode & 077) == 0;
}

/* The smallest "NAME.XXXXXX" in parent that is ours, into out; 1 if any. */
static int find_fallback(const char *parent, const char *name, char *out, size_t size)
{
	char best[NAME_MAX + 1] = "", path[PATH_MAX];
	size_t len = strlen(name);
	struct dirent *de;
	DIR *d = opendir(parent);

	if (d == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, name, len) != 0 || de->d_name[len] != '.' ||
		    strlen(de->d_name + len + 1) != 6 ||
		    (best[0] != '\0' && strcmp(de->d_name, best) >= 0) ||
		    xsnprintf(path, sizeof(path), "%s/%s", parent, de->d_name) < 0 || !ours(path))
			continue;
		snprintf(best, sizeof(best), "%s", de->d_name);
	}
	closedir(d);
	return best[0] != '\0' && xsnprintf(out, size, "%s/%s", parent, best) >= 0;
}

int privdir_default(const char *parent, const char *name, char *out, size_t size,
		    struct err *e)
{
	char tmpl[PATH_MAX];
	struct err why = { 0 };
	struct stat st;

	if (xsnprintf(out, size, "%s/%s", parent, name) < 0)
		return err_set(e, EXIT_CTRUN, "%s/%s: path too long", parent, name);
	if (privdir_make(out, PRIVDIR_UNREADABLE, &why) == 0)
		return 0;
	/* Missing after all, or ours with the wrong mode: not someone else's doing. */
	if (lstat(out, &st) < 0 || (!S_ISLNK(st.st_mode) && st.st_uid == geteuid()))
		return err_set(e, why.code, "%s", why.msg);
	/* Taken first by someone else: a name of our own beside it, found again
	 * by every later run (the smallest of ours, so racing tasks agree). */
	if (find_fallback(parent, name, out, size) == 0) {
		if (xsnprintf(tmpl, sizeof(tmpl), "%s/%s.XXXXXX", parent, name) < 0)
			return err_set(e, EXIT_CTRUN, "%s/%s: path too long", parent, name);
		if (mkdtemp(tmpl) == NULL)
			return err_sys(e, EXIT_CTRUN, "%s", tmpl);
		if (find_fallback(parent, name, out, size) == 0)
			return err_set(e, EXIT_CTRUN, "%s: made, then not found", tmpl);
		if (strcmp(out, tmpl) != 0)
			rmdir(tmpl); /* another task of ours made a smaller one meanwhile */
	}
	fprintf(stderr, "ctrun: %s; using %s instead (an admin can remove the other one)\n",
		why.msg, out);
	return 0;
}
