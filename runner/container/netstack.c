/* netstack.c - the host's network stack in the container (container.h
 * ctr_netstack): the libraries a site declares in [fabric] libraries
 * (libfabric, an NCCL net plugin such as aws-ofi-nccl, UCX), bound into
 * CTR_NETSTACK_DIR on the workers' LD_LIBRARY_PATH, the directories of
 * lib_dirs (libfabric's providers) bound as they are, the variables of
 * net_env (NCCL_NET_PLUGIN, FI_PROVIDER, ...).
 *
 * Each library is bound only once the image can load it, as CSCS's hooks
 * check MPI and libfabric before they bind: the image's glibc (libc.so.6's
 * highest GLIBC_ version) is at least the library's highest GLIBC_ need,
 * and the image ships no other version of it (a library of the same soname
 * in its library directories: the standard ones, ld.so.conf's, its
 * LD_LIBRARY_PATH).  A mismatch is refused in one line naming both sides,
 * or, with on_conflict = image, the library is left out and the image's
 * own copy is what loads.  The CDI devices of [fabric] devices (a site's
 * stack described as a CDI spec) get the same checks on the libraries
 * their spec binds. */
#include "container.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "edits.h"
#include "elfinfo.h"
#include "inroot.h"
#include "util.h"

#define WHO_LIBS "[fabric] libraries"

/* Where an image keeps libraries: the loader's default path and the
 * multiarch directories of Debian and Ubuntu. */
static const char *const image_dirs[] = {
	"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
	"/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib",
	"/usr/local/lib", "/usr/local/lib64",
};

/* An ELF file's facts: fd read whole (bounded) and parsed. */
static int elf_of_fd(int fd, const char *what, struct elf_info *out, struct err *e)
{
	size_t len = 0;
	char *buf = read_fd_max(fd, ELFINFO_MAX + 1, &len);
	int rv;

	if (buf == NULL)
		return err_sys(e, EXIT_CTRUN, "%s", what);
	if (len > ELFINFO_MAX) {
		free(buf);
		return err_set(e, EXIT_USAGE, "%s is larger than %u MiB: not checked", what,
			       ELFINFO_MAX >> 20);
	}
	rv = elf_info_parse((const unsigned char *)buf, len, what, out, e);
	free(buf);
	return rv;
}

/* "1.22.0" of "libfabric.so.1.22.0"; "" when the name has no version. */
static const char *name_version(const char *base)
{
	const char *v = strstr(base, ".so.");

	return v != NULL ? v + 4 : "";
}

/* The image's facts, read once. */
struct image {
	int rootfd;
	char glibc[24];      /* "" when it has no glibc */
	char libc_path[64];
	struct strv dirs;    /* where it keeps libraries */
};

static void add_conf_dirs(struct image *im, const char *conf)
{
	int fd = inroot_open(im->rootfd, conf, O_RDONLY | O_NONBLOCK, 0, INROOT_CHROOT, NULL);
	size_t len = 0;
	char *text = fd >= 0 ? read_fd_max(fd, 1 << 16, &len) : NULL, *save = NULL;

	if (fd >= 0)
		close(fd);
	for (char *l = text != NULL ? strtok_r(text, "\n", &save) : NULL; l != NULL;
	     l = strtok_r(NULL, "\n", &save)) {
		l += strspn(l, " \t");
		l[strcspn(l, " \t#")] = '\0';
		if (l[0] == '/' && strlen(l) < 256 && strv_find(&im->dirs, l) < 0)
			strv_push(&im->dirs, l);
	}
	free(text);
}

/* ld.so.conf.d's files (ld.so.conf's usual include). */
static void add_conf_d(struct image *im)
{
	int fd = inroot_open(im->rootfd, "/etc/ld.so.conf.d", O_RDONLY | O_DIRECTORY, 0,
			     INROOT_CHROOT, NULL);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	int n = 0;

	if (d == NULL && fd >= 0)
		close(fd);
	while (d != NULL && (de = readdir(d)) != NULL && n++ < 256) {
		char path[300];
		size_t l = strlen(de->d_name);

		if (l > 5 && strcmp(de->d_name + l - 5, ".conf") == 0 &&
		    xsnprintf(path, sizeof(path), "/etc/ld.so.conf.d/%s", de->d_name) >= 0)
			add_conf_dirs(im, path);
	}
	if (d != NULL)
		closedir(d);
}

static int image_open(const struct ctr_spec *s, struct image *im, struct err *e)
{
	const char *ldp = NULL;

	memset(im, 0, sizeof(*im));
	im->rootfd = open(ctr_rootfs_dir(s), O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (im->rootfd < 0)
		return err_sys(e, EXIT_CTRUN, "the image's root %s", s->rootfs);
	for (size_t i = 0; i < sizeof(image_dirs) / sizeof(*image_dirs); i++)
		strv_push(&im->dirs, image_dirs[i]);
	add_conf_dirs(im, "/etc/ld.so.conf");
	add_conf_d(im);
	for (size_t i = 0; i < s->env.n; i++)
		if (strncmp(s->env.v[i], "LD_LIBRARY_PATH=", 16) == 0)
			ldp = s->env.v[i] + 16;
	for (const char *p = ldp; p != NULL && *p != '\0';) {
		size_t n = strcspn(p, ":");
		char dir[256];

		if (n > 0 && n < sizeof(dir) && p[0] == '/') {
			memcpy(dir, p, n);
			dir[n] = '\0';
			if (strv_find(&im->dirs, dir) < 0)
				strv_push(&im->dirs, dir);
		}
		p += n + (p[n] == ':');
	}
	/* glibc: libc.so.6's own version definitions. */
	for (size_t i = 0; i < im->dirs.n && im->glibc[0] == '\0'; i++) {
		struct elf_info li;
		struct err ignored = { 0 };
		int fd;

		if (xsnprintf(im->libc_path, sizeof(im->libc_path), "%s/libc.so.6", im->dirs.v[i]) < 0)
			continue;
		fd = inroot_open(im->rootfd, im->libc_path, O_RDONLY | O_NONBLOCK, 0, INROOT_CHROOT,
				 NULL);
		if (fd < 0)
			continue;
		if (elf_of_fd(fd, im->libc_path, &li, &ignored) == 0)
			snprintf(im->glibc, sizeof(im->glibc), "%s", li.glibc_defined);
		close(fd);
	}
	return 0;
}

static void image_close(struct image *im)
{
	if (im->rootfd >= 0)
		close(im->rootfd);
	strv_free(&im->dirs);
}

/* The image's own library of this soname: its path and the version of
 * the file it names (resolved inside the image).  0 when it has none. */
static int image_copy(const struct image *im, const char *soname, char *path, size_t size,
		      char *real, size_t real_size)
{
	for (size_t i = 0; i < im->dirs.n; i++) {
		char p[PATH_MAX], resolved[PATH_MAX];
		struct stat st;
		int fd;

		if (xsnprintf(p, sizeof(p), "%s/%s", im->dirs.v[i], soname) < 0)
			continue;
		fd = inroot_open(im->rootfd, p, O_PATH, 0, INROOT_CHROOT, NULL);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
		    inroot_resolve(im->rootfd, p, INROOT_CHROOT, true, resolved, sizeof(resolved),
				   NULL) < 0) {
			close(fd);
			continue;
		}
		close(fd);
		snprintf(path, size, "%s", p);
		snprintf(real, real_size, "%s",
			 strrchr(resolved, '/') != NULL ? strrchr(resolved, '/') + 1 : resolved);
		return 1;
	}
	return 0;
}

/* One host library: why the image cannot take it, into why ("" when it
 * can).  The host's facts into li and real. */
static int check_lib(const struct image *im, const char *path, struct elf_info *li,
		     char *real, size_t real_size, char *why, size_t why_size, struct err *e)
{
	char resolved[PATH_MAX], ipath[PATH_MAX], ireal[NAME_MAX + 1];
	const char *base;
	int fd;

	why[0] = '\0';
	if (path[0] != '/' || realpath(path, resolved) == NULL)
		return err_set(e, EXIT_USAGE, WHO_LIBS ": %s: %s", path,
			       path[0] != '/' ? "not an absolute path" : strerror(errno));
	base = strrchr(resolved, '/') + 1;
	snprintf(real, real_size, "%s", base);
	fd = open_regular(resolved, O_RDONLY, NULL);
	if (fd < 0)
		return err_sys(e, EXIT_USAGE, WHO_LIBS ": %s", resolved);
	if (elf_of_fd(fd, resolved, li, e) < 0) {
		close(fd);
		return err_wrap(e, WHO_LIBS);
	}
	close(fd);
	if (li->glibc_needed[0] != '\0' && im->glibc[0] == '\0')
		snprintf(why, why_size, "the host's %s (%s) needs GLIBC_%s, and the image has no "
			 "glibc (no libc.so.6 in its library directories)", base, resolved,
			 li->glibc_needed);
	else if (li->glibc_needed[0] != '\0' && glibc_version_cmp(li->glibc_needed, im->glibc) > 0)
		snprintf(why, why_size, "the host's %s (%s) needs GLIBC_%s, the image's glibc is %s "
			 "(%s)", base, resolved, li->glibc_needed, im->glibc, im->libc_path);
	else if (image_copy(im, li->soname[0] != '\0' ? li->soname : base, ipath, sizeof(ipath),
			    ireal, sizeof(ireal)) &&
		 strcmp(ireal, base) != 0)
		snprintf(why, why_size, "the image ships %s %s (%s -> %s), the host's is %s (%s)",
			 li->soname[0] != '\0' ? li->soname : base,
			 name_version(ireal)[0] != '\0' ? name_version(ireal) : "of another version",
			 ipath, ireal, name_version(base)[0] != '\0' ? name_version(base) : base,
			 resolved);
	return 0;
}

/* Binds one checked library under the name it was given and its soname. */
static int bind_lib(struct ctr_edits *d, const char *given, const char *real_path,
		    const struct elf_info *li, size_t from, struct err *e)
{
	const char *name = strrchr(given, '/') + 1;
	char dst[PATH_MAX];

	if (xsnprintf(dst, sizeof(dst), CTR_NETSTACK_DIR "/%s", name) < 0 ||
	    ctr_edits_host_bind(d, real_path, dst, true, from, e) < 0)
		return e->code != 0 ? -1 : err_set(e, EXIT_USAGE, WHO_LIBS ": %s: too long", given);
	if (li->soname[0] == '\0' || strcmp(li->soname, name) == 0)
		return 0;
	if (strchr(li->soname, '/') != NULL ||
	    xsnprintf(dst, sizeof(dst), CTR_NETSTACK_DIR "/%s", li->soname) < 0)
		return err_set(e, EXIT_USAGE, WHO_LIBS ": %s: soname '%s' is no file name", given,
			       li->soname);
	return ctr_edits_host_bind(d, real_path, dst, true, from, e);
}

static int libraries(struct ctr_setup *c, const struct image *im, struct strv *bound,
		     struct err *e)
{
	const struct strv *libs = c->ask.fabric_libs;
	struct ctr_edits *d = &c->spec.edits;
	size_t from;

	if (libs->n == 0)
		return 0;
	if ((from = ctr_edits_from(d, WHO_LIBS, e)) == (size_t)-1)
		return -1;
	for (size_t i = 0; i < libs->n; i++) {
		char real[NAME_MAX + 1], why[1500], rpath[PATH_MAX];
		struct elf_info li;

		if (check_lib(im, libs->v[i], &li, real, sizeof(real), why, sizeof(why), e) < 0)
			return -1;
		if (why[0] != '\0' && !c->ask.fabric_keep_image)
			return err_set(e, EXIT_CTRUN, WHO_LIBS " refused for this image: %s (set "
				       "[fabric] on_conflict = image to run without it, on the image's "
				       "own if it has one, or use an image that matches the host's "
				       "stack)", why);
		if (why[0] != '\0') {
			if (c->ask.verbose > 0 && !c->ask.quiet)
				fprintf(stderr, "ctrun: %s: not bound (on_conflict = image): %s\n",
					libs->v[i], why);
			continue;
		}
		if (realpath(libs->v[i], rpath) == NULL || bind_lib(d, libs->v[i], rpath, &li, from, e) < 0)
			return e->code != 0 ? -1 : err_sys(e, EXIT_USAGE, WHO_LIBS ": %s", libs->v[i]);
		if (strv_pushf(bound, "%s%s%s", strrchr(libs->v[i], '/') + 1,
			       name_version(real)[0] != '\0' ? " " : "", name_version(real)) < 0)
			return err_sys(e, EXIT_CTRUN, "fabric");
	}
	return 0;
}

/* A CDI device's library binds, when the device is one of [fabric]
 * devices: the same checks as [fabric] libraries; a library the image
 * cannot take is refused, or with on_conflict = image its bind goes (im
 * NULL: the image cannot be read, every one goes). */
static bool fabric_device(const struct ctr_setup *c, const char *who)
{
	return strv_find(c->ask.fabric_devices, who) >= 0;
}

static void drop_mount(struct ctr_edits *d, size_t i)
{
	free(d->mounts[i].src);
	free(d->mounts[i].dst);
	free(d->mounts[i].type);
	strv_free(&d->mounts[i].opts);
	memmove(&d->mounts[i], &d->mounts[i + 1], (d->nmounts - i - 1) * sizeof(d->mounts[0]));
	d->nmounts--;
}

static int cdi_libraries(struct ctr_setup *c, const struct image *im, struct strv *bound,
			 struct err *e)
{
	struct ctr_edits *d = &c->spec.edits;

	for (size_t i = 0; i < d->nmounts;) {
		const struct ctr_edit_mount *m = &d->mounts[i];
		char real[NAME_MAX + 1], why[1500], head[4] = "";
		struct elf_info li;
		struct stat st;
		int fd;

		/* Only regular files that are ELF: a spec binds its config too. */
		fd = m->bind && fabric_device(c, d->from.v[m->from]) ? open_regular(m->src, O_RDONLY, &st)
								    : -1;
		if (fd < 0 || pread(fd, head, 4, 0) != 4 || memcmp(head, "\177ELF", 4) != 0) {
			if (fd >= 0)
				close(fd);
			i++;
			continue;
		}
		close(fd);
		if (im == NULL) {
			drop_mount(d, i);
			continue;
		}
		if (check_lib(im, m->src, &li, real, sizeof(real), why, sizeof(why), e) < 0)
			return err_wrap(e, "CDI device %s", d->from.v[m->from]);
		if (why[0] != '\0' && !c->ask.fabric_keep_image)
			return err_set(e, EXIT_CTRUN, "CDI device %s ([fabric] devices) refused for this "
				       "image: %s (set [fabric] on_conflict = image to run without it, on "
				       "the image's own if it has one)", d->from.v[m->from], why);
		if (why[0] != '\0') {
			drop_mount(d, i);
			continue;
		}
		if (strv_pushf(bound, "%s%s%s", strrchr(m->dst, '/') + 1,
			       name_version(real)[0] != '\0' ? " " : "", name_version(real)) < 0)
			return err_sys(e, EXIT_CTRUN, "fabric");
		i++;
	}
	return 0;
}

/* lib_dirs: SRC[:DST] bound read-only as they are. */
static int lib_dirs(struct ctr_setup *c, struct err *e)
{
	const struct strv *dirs = c->ask.fabric_dirs;
	struct ctr_edits *d = &c->spec.edits;
	size_t from;

	if (dirs->n == 0)
		return 0;
	if ((from = ctr_edits_from(d, "[fabric] lib_dirs", e)) == (size_t)-1)
		return -1;
	for (size_t i = 0; i < dirs->n; i++) {
		char src[PATH_MAX];
		const char *colon = strchr(dirs->v[i], ':'), *dst = colon != NULL ? colon + 1
										  : dirs->v[i];
		size_t n = colon != NULL ? (size_t)(colon - dirs->v[i]) : strlen(dirs->v[i]);
		struct stat st;

		if (n == 0 || n >= sizeof(src) || dirs->v[i][0] != '/' || dst[0] != '/')
			return err_set(e, EXIT_USAGE, "[fabric] lib_dirs: '%s' is not SRC[:DST] with "
				       "absolute paths", dirs->v[i]);
		memcpy(src, dirs->v[i], n);
		src[n] = '\0';
		if (stat(src, &st) < 0 || !S_ISDIR(st.st_mode))
			return err_set(e, EXIT_USAGE, "[fabric] lib_dirs: %s is not a directory of "
				       "this node", src);
		if (ctr_edits_host_bind(d, src, dst, true, from, e) < 0)
			return -1;
	}
	return 0;
}

int ctr_netstack(struct ctr_setup *c, struct err *e)
{
	struct ctr_edits *d = &c->spec.edits;
	struct strv bound = { 0 };
	struct image im = { .rootfd = -1 };
	char list[2048] = "CTRUN_FABRIC_BOUND=";
	bool libs = c->ask.fabric_libs->n > 0 || c->ask.fabric_devices->n > 0;
	int rv = -1;

	if (libs && ctr_rootfs_dir(&c->spec) == NULL) {
		/* --dry-run, or a runtime that reads the image file itself. */
		if (c->ask.dry_run)
			goto env;
		if (!c->ask.fabric_keep_image)
			return err_set(e, EXIT_CTRUN, WHO_LIBS ": %s starts from the image file, whose "
				       "root ctrun cannot read before the start to check that it can "
				       "load them: unpack it (--image-mode unpack, or a directory "
				       "image) or use --runtime oci, or set [fabric] on_conflict = image "
				       "to run without them",
				       ctr_runtime_name(c->spec.rt));
		if (c->ask.verbose > 0 && !c->ask.quiet)
			fprintf(stderr, "ctrun: " WHO_LIBS " not bound: the image's root cannot be "
				"read before the start (on_conflict = image)\n");
		if (cdi_libraries(c, NULL, &bound, e) < 0)
			goto out;
		goto env;
	}
	if (libs && (image_open(&c->spec, &im, e) < 0 || libraries(c, &im, &bound, e) < 0 ||
		     cdi_libraries(c, &im, &bound, e) < 0))
		goto out;
	if (c->ask.fabric_libs->n > 0 && bound.n > 0)
		d->libdir = CTR_NETSTACK_DIR;
	if (bound.n > 0) {
		/* What ctrun bound, for `ctrun check`'s report (rank.h netlibs). */
		if (strv_join(&bound, list + strlen(list), sizeof(list) - strlen(list)) < 0)
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%zu libraries",
				 bound.n);
		if (ctr_edits_setenv(d, list, e) < 0)
			goto out;
	}
env:
	if (lib_dirs(c, e) < 0)
		goto out;
	for (size_t i = 0; i < c->ask.fabric_env->n; i++)
		if (ctr_edits_setenv(d, c->ask.fabric_env->v[i], e) < 0)
			goto out;
	rv = 0;
out:
	image_close(&im);
	strv_free(&bound);
	return rv;
}
