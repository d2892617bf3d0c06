/* cdireg.c - the spec directories read, trusted and searched (cdireg.h). */
#include "cdireg.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "privdir.h"
#include "util.h"

#define SPEC_MAX (4u << 20)
#define FILES_MAX 4096

static struct trust caller_trust(void)
{
	return (struct trust){ geteuid(), true, TRUST_NO_GROUP };
}

/* Every directory from / to dir (dir included): root's or the caller's,
 * writable by no one else unless sticky.  0 trusted, 1 missing, -1 e. */
static int dir_trusted(const char *dir, struct err *e)
{
	char path[PATH_MAX], real[PATH_MAX];
	uid_t me = geteuid();
	struct stat st;

	if (realpath(dir, real) == NULL)
		return errno == ENOENT || errno == ENOTDIR ? 1
							   : err_sys(e, EXIT_CTRUN, "CDI spec "
								     "directory %s", dir);
	/* The real path's components: a link on the way is the kernel's to
	 * follow, and its target's directories are what count. */
	for (char *p = real;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		if (xsnprintf(path, sizeof(path), "%.*s", p == real ? 1 : (int)(p - real), real) <
			    0 ||
		    stat(path, &st) < 0)
			return err_sys(e, EXIT_CTRUN, "CDI spec directory %s", path);
		if (!S_ISDIR(st.st_mode))
			return err_set(e, EXIT_CTRUN, "CDI spec directory %s is not a directory", path);
		if ((st.st_uid != 0 && (me == 0 || st.st_uid != me)) ||
		    ((st.st_mode & 022) != 0 && !(st.st_mode & S_ISVTX)))
			return err_set(e, EXIT_CTRUN, "CDI spec directory %s: %s (uid %u, mode %04o) "
				       "could be changed by another user, so no spec under it is "
				       "trusted%s: make it %s and not writable by others",
				       dir, path, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777),
				       me == 0 ? " by root" : "", me == 0 ? "root's" : "root's or yours");
		if (*p == '\0')
			return 0;
	}
}

static bool spec_name(const char *n)
{
	size_t len = strlen(n);

	return n[0] != '.' && len > 5 &&
	       (strcmp(n + len - 5, ".json") == 0 || strcmp(n + len - 5, ".yaml") == 0);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One spec file of a trusted directory: opened without following a link
 * nor blocking, a regular file the caller trusts, read bounded, parsed. */
static int load_file(const char *dir, const char *name, size_t di, struct cdi_reg *r,
		     struct err *e)
{
	struct trust t = caller_trust();
	struct cdi_file *f;
	char path[PATH_MAX], why[256], *data;
	struct stat st;
	size_t len;
	int fd, rv;

	if (xsnprintf(path, sizeof(path), "%s/%s", dir, name) < 0)
		return err_set(e, EXIT_USAGE, "CDI spec %s/%s: path too long", dir, name);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 && errno == ELOOP)
		return err_set(e, EXIT_CTRUN, "CDI spec %s is a symbolic link, which ctrun does not "
			       "follow in a spec directory: copy the spec there", path);
	if (fd < 0 || fstat(fd, &st) < 0) {
		rv = err_sys(e, EXIT_CTRUN, "CDI spec %s", path);
		goto out;
	}
	if (S_ISDIR(st.st_mode)) {
		close(fd);
		return 0; /* a directory named x.json: not a spec (the library's rule) */
	}
	if (trust_check(&st, false, &t, why, sizeof(why)) < 0) {
		rv = err_set(e, EXIT_CTRUN, "CDI spec %s is not trusted: %s (another user could "
			     "have written it; %s runs only specs %s could write)", path, why,
			     t.me == 0 ? "root" : "ctrun", t.me == 0 ? "only root" : "only root or you");
		goto out;
	}
	if (st.st_size > SPEC_MAX) {
		rv = err_set(e, EXIT_USAGE, "CDI spec %s is larger than %u bytes", path, SPEC_MAX);
		goto out;
	}
	data = read_fd_max(fd, SPEC_MAX, &len);
	if (data == NULL) {
		rv = err_sys(e, EXIT_CTRUN, "CDI spec %s", path);
		goto out;
	}
	f = realloc(r->files, (r->n + 1) * sizeof(*r->files));
	if (f == NULL) {
		free(data);
		rv = err_sys(e, EXIT_CTRUN, "CDI spec %s", path);
		goto out;
	}
	r->files = f;
	f = &r->files[r->n];
	memset(f, 0, sizeof(*f));
	rv = cdi_spec_parse(data, len, strcmp(name + strlen(name) - 5, ".yaml") == 0, path,
			    &f->spec, e);
	free(data);
	if (rv == 0 && (f->path = strdup(path)) == NULL) {
		cdi_spec_free(&f->spec);
		rv = err_sys(e, EXIT_CTRUN, "CDI spec %s", path);
	}
	if (rv == 0) {
		f->dir = di;
		r->n++;
	}
out:
	if (fd >= 0)
		close(fd);
	return rv;
}

static int load_dir(const char *dir, size_t di, struct cdi_reg *r, struct err *e)
{
	struct strv names = { 0 };
	struct dirent *de;
	DIR *d;
	int rv = dir_trusted(dir, e);

	if (rv != 0)
		return rv > 0 ? 0 : -1;
	if ((d = opendir(dir)) == NULL)
		return errno == ENOENT ? 0 : err_sys(e, EXIT_CTRUN, "CDI spec directory %s", dir);
	while ((de = readdir(d)) != NULL) {
		if (!spec_name(de->d_name))
			continue;
		if (names.n >= FILES_MAX) {
			rv = err_set(e, EXIT_USAGE, "CDI spec directory %s holds more than %d specs",
				     dir, FILES_MAX);
			break;
		}
		if (strv_push(&names, de->d_name) < 0) {
			rv = err_sys(e, EXIT_CTRUN, "CDI spec directory %s", dir);
			break;
		}
	}
	closedir(d);
	if (names.n > 0)
		qsort(names.v, names.n, sizeof(*names.v), cmp_names);
	for (size_t i = 0; rv == 0 && i < names.n; i++)
		rv = load_file(dir, names.v[i], di, r, e);
	strv_free(&names);
	return rv;
}

int cdi_reg_load(const struct strv *dirs, struct cdi_reg *r, struct err *e)
{
	static const char *const defaults[] = { CDI_DEFAULT_DIRS, NULL };
	const char *const *list = dirs != NULL && dirs->n > 0 ? (const char *const *)dirs->v
							      : defaults;

	memset(r, 0, sizeof(*r));
	for (size_t i = 0; list[i] != NULL; i++) {
		if (list[i][0] != '/') {
			cdi_reg_free(r);
			return err_set(e, EXIT_USAGE, "cdi_spec_dirs: '%s' is not an absolute path",
				       list[i]);
		}
		if (load_dir(list[i], i, r, e) < 0) {
			cdi_reg_free(r);
			return -1;
		}
	}
	return 0;
}

void cdi_reg_free(struct cdi_reg *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free(r->files[i].path);
		cdi_spec_free(&r->files[i].spec);
	}
	free(r->files);
	memset(r, 0, sizeof(*r));
}
