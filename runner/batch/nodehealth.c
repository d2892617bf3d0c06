/* nodehealth.c - one node's health check (see nodehealth.h). */
#include "nodehealth.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu.h"
#include "health.h"
#include "image.h"
#include "ref.h"
#include "slurmgpu.h"
#include "stage.h"
#include "util.h"

int nodehealth_gpu_files(const char *dev, char *const *ids, char *why, size_t size)
{
	for (size_t i = 0; ids[i] != NULL; i++) {
		char path[PATH_MAX];
		struct stat st;
		long n;

		/* A UUID names no device file: the CUDA check below covers it. */
		if (parse_long(ids[i], 0, 1 << 20, &n) < 0)
			continue;
		if (xsnprintf(path, sizeof(path), "%s/nvidia%ld", dev, n) < 0)
			continue;
		if (stat(path, &st) < 0 || !S_ISCHR(st.st_mode)) {
			snprintf(why, size, "GPU %ld of the job: %s is %s", n, path,
				 errno == ENOENT ? "missing" : "no character device");
			return -1;
		}
	}
	return 0;
}

/* The step's GPUs on this node as Slurm names them (host ids). */
static int step_gpus(const struct topo *t, char *const *envp, struct strv *out)
{
	const char *step = envp_get(envp, "SLURM_STEP_GPUS");

	if (step == NULL)
		step = envp_get(envp, "SLURM_JOB_GPUS");
	if (step != NULL && slurmgpu_names_gpus(step))
		return slurmgpu_split(step, out);
	return strv_extend(out, t->gpus.v);
}

static int check_gpus(const struct topo *t, char *const *envp, char *why, size_t size)
{
	struct strv ids = { 0 };
	const struct cudart *rt;
	char note[256];
	int count = 0, rv = 0;

	if (step_gpus(t, envp, &ids) < 0) {
		snprintf(why, size, "out of memory");
		return -1;
	}
	if (ids.n > 0 && nodehealth_gpu_files("/dev", ids.v, why, size) < 0)
		rv = -1;
	/* Only a runtime that answers can say a GPU is missing: a node with
	 * no driver (these test nodes) gets no verdict from it. */
	if (rv == 0 && ids.n > 0 && (rt = cudart_load(note, sizeof(note))) != NULL &&
	    rt->GetDeviceCount(&count) == CUDA_OK && (size_t)count < ids.n) {
		snprintf(why, size, "CUDA sees %d of the %zu GPUs Slurm gave the step here", count,
			 ids.n);
		rv = -1;
	}
	strv_free(&ids);
	return rv;
}

static int check_image(const struct options *o, char *const *envp, char *why, size_t size)
{
	char real[PATH_MAX];
	const char *local, *note;
	enum image_kind kind;
	struct err e = { 0 };

	if (o->image == NULL || ref_is_reference(o->image))
		return 0;
	if (realpath(o->image, real) == NULL) {
		snprintf(why, size, "image %s: %s", o->image, strerror(errno));
		return -1;
	}
	local = stage_local(real, envp, &note);
	if (image_detect(local, &kind, &e) < 0) {
		snprintf(why, size, "image %s: %s", local, e.msg);
		return -1;
	}
	return 0;
}

/* The site's command's verdict from its wait status (-1: killed at the
 * deadline) and its first line of output. */
static int site_verdict(const char *cmd, int ws, long timeout, const char *first, char *why,
			size_t size)
{
	if (ws >= 0 && WIFEXITED(ws) && WEXITSTATUS(ws) == 0)
		return 0;
	if (ws < 0)
		snprintf(why, size, "[run] health_check '%s' did not end within %ld s", cmd, timeout);
	else if (WIFEXITED(ws))
		snprintf(why, size, "[run] health_check '%s' exited with status %d%s%s", cmd,
			 WEXITSTATUS(ws), first[0] ? ": " : "", first);
	else
		snprintf(why, size, "[run] health_check '%s' was killed by signal %d%s%s", cmd,
			 WTERMSIG(ws), first[0] ? ": " : "", first);
	return -1;
}

/* The first line of what fd gives until its end or the deadline. */
static void first_line(int fd, long long deadline, char *out, size_t size)
{
	size_t len = 0;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		long long left = deadline - mono_ms();
		char buf[512];
		ssize_t got;

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			break;
		got = read(fd, buf, sizeof(buf));
		if (got <= 0)
			break;
		for (ssize_t i = 0; i < got && len + 1 < size; i++)
			out[len++] = buf[i];
	}
	out[len] = '\0';
	out[strcspn(out, "\n")] = '\0';
}

/* The site's command: its words, no shell, stdin on /dev/null, stdout and
 * stderr on a pipe, in a process group of its own (killed whole at the
 * deadline). */
static int check_site(const struct options *o, char *why, size_t size)
{
	long long deadline = mono_ms() + o->health_timeout * 1000 - 1000;
	char *words, *argv[64], first[256] = "", *save = NULL;
	int fds[2] = { -1, -1 }, ws, n = 0, rv = -1;
	pid_t pid;

	if (o->health_check == NULL)
		return 0;
	words = strdup(o->health_check);
	if (words == NULL || pipe2(fds, O_CLOEXEC) < 0) {
		snprintf(why, size, "[run] health_check: %s", strerror(errno));
		goto out;
	}
	for (char *w = strtok_r(words, " \t", &save); w != NULL && n < 63;
	     w = strtok_r(NULL, " \t", &save))
		argv[n++] = w;
	argv[n] = NULL;
	if (n == 0) {
		rv = 0;
		goto out;
	}
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);

		setpgid(0, 0);
		if (null >= 0)
			dup2(null, STDIN_FILENO);
		dup2(fds[1], STDOUT_FILENO);
		dup2(fds[1], STDERR_FILENO);
		execvp(argv[0], argv);
		dprintf(STDOUT_FILENO, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	fds[1] = -1;
	if (pid < 0) {
		snprintf(why, size, "[run] health_check: fork: %s", strerror(errno));
		goto out;
	}
	setpgid(pid, pid);
	first_line(fds[0], deadline, first, sizeof(first));
	/* What it started in its group goes with it. */
	ws = wait_child(pid, (long)(deadline - mono_ms()));
	kill(-pid, SIGKILL);
	rv = site_verdict(o->health_check, ws, o->health_timeout, first, why, size);
out:
	free(words);
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return rv;
}

int nodehealth_check(const struct options *o, const struct topo *t, char *const *envp,
		     char *why, size_t size)
{
	if (check_gpus(t, envp, why, size) < 0 || check_image(o, envp, why, size) < 0 ||
	    check_site(o, why, size) < 0)
		return -1;
	return 0;
}

int nodehealth_main(const struct options *o, const struct topo *t, char *const *envp)
{
	char why[400] = "";

	/* One line, printable: the batch ctrun reads it. */
	if (nodehealth_check(o, t, envp, why, sizeof(why)) < 0) {
		for (char *p = why; *p != '\0'; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				*p = ' ';
		printf("%s %s %s bad: %s\n", HEALTH_TAG, t->host, t->step_id, why[0] ? why : "?");
	} else {
		printf("%s %s %s ok\n", HEALTH_TAG, t->host, t->step_id);
	}
	fflush(stdout);
	return 0;
}
