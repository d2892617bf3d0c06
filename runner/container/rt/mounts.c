/* mounts.c - parsing, checking and resolving bind mounts (see mounts.h). */
#include "mounts.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inroot.h"
#include "rootpath.h"
#include "util.h"

/* Next ':'-separated field of a mount spec, with "\:" and "\\" unescaped. */
static const char *field(const char *p, char *out, size_t size, bool *ok)
{
	size_t o = 0;

	*ok = true;
	for (; *p != '\0' && *p != ':'; p++) {
		if (*p == '\\' && (p[1] == ':' || p[1] == '\\'))
			p++;
		if (o + 1 >= size) {
			*ok = false;
			return p;
		}
		out[o++] = *p;
	}
	out[o] = '\0';
	return p;
}

static int absolute(const char *path, const char *cwd, char *out, size_t size)
{
	char joined[PATH_MAX * 2];

	if (path[0] == '/')
		return rootpath_normalize(path, out, size);
	if (cwd == NULL || cwd[0] != '/' || xsnprintf(joined, sizeof(joined), "%s/%s", cwd, path) < 0) {
		errno = EINVAL;
		return -1;
	}
	return rootpath_normalize(joined, out, size);
}

/* "ro", "rw", "suid", "dev", "unbindable", comma-separated, each at most
 * once (ro or rw). */
static int options(const char *opt, struct ctr_mount *m)
{
	char buf[32], *rest = buf, *w;
	bool ro = false, rw = false;

	if (xsnprintf(buf, sizeof(buf), "%s", opt) < 0)
		return -1;
	/* strsep, not strtok: an empty word ("ro,", ",dev") is an error. */
	while ((w = strsep(&rest, ",")) != NULL) {
		bool *flag = strcmp(w, "ro") == 0 ? &ro : strcmp(w, "rw") == 0 ? &rw :
			     strcmp(w, "suid") == 0 ? &m->suid : strcmp(w, "dev") == 0 ? &m->dev :
			     strcmp(w, "unbindable") == 0 ? &m->unbindable : NULL;

		if (flag == NULL || *flag)
			return -1;
		*flag = true;
	}
	m->ro = ro;
	return ro && rw ? -1 : 0;
}

/* A number with at most one suffix from `suffixes` ("" none): "512m". */
static bool tmpfs_number(const char *v, const char *suffixes)
{
	size_t n = strspn(v, "0123456789");

	return n > 0 && n <= 20 &&
	       (v[n] == '\0' || (strchr(suffixes, v[n]) != NULL && v[n + 1] == '\0'));
}

/* One option of a tmpfs: ro, rw, size=, nr_inodes=, mode=, huge=.  Words
 * are split at commas first, and each value is checked whole, so no other
 * mount option can ride along. */
static bool tmpfs_word(const char *w)
{
	static const char *const huge[] = { "never", "always", "within_size", "advise", NULL };

	if (strncmp(w, "size=", 5) == 0)
		return tmpfs_number(w + 5, "kKmMgGtT%");
	if (strncmp(w, "nr_inodes=", 10) == 0)
		return tmpfs_number(w + 10, "kKmMgG");
	if (strncmp(w, "mode=", 5) == 0)
		return strspn(w + 5, "01234567") == strlen(w + 5) && strlen(w + 5) >= 1 &&
		       strtoul(w + 5, NULL, 8) <= 07777 && strlen(w + 5) <= 5;
	if (strncmp(w, "huge=", 5) == 0)
		for (const char *const *h = huge; *h != NULL; h++)
			if (strcmp(w + 5, *h) == 0)
				return true;
	return false;
}

/* A tmpfs's OPTS: ro or rw into m->ro, the rest (each key once) into m->data. */
static int tmpfs_options(const char *opt, struct ctr_mount *m)
{
	char buf[128], data[128] = "", *rest = buf, *w;
	bool ro = false, rw = false;
	size_t used = 0;

	if (xsnprintf(buf, sizeof(buf), "%s", opt) < 0)
		return -1;
	while ((w = strsep(&rest, ",")) != NULL) {
		size_t key = strcspn(w, "=");

		if (strcmp(w, "ro") == 0 || strcmp(w, "rw") == 0) {
			bool *flag = w[1] == 'o' ? &ro : &rw;

			if (*flag)
				return -1;
			*flag = true;
			continue;
		}
		if (!tmpfs_word(w))
			return -1;
		for (const char *d = data; *d != '\0'; d += strcspn(d, ",") + (d[strcspn(d, ",")] == ','))
			if (strncmp(d, w, key + 1) == 0)
				return -1;
		if (xsnprintf(data + used, sizeof(data) - used, "%s%s", used > 0 ? "," : "", w) < 0)
			return -1;
		used = strlen(data);
	}
	m->ro = ro;
	m->data = strdup(data);
	return ro && rw ? -1 : 0;
}

/* tmpfs:DST[:OPTS] and umount:DST, out->kind already set. */
static int parse_special(const char *spec, const char *dst, bool has_dst, const char *opt,
			 bool has_opt, struct ctr_mount *out, struct err *e)
{
	const char *what = out->kind == CTR_MOUNT_TMPFS ? "tmpfs" : "umount";
	char adst[PATH_MAX];

	if (!has_dst || dst[0] != '/')
		return err_set(e, EXIT_USAGE, "--mount '%s': %s needs an absolute destination "
			       "(%s:/PATH%s; ./%s for a directory of that name)", spec, what, what,
			       out->kind == CTR_MOUNT_TMPFS ? "[:OPTS]" : "", what);
	if (rootpath_normalize(dst, adst, sizeof(adst)) < 0)
		return err_set(e, EXIT_USAGE, "--mount '%s': bad destination path", spec);
	if (strcmp(adst, "/") == 0)
		return err_set(e, EXIT_USAGE, "--mount '%s': cannot mount over the container's /",
			       spec);
	if (out->kind == CTR_MOUNT_UMOUNT && has_opt)
		return err_set(e, EXIT_USAGE, "--mount '%s': umount takes no options", spec);
	if (out->kind == CTR_MOUNT_TMPFS && !has_opt)
		out->data = strdup("");
	else if (out->kind == CTR_MOUNT_TMPFS && tmpfs_options(opt, out) < 0) {
		mount_free(out);
		return err_set(e, EXIT_USAGE, "--mount '%s': bad tmpfs option (expected a "
			       "comma-separated list of ro or rw, size=N[k|m|g|t|%%], "
			       "nr_inodes=N[k|m|g], mode=OCTAL, huge=never|always|within_size|advise, "
			       "each once)", spec);
	}
	out->src = strdup(what);
	out->dst = strdup(adst);
	if (out->src == NULL || out->dst == NULL ||
	    (out->kind == CTR_MOUNT_TMPFS && out->data == NULL)) {
		mount_free(out);
		return err_sys(e, EXIT_CTRUN, "--mount");
	}
	return 0;
}

int mount_parse(const char *spec, const char *cwd, struct ctr_mount *out, struct err *e)
{
	char src[PATH_MAX], dst[PATH_MAX], opt[128], asrc[PATH_MAX], adst[PATH_MAX];
	const char *p = spec;
	bool ok, has_dst = false;

	memset(out, 0, sizeof(*out));
	dst[0] = opt[0] = '\0';
	p = field(p, src, sizeof(src), &ok);
	if (!ok)
		return err_set(e, EXIT_USAGE, "--mount '%s': path too long", spec);
	if (*p == ':') {
		has_dst = true;
		p = field(p + 1, dst, sizeof(dst), &ok);
		if (!ok)
			return err_set(e, EXIT_USAGE, "--mount '%s': path too long", spec);
	}
	if (strcmp(src, "tmpfs") == 0 || strcmp(src, "umount") == 0) {
		bool has_opt = *p == ':';

		if (has_opt)
			p = field(p + 1, opt, sizeof(opt), &ok);
		if (has_opt && (!ok || *p != '\0'))
			return err_set(e, EXIT_USAGE, "--mount '%s': bad options", spec);
		out->kind = src[0] == 't' ? CTR_MOUNT_TMPFS : CTR_MOUNT_UMOUNT;
		return parse_special(spec, dst, has_dst, opt, has_opt, out, e);
	}
	if (*p == ':') {
		p = field(p + 1, opt, sizeof(opt), &ok);
		if (!ok || *p != '\0' || options(opt, out) < 0)
			return err_set(e, EXIT_USAGE, "--mount '%s': unknown option (expected "
				       "SRC[:DST[:OPTS]], OPTS a comma-separated list of ro or rw, "
				       "suid, dev, unbindable; '\\:' for a colon in a path)", spec);
	}
	if (src[0] == '\0')
		return err_set(e, EXIT_USAGE, "--mount '%s': empty source", spec);
	if (absolute(src, cwd, asrc, sizeof(asrc)) < 0)
		return err_set(e, EXIT_USAGE, "--mount '%s': bad source path", spec);
	if (dst[0] == '\0' && has_dst) {
		return err_set(e, EXIT_USAGE, "--mount '%s': empty destination", spec);
	} else if (dst[0] == '\0') {
		memcpy(adst, asrc, strlen(asrc) + 1);
	} else if (dst[0] != '/') {
		return err_set(e, EXIT_USAGE, "--mount '%s': destination '%s' must be an absolute "
			       "path", spec, dst);
	} else if (rootpath_normalize(dst, adst, sizeof(adst)) < 0) {
		return err_set(e, EXIT_USAGE, "--mount '%s': bad destination path", spec);
	}
	if (strcmp(adst, "/") == 0)
		return err_set(e, EXIT_USAGE, "--mount '%s': cannot mount over the container's /",
			       spec);
	out->src = strdup(asrc);
	out->dst = strdup(adst);
	if (out->src == NULL || out->dst == NULL) {
		mount_free(out);
		return err_sys(e, EXIT_CTRUN, "--mount");
	}
	return 0;
}

int mount_check_source(struct ctr_mount *m, struct err *e)
{
	struct stat st;

	if (m->kind != CTR_MOUNT_BIND)
		return 0;
	if (stat(m->src, &st) < 0)
		return err_sys(e, EXIT_USAGE, "mount source %s", m->src);
	m->file = !S_ISDIR(st.st_mode);
	return 0;
}

void mount_free(struct ctr_mount *m)
{
	free(m->src);
	free(m->dst);
	free(m->data);
	m->src = m->dst = m->data = NULL;
}

int mounts_add(struct ctr_mounts *ms, const char *src, const char *dst, bool ro, bool file,
	       struct err *e)
{
	struct ctr_mount *v = realloc(ms->v, (ms->n + 1) * sizeof(*v));

	if (v == NULL)
		return err_sys(e, EXIT_CTRUN, "mounts");
	ms->v = v;
	v = &ms->v[ms->n];
	memset(v, 0, sizeof(*v));
	v->src = strdup(src);
	v->dst = strdup(dst);
	v->ro = ro;
	v->file = file;
	if (v->src == NULL || v->dst == NULL) {
		mount_free(v);
		return err_sys(e, EXIT_CTRUN, "mounts");
	}
	ms->n++;
	return 0;
}

int mounts_add_copy(struct ctr_mounts *ms, const struct ctr_mount *m, struct err *e)
{
	if (mounts_add(ms, m->src, m->dst, m->ro, m->file, e) < 0)
		return -1;
	ms->v[ms->n - 1].suid = m->suid;
	ms->v[ms->n - 1].dev = m->dev;
	ms->v[ms->n - 1].unbindable = m->unbindable;
	ms->v[ms->n - 1].kind = m->kind;
	if (m->data != NULL && (ms->v[ms->n - 1].data = strdup(m->data)) == NULL)
		return err_sys(e, EXIT_CTRUN, "mounts");
	return 0;
}

void mounts_free(struct ctr_mounts *ms)
{
	for (size_t i = 0; i < ms->n; i++)
		mount_free(&ms->v[i]);
	free(ms->v);
	ms->v = NULL;
	ms->n = 0;
}

int mount_resolve_dest(const char *rootfs, struct ctr_mount *m, struct err *e)
{
	char rel[PATH_MAX], *abs;
	int fd = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC), rv;

	if (fd < 0)
		return err_sys(e, EXIT_CTRUN, "image root %s", rootfs);
	/* The mount point itself is followed too: a runtime mounts onto what a
	 * final symlink names, so resolve it here, inside the image. */
	rv = inroot_resolve(fd, m->dst, INROOT_CHROOT, true, rel, sizeof(rel), e);
	close(fd);
	if (rv < 0)
		return err_wrap(e, "mount %s: destination %s", m->src, m->dst);
	if (strcmp(rel, ".") == 0)
		return err_set(e, EXIT_CTRUN, "mount %s: destination %s is the image's root "
			       "(through a symlink)", m->src, m->dst);
	if (asprintf(&abs, "/%s", rel) < 0)
		return err_sys(e, EXIT_CTRUN, "mounts");
	free(m->dst);
	m->dst = abs;
	return 0;
}

bool mount_point_provided(const struct ctr_mounts *ms, size_t i)
{
	const struct ctr_mount *m = &ms->v[i];

	for (size_t j = 0; j < i; j++) {
		const struct ctr_mount *o = &ms->v[j];
		size_t len = strlen(o->dst);
		char host[PATH_MAX];
		struct stat st;

		if (o->file || o->kind != CTR_MOUNT_BIND || strncmp(m->dst, o->dst, len) != 0 ||
		    (m->dst[len] != '/' && strcmp(o->dst, "/") != 0) || m->dst[len] == '\0')
			continue;
		if (xsnprintf(host, sizeof(host), "%s%s", o->src, m->dst + len) < 0 ||
		    lstat(host, &st) < 0)
			continue;
		if (m->file ? !S_ISDIR(st.st_mode) && !S_ISLNK(st.st_mode) : S_ISDIR(st.st_mode))
			return true;
	}
	return false;
}

int mount_point_create(int rootfd, const struct ctr_mount *m, struct err *e)
{
	char leaf[NAME_MAX + 1];
	struct stat st;
	int dfd, fd, rv = -1;

	/* The destination was resolved (mount_resolve_dest): a symlink on the
	 * way now can only have been put there since, so every one is refused. */
	dfd = inroot_parent(rootfd, m->dst, INROOT_NO_LINKS, true, leaf, sizeof(leaf), e);
	if (dfd < 0)
		return err_wrap(e, "mount %s: creating mount point %s", m->src, m->dst);
	if (m->file) {
		fd = openat(dfd, leaf, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0644);
		if (fd >= 0) {
			close(fd);
			rv = 0;
		} else if ((errno == EISDIR || errno == EEXIST || errno == ENXIO || errno == EACCES ||
			    errno == EROFS || errno == ETXTBSY) &&
			   fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISLNK(st.st_mode)) {
			rv = 0; /* something is there already: fine unless it is a symlink */
		}
	} else if (mkdirat(dfd, leaf, 0755) == 0 ||
		   (errno == EEXIST && fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISDIR(st.st_mode))) {
		rv = 0;
	} else if (errno == EEXIST) {
		errno = S_ISLNK(st.st_mode) ? ELOOP : ENOTDIR;
	}
	if (rv < 0)
		err_sys(e, EXIT_CTRUN, "mount %s: creating mount point %s in the image", m->src,
			m->dst);
	close(dfd);
	return rv;
}

/* Whether path is dir or lies below it. */
static bool at_or_below(const char *path, const char *dir)
{
	size_t len = strlen(dir);

	return strncmp(path, dir, len) == 0 && (path[len] == '\0' || path[len] == '/');
}

int mounts_apply_umounts(struct ctr_mounts *ms, bool runtime_detach, const char *runtime,
			 struct err *e)
{
	size_t i = 0;

	while (i < ms->n) {
		struct ctr_mount *u = &ms->v[i];
		size_t kept = 0, n = i;

		if (u->kind != CTR_MOUNT_UMOUNT) {
			i++;
			continue;
		}
		for (size_t j = 0; j < n; j++) {
			if (ms->v[j].kind != CTR_MOUNT_UMOUNT && at_or_below(ms->v[j].dst, u->dst))
				mount_free(&ms->v[j]);
			else
				ms->v[kept++] = ms->v[j];
		}
		if (kept == n && !runtime_detach)
			return err_set(e, EXIT_USAGE, "umount:%s: ctrun mounts nothing at %s before "
				       "this entry (it removes its own mounts only: the home, /tmp, the "
				       "working directory, an earlier --mount; not %s's own mounts)",
				       ms->v[i].dst, ms->v[i].dst, runtime);
		/* Found some: the entry is done; else the runtime detaches it. */
		if (kept < n)
			mount_free(&ms->v[i]);
		else
			ms->v[kept++] = ms->v[i];
		memmove(&ms->v[kept], &ms->v[i + 1], (ms->n - i - 1) * sizeof(*ms->v));
		ms->n -= i + 1 - kept;
		i = kept;
	}
	return 0;
}
