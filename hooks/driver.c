/* driver.c - finding and planning the driver's libraries, tools and IPC
 * sockets (see driver.h). */
#include "driver.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inroot.h"
#include "state.h"
#include "util.h"

#if defined(__x86_64__)
#define MULTIARCH "x86_64-linux-gnu"
#elif defined(__aarch64__)
#define MULTIARCH "aarch64-linux-gnu"
#elif defined(__powerpc64__)
#define MULTIARCH "powerpc64le-linux-gnu"
#else
#define MULTIARCH "linux-gnu"
#endif

/* libnvidia-container's utility_libs and compute_libs (nvc_info.c): what
 * CUDA, NVML and the JIT need.  Graphics, video and display libraries are
 * left out: ctrun runs compute jobs. */
static const char *const driver_libs[] = {
	"libnvidia-ml.so",           /* NVML (nvidia-smi, PyTorch's device queries) */
	"libnvidia-cfg.so",          /* GPU configuration */
	"libnvidia-nscq.so",         /* NVSwitch topology */
	"libcuda.so",                /* CUDA driver API */
	"libcudadebugger.so",        /* CUDA debugger */
	"libnvidia-opencl.so",       /* OpenCL ICD */
	"libnvidia-gpucomp.so",      /* shared compiler */
	"libnvidia-ptxjitcompiler.so", /* PTX JIT (used by libcuda) */
	"libnvidia-fatbinaryloader.so", /* fatbin loader (old drivers) */
	"libnvidia-allocator.so",    /* allocator runtime */
	"libnvidia-compiler.so",     /* NVVM-PTX for OpenCL */
	"libnvidia-pkcs11.so",       /* confidential computing */
	"libnvidia-pkcs11-openssl3.so",
	"libnvidia-nvvm.so",         /* NVVM compiler (JIT LTO) */
	"libnvidia-tileiras.so",     /* tile IR JIT */
};

/* libnvidia-container's utility_bins and compute_bins. */
static const char *const driver_bins[] = {
	"nvidia-smi", "nvidia-debugdump", "nvidia-persistenced", "nvidia-cuda-mps-control",
	"nvidia-cuda-mps-server",
};

/* IPC endpoints, when the host runs the daemon. */
static const char *const driver_ipcs[] = {
	"/run/nvidia-persistenced/socket",
	"/run/nvidia-fabricmanager/socket",
	"/tmp/nvidia-mps", /* MPS pipe directory (CUDA_MPS_PIPE_DIRECTORY default) */
};

void hook_driver_version(char *buf, size_t size)
{
	char *text = read_file("/sys/module/nvidia/version", NULL);

	buf[0] = '\0';
	if (text == NULL) {
		/* "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat ..." */
		char *p;

		text = read_file("/proc/driver/nvidia/version", NULL);
		if (text == NULL)
			return;
		p = strstr(text, "Kernel Module");
		if (p != NULL) {
			p += strlen("Kernel Module");
			p += strspn(p, " \t");
			p[strspn(p, "0123456789.")] = '\0';
			snprintf(buf, size, "%s", p);
		}
		free(text);
		return;
	}
	text[strspn(text, "0123456789.")] = '\0';
	snprintf(buf, size, "%s", text);
	free(text);
}

const char *hook_driver_lib_name(const char *soname)
{
	for (size_t i = 0; i < sizeof(driver_libs) / sizeof(*driver_libs); i++) {
		size_t len = strlen(driver_libs[i]);

		if (strncmp(soname, driver_libs[i], len) == 0 &&
		    (soname[len] == '\0' || soname[len] == '.'))
			return driver_libs[i];
	}
	return NULL;
}

bool hook_driver_file_matches(const char *base, const char *name, const char *version)
{
	size_t len = strlen(name);
	const char *v = base + len + 1;

	if (strncmp(base, name, len) != 0 || base[len] != '.')
		return false;
	if (version[0] != '\0')
		return strcmp(v, version) == 0;
	/* No driver loaded: a version of at least two numbers (535.104.05),
	 * never a bare soname (libcuda.so.1) or a stub (libcuda.so). */
	return strspn(v, "0123456789.") == strlen(v) && strchr(v, '.') != NULL && v[0] != '.' &&
	       v[strlen(v) - 1] != '.' && strstr(v, "..") == NULL;
}

int hook_driver_libdir(const struct hook_root *r, char *buf, size_t size, struct err *e)
{
	char leaf[NAME_MAX + 1];
	struct stat st;
	bool debian = false;
	int dfd, ret;

	/* Debian and its derivatives use the multiarch directory scheme. */
	ret = hook_root_parent(r, "/etc/debian_version", false, &dfd, leaf, sizeof(leaf), e);
	if (ret < 0)
		return -1;
	if (ret == 0) {
		debian = fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0;
		close(dfd);
	}
	if (xsnprintf(buf, size, "%s", debian ? "/usr/lib/" MULTIARCH : "/usr/lib64") < 0)
		return err_set(e, EXIT_CTRUN, "libdir");
	return 0;
}

static int plan_libs(const struct hook_ldcache_entry *ents, size_t n, const char *version,
		     const char *libdir, struct hook_plan *p, long *nlibs, struct err *e)
{
	bool cuda_soname = false;
	char dst[PATH_MAX];

	for (size_t i = 0; i < n; i++) {
		const char *name = hook_driver_lib_name(ents[i].key);
		char real[PATH_MAX], *base;

		if (name == NULL || !hook_ldcache_native(ents[i].flags) ||
		    realpath(ents[i].value, real) == NULL)
			continue;
		base = basename(real);
		if (!hook_driver_file_matches(base, name, version))
			continue;
		if (xsnprintf(dst, sizeof(dst), "%s/%s", libdir, base) < 0)
			return err_set(e, EXIT_CTRUN, "%s: path too long", base);
		if (!hook_plan_has(p, dst)) {
			if (hook_plan_add(p, HOOK_ITEM_FILE, real, dst, e) < 0)
				return -1;
			++*nlibs;
		}
		/* The soname link the dynamic linker looks up. */
		if (strcmp(ents[i].key, base) != 0 && strchr(ents[i].key, '/') == NULL) {
			if (xsnprintf(dst, sizeof(dst), "%s/%s", libdir, ents[i].key) < 0 ||
			    hook_plan_add(p, HOOK_ITEM_LINK, base, dst, e) < 0)
				return err_set(e, EXIT_CTRUN, "%s: cannot plan link", ents[i].key);
			cuda_soname |= strcmp(ents[i].key, "libcuda.so.1") == 0;
		}
	}
	/* Programs dlopen("libcuda.so") although only -dev packages ship it. */
	if (cuda_soname && (xsnprintf(dst, sizeof(dst), "%s/libcuda.so", libdir) < 0 ||
			    hook_plan_add(p, HOOK_ITEM_LINK, "libcuda.so.1", dst, e) < 0))
		return -1;
	return 0;
}

static int plan_bins(const char *path, struct hook_plan *p, struct err *e)
{
	char dirs[4096];

	if (xsnprintf(dirs, sizeof(dirs), "%s%s/usr/bin:/usr/sbin:/bin:/sbin:/usr/local/bin",
		      path != NULL ? path : "", path != NULL && *path != '\0' ? ":" : "") < 0)
		return err_set(e, EXIT_CTRUN, "PATH too long");
	for (size_t i = 0; i < sizeof(driver_bins) / sizeof(*driver_bins); i++) {
		for (char *d = dirs; *d != '\0';) {
			size_t len = strcspn(d, ":");
			char cand[PATH_MAX], real[PATH_MAX], dst[PATH_MAX];
			struct stat st;

			if (len > 0 && d[0] == '/' &&
			    snprintf(cand, sizeof(cand), "%.*s/%s", (int)len, d, driver_bins[i]) <
				    (int)sizeof(cand) &&
			    realpath(cand, real) != NULL && stat(real, &st) == 0 &&
			    S_ISREG(st.st_mode) && (st.st_mode & 0111) != 0) {
				if (xsnprintf(dst, sizeof(dst), "/usr/bin/%s", driver_bins[i]) < 0 ||
				    hook_plan_add(p, HOOK_ITEM_FILE, real, dst, e) < 0)
					return -1;
				break;
			}
			d += len;
			if (*d == ':')
				d++;
		}
	}
	return 0;
}

/* Whether no other local user could have put what is at `path` there: no
 * directory on the way is writable by others, except a sticky one (/tmp)
 * whose entry on the way is root's or ours.  A daemon's own account below
 * /run passes (root gave it its directory); another user's /tmp/nvidia-mps
 * does not.  Once this holds, nobody else can swap the path either. */
static bool ipc_planted_by_nobody_else(const char *path)
{
	char sofar[PATH_MAX] = "";
	struct stat dir, st;
	uid_t me = geteuid();
	size_t len = 0;

	if (path[0] != '/' || lstat("/", &dir) < 0)
		return false;
	st = dir;
	for (const char *p = path + 1; *p != '\0';) {
		size_t n = strcspn(p, "/");

		if (n == 0 || len + 1 + n >= sizeof(sofar))
			return false;
		sofar[len++] = '/';
		memcpy(sofar + len, p, n);
		len += n;
		sofar[len] = '\0';
		if (lstat(sofar, &st) < 0)
			return false;
		if ((dir.st_mode & 022) != 0 && ((dir.st_mode & S_ISVTX) == 0 ||
						 (st.st_uid != 0 && st.st_uid != me)))
			return false;
		dir = st;
		p += n;
		p += *p == '/';
	}
	/* A pipe directory others may write would let them plant pipes in it. */
	return !S_ISDIR(st.st_mode) || (st.st_mode & 022) == 0 || (st.st_mode & S_ISVTX) != 0;
}

int hook_plan_ipcs(const char *const *paths, size_t n, struct hook_plan *p, struct err *e)
{
	for (size_t i = 0; i < n; i++) {
		struct stat st;

		if (lstat(paths[i], &st) < 0 || !(S_ISSOCK(st.st_mode) || S_ISDIR(st.st_mode)))
			continue;
		if (!ipc_planted_by_nobody_else(paths[i])) {
			fprintf(stderr, "ctrun-hook: warning: %s is not bound: another user could "
				"have made it (uid %u, mode %04o, in a directory others can write)\n",
				paths[i], (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
			continue;
		}
		if (hook_plan_add(p, HOOK_ITEM_IPC, paths[i], paths[i], e) < 0)
			return -1;
	}
	return 0;
}

long hook_plan_driver(const struct hook_ldcache_entry *ents, size_t n, const char *version,
		      const char *libdir, const char *path, struct hook_plan *p, struct err *e)
{
	long nlibs = 0;

	if (plan_libs(ents, n, version, libdir, p, &nlibs, e) < 0 || plan_bins(path, p, e) < 0 ||
	    hook_plan_ipcs(driver_ipcs, sizeof(driver_ipcs) / sizeof(*driver_ipcs), p, e) < 0)
		return -1;
	return nlibs;
}

int hook_driver_read_ldcache(const char *file, char **buf, struct hook_ldcache_entry **ents,
			     size_t *n, struct err *e)
{
	size_t len = 0;

	*ents = NULL;
	*n = 0;
	*buf = read_file(file, &len);
	if (*buf == NULL)
		return errno == ENOENT ? 0 : err_sys(e, EXIT_CTRUN, "%s", file);
	if (hook_ldcache_parse(*buf, len, ents, n, e) < 0)
		return err_wrap(e, "%s", file);
	return 0;
}

int hook_driver_files(const char *libdir, FILE *out, struct err *e)
{
	struct hook_ldcache_entry *ents = NULL;
	struct hook_plan p = { 0 };
	char *cache = NULL, version[64];
	size_t n = 0;
	int rv = -1;

	if (!hook_path_is_clean(libdir))
		return err_set(e, EXIT_USAGE, "library directory '%s' is not a clean absolute path",
			       libdir);
	hook_driver_version(version, sizeof(version));
	if (hook_driver_read_ldcache("/etc/ld.so.cache", &cache, &ents, &n, e) < 0 ||
	    hook_plan_driver(ents, n, version, libdir, getenv("PATH"), &p, e) < 0)
		goto out;
	for (size_t i = 0; i < p.n; i++) {
		const struct hook_item *it = &p.v[i];
		const char *src = it->src;

		/* A runtime that binds files cannot make links: bind the
		 * library itself under its soname too. */
		if (it->kind == HOOK_ITEM_LINK) {
			src = NULL;
			for (size_t j = 0; j < p.n && src == NULL; j++) {
				const char *base = strrchr(p.v[j].dst, '/');

				if (p.v[j].kind == HOOK_ITEM_FILE && base != NULL &&
				    strcmp(base + 1, it->src) == 0)
					src = p.v[j].src;
			}
			/* libcuda.so -> libcuda.so.1 -> the file: one more hop. */
			for (size_t j = 0; j < p.n && src == NULL; j++) {
				const char *base = strrchr(p.v[j].dst, '/');

				if (p.v[j].kind == HOOK_ITEM_LINK && base != NULL &&
				    strcmp(base + 1, it->src) == 0)
					for (size_t k = 0; k < p.n && src == NULL; k++) {
						const char *b2 = strrchr(p.v[k].dst, '/');

						if (p.v[k].kind == HOOK_ITEM_FILE && b2 != NULL &&
						    strcmp(b2 + 1, p.v[j].src) == 0)
							src = p.v[k].src;
					}
			}
			if (src == NULL)
				continue;
		}
		fprintf(out, "%s %s\n", src, it->dst);
	}
	rv = fflush(out) == 0 ? 0 : err_sys(e, EXIT_CTRUN, "stdout");
out:
	hook_plan_free(&p);
	free(ents);
	free(cache);
	return rv;
}

bool hook_image_has_libcuda(const struct hook_root *r, const char *libdir, const char *version)
{
	char path[256];
	struct stat st;
	bool found;
	int fd;

	if (snprintf(path, sizeof(path), "%s/libcuda.so.%s", libdir,
		     version[0] != '\0' ? version : "1") >= (int)sizeof(path))
		return false;
	/* As the container will see it: its links followed inside it (an
	 * absolute libcuda.so.1 -> /usr/lib/... is the image's own file),
	 * never the host's file of the same name. */
	fd = inroot_open(r->fd, path, O_PATH, 0, INROOT_CHROOT, NULL);
	if (fd < 0)
		return false;
	found = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
	close(fd);
	return found;
}
