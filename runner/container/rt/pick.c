/* pick.c - which runtime runs an image: the preference per image kind, the
 * runtimes' binaries on PATH (see rt.h). */
#include "rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

/* PATH lookup of an executable. */
bool ctr_which(const char *bin, char *path, size_t size)
{
	const char *env = getenv("PATH"), *p, *end;

	if (strchr(bin, '/') != NULL)
		return access(bin, X_OK) == 0 && xsnprintf(path, size, "%s", bin) >= 0;
	if (env == NULL)
		env = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin";
	for (p = env;; p = end + 1) {
		struct stat st;

		end = strchrnul(p, ':');
		if (end > p && xsnprintf(path, size, "%.*s/%s", (int)(end - p), p, bin) >= 0 &&
		    stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0)
			return true;
		if (*end == '\0')
			break;
	}
	return false;
}

/* Runtimes in order of preference for each image kind under --runtime auto. */
static const enum ctr_runtime *preference(enum image_kind kind)
{
	static const enum ctr_runtime sqsh[] = { RT_ENROOT, RT_APPTAINER, RT_SINGULARITY, RT_OCI,
						 RT_NONE };
	static const enum ctr_runtime sif[] = { RT_APPTAINER, RT_SINGULARITY, RT_OCI, RT_NONE };
	static const enum ctr_runtime dir[] = { RT_OCI, RT_APPTAINER, RT_SINGULARITY, RT_NONE };
	static const enum ctr_runtime archive[] = { RT_OCI, RT_NONE };

	switch (kind) {
	case IMAGE_SQUASHFS:
		return sqsh;
	case IMAGE_SIF:
		return sif;
	case IMAGE_DIR:
		return dir;
	default:
		return archive;
	}
}

static bool fits(enum ctr_runtime rt, enum image_kind kind)
{
	for (const enum ctr_runtime *r = preference(kind); *r != RT_NONE; r++)
		if (*r == rt)
			return true;
	return false;
}

/* The binary of a runtime: OCI is runc, else crun (crun 1.8 refuses
 * rootless on cgroup v1 hybrid hosts, runc does not). */
static bool find(enum ctr_runtime rt, bool (*have)(const char *, char *, size_t), char *bin,
		 size_t size, struct strv *looked)
{
	static const char *const oci[] = { "runc", "crun", NULL };
	const char *one[] = { ctr_runtime_name(rt), NULL };
	const char *const *names = rt == RT_OCI ? oci : one;

	for (; *names != NULL; names++) {
		if (strv_find(looked, *names) < 0)
			strv_push(looked, *names);
		if (have(*names, bin, size))
			return true;
	}
	return false;
}

int ctr_pick_runtime(const char *want, enum image_kind kind, const char *image,
		     bool (*have)(const char *bin, char *path, size_t size), enum ctr_runtime *rt,
		     char *bin, size_t size, struct err *e)
{
	struct strv looked = { 0 };
	char list[512] = "";
	int rv = -1;

	if (have == NULL)
		have = ctr_which;
	*rt = RT_NONE;
	if (want == NULL || strcmp(want, "auto") == 0) {
		for (const enum ctr_runtime *r = preference(kind); *r != RT_NONE; r++) {
			if (find(*r, have, bin, size, &looked)) {
				*rt = *r;
				rv = 0;
				goto out;
			}
		}
		for (size_t i = 0; i < looked.n; i++) {
			size_t o = strlen(list);

			snprintf(list + o, sizeof(list) - o, "%s%s", i == 0 ? "" : i + 1 == looked.n ?
				 " and " : ", ", looked.v[i]);
		}
		err_set(e, EXIT_CTRUN, "no container runtime for %s (%s): looked for %s in PATH; "
			"install one of them or add its directory to PATH", image,
			image_kind_name(kind), list);
		goto out;
	}
	for (enum ctr_runtime r = RT_ENROOT; r <= RT_OCI; r++)
		if (strcmp(want, ctr_runtime_name(r)) == 0)
			*rt = r;
	if (*rt == RT_NONE) {
		err_set(e, EXIT_USAGE, "--runtime %s: unknown runtime (use auto, enroot, apptainer, "
			"singularity or oci)", want);
		goto out;
	}
	if (!fits(*rt, kind)) {
		char fit[128] = "";

		for (const enum ctr_runtime *r = preference(kind); *r != RT_NONE; r++) {
			size_t o = strlen(fit);

			snprintf(fit + o, sizeof(fit) - o, "%s%s", o ? " or " : "",
				 ctr_runtime_name(*r));
		}
		err_set(e, EXIT_CTRUN, "--runtime %s cannot run %s (%s): use --runtime %s", want,
			image, image_kind_name(kind), *fit ? fit : "auto");
		*rt = RT_NONE;
		goto out;
	}
	if (!find(*rt, have, bin, size, &looked)) {
		err_set(e, EXIT_CTRUN, "--runtime %s: %s not found in PATH; install it, add its "
			"directory to PATH or use --runtime auto", want,
			*rt == RT_OCI ? "runc or crun" : want);
		*rt = RT_NONE;
		goto out;
	}
	rv = 0;
out:
	strv_free(&looked);
	return rv;
}

