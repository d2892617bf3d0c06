/* gpus.c - choosing a container's GPUs (see gpus.h). */
#include "gpus.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "slurmgpu.h"
#include "util.h"

/* The last KEY=VALUE wins, as in an exec'd environment. */
static const char *env_get(char *const *env, const char *key)
{
	size_t len = strlen(key);
	const char *v = NULL;

	for (char *const *p = env; p != NULL && *p != NULL; p++)
		if (strncmp(*p, key, len) == 0 && (*p)[len] == '=')
			v = *p + len + 1;
	return v;
}

static bool is_number(const char *s)
{
	return *s != '\0' && strspn(s, "0123456789") == strlen(s);
}

/* "GPU-" followed by hex digits and dashes, as nvidia-smi -L prints. */
static bool is_uuid(const char *s)
{
	return strncmp(s, "GPU-", 4) == 0 && s[4] != '\0' &&
	       strspn(s + 4, "0123456789abcdefABCDEF-") == strlen(s + 4) && strlen(s) < 80;
}

static bool all_digits(const char *s, size_t len)
{
	return len > 0 && len < 8 && strspn(s, "0123456789") == len;
}

bool hook_is_mig_id(const char *id)
{
	const char *colon = strchr(id, ':');

	if (strncmp(id, "MIG-", 4) == 0)
		return id[4] != '\0' && strlen(id) < 96 &&
		       strspn(id + 4, "0123456789abcdefABCDEFGPU-/") == strlen(id + 4);
	return colon != NULL && all_digits(id, (size_t)(colon - id)) &&
	       all_digits(colon + 1, strlen(colon + 1));
}

/* Splits a comma list; every entry must be a GPU index, a GPU-UUID or a
 * MIG device (mig.h: select.c resolves those). */
static int split_ids(const char *list, const char *source, struct strv *out, struct err *e)
{
	const char *p = list;

	while (*p != '\0') {
		size_t len = strcspn(p, ",");
		char id[96];

		if (len == 0 || len >= sizeof(id))
			return err_set(e, EXIT_USAGE, "%s='%s': empty or overlong GPU id", source,
				       list);
		memcpy(id, p, len);
		id[len] = '\0';
		if (!is_number(id) && !is_uuid(id) && !hook_is_mig_id(id))
			return err_set(e, EXIT_USAGE, "%s='%s': '%s' is not a GPU index or UUID, nor a "
				       "MIG device (MIG-UUID or GPU:MIG)", source, list, id);
		if (strv_push(out, id) < 0)
			return err_sys(e, EXIT_CTRUN, "gpus");
		p += len;
		if (*p == ',' && *++p == '\0')
			return err_set(e, EXIT_USAGE, "%s='%s': trailing comma", source, list);
	}
	return 0;
}

/* CUDA_VISIBLE_DEVICES may be relative to the step's GPUs (Slurm's
 * ConstrainDevices: 0,1 while SLURM_STEP_GPUS=2,3): core/slurmgpu.h's rule,
 * the one ctrun's containers follow.  Both lists must hold GPU ids. */
static int from_cuda_env(const char *cvd, const char *step, const char *step_src,
			 struct hook_gpu_choice *c, struct err *e)
{
	struct strv cv = { 0 }, sv = { 0 };
	int rv = -1, mapped;

	if (split_ids(cvd, "CUDA_VISIBLE_DEVICES", &cv, e) < 0 ||
	    (slurmgpu_names_gpus(step) && split_ids(step, step_src, &sv, e) < 0))
		goto out;
	mapped = slurmgpu_host(&cv, &sv, &c->ids);
	if (mapped < 0) {
		err_sys(e, EXIT_CTRUN, "gpus");
		goto out;
	}
	c->source = mapped ? "CUDA_VISIBLE_DEVICES (relative to SLURM_STEP_GPUS)"
			   : "CUDA_VISIBLE_DEVICES";
	c->kind = c->ids.n > 0 ? HOOK_GPUS_LIST : HOOK_GPUS_VOID;
	rv = 0;
out:
	strv_free(&cv);
	strv_free(&sv);
	return rv;
}

static int choose_source(const char *ann_gpus, char *const *env, struct hook_gpu_choice *c,
			 struct err *e)
{
	const char *nvd = env_get(env, "NVIDIA_VISIBLE_DEVICES");
	const char *cvd = env_get(env, "CUDA_VISIBLE_DEVICES");
	const char *step = env_get(env, "SLURM_STEP_GPUS");
	const char *step_src = "SLURM_STEP_GPUS";

	if (step == NULL) {
		step = env_get(env, "SLURM_JOB_GPUS");
		step_src = "SLURM_JOB_GPUS";
	}
	if (cvd != NULL && strcmp(cvd, "NoDevFiles") == 0)
		cvd = NULL;
	if (ann_gpus != NULL) {
		c->source = "annotation " "org.ctrun.gpus";
		if (split_ids(ann_gpus, c->source, &c->ids, e) < 0)
			return -1;
		c->kind = c->ids.n > 0 ? HOOK_GPUS_LIST : HOOK_GPUS_VOID;
		return 0;
	}
	/* An image's NVIDIA_VISIBLE_DEVICES=all (NGC images set it) means "the
	 * GPUs I am given": Slurm's per-step list, when there is one, is what
	 * was given.  Any other value is an explicit request and wins. */
	if (nvd != NULL && !(strcmp(nvd, "all") == 0 && (cvd != NULL || step != NULL))) {
		c->source = "NVIDIA_VISIBLE_DEVICES";
		if (*nvd == '\0' || strcmp(nvd, "void") == 0)
			c->kind = HOOK_GPUS_VOID;
		else if (strcmp(nvd, "none") == 0)
			c->kind = HOOK_GPUS_NONE;
		else if (strcmp(nvd, "all") == 0)
			c->kind = HOOK_GPUS_ALL;
		else if (split_ids(nvd, c->source, &c->ids, e) < 0)
			return -1;
		else
			c->kind = HOOK_GPUS_LIST;
		return 0;
	}
	if (cvd != NULL)
		return from_cuda_env(cvd, step, step_src, c, e);
	if (step != NULL && strcmp(step, "NoDevFiles") != 0) {
		c->source = step_src;
		if (split_ids(step, c->source, &c->ids, e) < 0)
			return -1;
		c->kind = c->ids.n > 0 ? HOOK_GPUS_LIST : HOOK_GPUS_VOID;
		return 0;
	}
	c->kind = HOOK_GPUS_UNSET;
	return 0;
}

/* Task mode: the annotation's (ctrun's decision), else CTRUN_GPU_MODE, else
 * Slurm's shape: more tasks than nodes in the step means one task per GPU,
 * the rule ctrun's own topology uses. */
static int is_task_mode(const char *ann_mode, char *const *env, bool *task, struct err *e)
{
	const char *mode = ann_mode != NULL ? ann_mode : env_get(env, "CTRUN_GPU_MODE");
	const char *nt = env_get(env, "SLURM_STEP_NUM_TASKS");
	const char *nn = env_get(env, "SLURM_STEP_NUM_NODES");
	long tasks, nodes;

	*task = false;
	if (mode != NULL) {
		if (strcmp(mode, "task") != 0 && strcmp(mode, "node") != 0)
			return err_set(e, EXIT_USAGE, "GPU mode '%s' is not node or task", mode);
		*task = strcmp(mode, "task") == 0;
		return 0;
	}
	if (nt != NULL && nn != NULL && parse_long(nt, 1, 1L << 30, &tasks) == 0 &&
	    parse_long(nn, 1, 1L << 30, &nodes) == 0)
		*task = tasks > nodes;
	return 0;
}

int hook_gpus_choose(const char *ann_gpus, const char *ann_mode, char *const *env,
		     struct hook_gpu_choice *c, struct err *e)
{
	const char *localid;
	bool task;

	memset(c, 0, sizeof(*c));
	c->pick = -1;
	if (choose_source(ann_gpus, env, c, e) < 0)
		goto fail;
	if (c->kind != HOOK_GPUS_LIST && c->kind != HOOK_GPUS_ALL)
		return 0;
	/* ctrun's annotation is already this task's set unless it says task. */
	if (ann_gpus != NULL && (ann_mode == NULL || strcmp(ann_mode, "task") != 0))
		return 0;
	if (is_task_mode(ann_mode, env, &task, e) < 0)
		goto fail;
	if (!task)
		return 0;
	localid = env_get(env, "SLURM_LOCALID");
	if (localid == NULL || parse_long(localid, 0, 1L << 20, &c->pick) < 0) {
		err_set(e, EXIT_USAGE, "task mode picks the GPU by the task's local rank, but "
			"SLURM_LOCALID is %s%s%s in the container's environment (pass it, or name "
			"the task's one GPU in %s)", localid ? "'" : "", localid ? localid : "unset",
			localid ? "'" : "", "org.ctrun.gpus");
		goto fail;
	}
	return 0;
fail:
	hook_gpu_choice_free(c);
	return -1;
}

void hook_gpu_choice_free(struct hook_gpu_choice *c)
{
	strv_free(&c->ids);
	c->kind = HOOK_GPUS_UNSET;
}

static const struct hook_gpu *find_gpu(const struct hook_gpu_inv *inv, const char *id)
{
	long minor;

	for (size_t i = 0; i < inv->n; i++)
		if (is_uuid(id) ? strcasecmp(inv->v[i].uuid, id) == 0
				: parse_long(id, 0, 1L << 20, &minor) == 0 && inv->v[i].minor == minor)
			return &inv->v[i];
	return NULL;
}

int hook_gpus_resolve(const struct hook_gpu_choice *c, const struct hook_gpu_inv *inv,
		      struct hook_gpu *out, size_t *n, struct err *e)
{
	bool seen[HOOK_GPU_MAX] = { false };
	size_t k = 0;

	*n = 0;
	if (c->kind == HOOK_GPUS_ALL) {
		for (size_t i = 0; i < inv->n; i++)
			seen[i] = true;
	} else if (c->kind == HOOK_GPUS_LIST) {
		for (size_t i = 0; i < c->ids.n; i++) {
			const struct hook_gpu *g = find_gpu(inv, c->ids.v[i]);

			if (g == NULL)
				return err_set(e, EXIT_USAGE, "%s names GPU '%s', which this host "
					       "does not have (no %s)", c->source, c->ids.v[i],
					       is_uuid(c->ids.v[i]) ? "such UUID in /proc/driver/nvidia"
								    : "such /dev/nvidiaN device");
			seen[g - inv->v] = true;
		}
	}
	/* The inventory is sorted by minor, so this is the numeric order. */
	for (size_t i = 0; i < inv->n; i++)
		if (seen[i])
			out[k++] = inv->v[i];
	if (c->pick >= 0 && k > 0) {
		out[0] = out[slurmgpu_pick(c->pick, k)];
		k = 1;
	}
	*n = k;
	return 0;
}

int hook_gpu_parse_information(const char *text, long *minor, char *uuid, size_t uuid_size)
{
	bool have_minor = false;

	if (uuid_size > 0)
		uuid[0] = '\0';
	for (const char *line = text; line != NULL && *line != '\0';) {
		const char *nl = strchr(line, '\n');
		size_t len = nl != NULL ? (size_t)(nl - line) : strlen(line);
		char buf[256], *v;

		if (len < sizeof(buf)) {
			memcpy(buf, line, len);
			buf[len] = '\0';
			v = strchr(buf, ':');
			if (v != NULL) {
				*v++ = '\0';
				v += strspn(v, " \t");
				v[strcspn(v, " \t\r")] = '\0';
				if (strcmp(buf, "Device Minor") == 0 &&
				    parse_long(v, 0, HOOK_GPU_MAX - 1, minor) == 0)
					have_minor = true;
				else if (strcmp(buf, "GPU UUID") == 0 && is_uuid(v) &&
					 strlen(v) < uuid_size)
					strcpy(uuid, v);
			}
		}
		line = nl != NULL ? nl + 1 : NULL;
	}
	return have_minor ? 0 : -1;
}

static int cmp_minor(const void *a, const void *b)
{
	const struct hook_gpu *x = a, *y = b;

	return (x->minor > y->minor) - (x->minor < y->minor);
}

/* Driver metadata for each GPU, when the driver is loaded. */
static void add_proc_info(const char *procdir, struct hook_gpu_inv *inv)
{
	char path[4096];
	struct dirent *de;
	DIR *d;

	if (xsnprintf(path, sizeof(path), "%s/gpus", procdir) < 0 || (d = opendir(path)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		char uuid[80], *text;
		long minor;

		if (de->d_name[0] == '.' || strlen(de->d_name) >= sizeof(inv->v[0].busid) ||
		    xsnprintf(path, sizeof(path), "%s/gpus/%s/information", procdir, de->d_name) < 0)
			continue;
		text = read_file(path, NULL);
		if (text == NULL)
			continue;
		if (hook_gpu_parse_information(text, &minor, uuid, sizeof(uuid)) == 0) {
			for (size_t i = 0; i < inv->n; i++) {
				if (inv->v[i].minor != minor)
					continue;
				snprintf(inv->v[i].uuid, sizeof(inv->v[i].uuid), "%s", uuid);
				snprintf(inv->v[i].busid, sizeof(inv->v[i].busid), "%s", de->d_name);
			}
		}
		free(text);
	}
	closedir(d);
}

int hook_gpu_inventory(const char *devdir, const char *procdir, struct hook_gpu_inv *inv,
		       struct err *e)
{
	struct dirent *de;
	int dfd;
	DIR *d;

	inv->n = 0;
	dfd = open(devdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || (d = fdopendir(dfd)) == NULL) {
		if (dfd >= 0)
			close(dfd);
		return err_sys(e, EXIT_CTRUN, "cannot list %s", devdir);
	}
	while ((de = readdir(d)) != NULL) {
		struct stat st;
		long n;

		if (strncmp(de->d_name, "nvidia", 6) != 0 ||
		    parse_long(de->d_name + 6, 0, HOOK_GPU_MAX - 2, &n) < 0 ||
		    !is_number(de->d_name + 6))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		/* Only the real thing: a character device of the NVIDIA major
		 * whose minor is its number. */
		if (!S_ISCHR(st.st_mode) || major(st.st_rdev) != HOOK_NVIDIA_MAJOR ||
		    minor(st.st_rdev) != (unsigned)n || inv->n >= HOOK_GPU_MAX)
			continue;
		memset(&inv->v[inv->n], 0, sizeof(inv->v[0]));
		inv->v[inv->n++].minor = n;
	}
	closedir(d);
	qsort(inv->v, inv->n, sizeof(inv->v[0]), cmp_minor);
	if (procdir != NULL)
		add_proc_info(procdir, inv);
	return 0;
}

int hook_gpus_renumbered(size_t n, char *buf, size_t size)
{
	size_t off = 0;

	if (size == 0)
		return -1;
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		int w = snprintf(buf + off, size - off, "%s%zu", i > 0 ? "," : "", i);

		if (w < 0 || (size_t)w >= size - off)
			return -1;
		off += (size_t)w;
	}
	return 0;
}
