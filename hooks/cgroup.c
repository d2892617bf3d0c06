/* cgroup.c - v1 device cgroup rules for the bound devices (see cgroup.h). */
#include "cgroup.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "state.h"
#include "util.h"

/* The devices controller's path from /proc/PID/cgroup ("5:devices:/t1"). */
static int devices_path(pid_t pid, char *out, size_t size)
{
	char file[64], *text, *line;
	int rv = -1;

	if (pid > 0 ? xsnprintf(file, sizeof(file), "/proc/%d/cgroup", (int)pid) < 0
		    : xsnprintf(file, sizeof(file), "/proc/self/cgroup") < 0)
		return -1;
	text = read_file(file, NULL);
	if (text == NULL)
		return -1;
	for (line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n")) {
		char *ctl = strchr(line, ':'), *path;

		if (ctl == NULL || (path = strchr(ctl + 1, ':')) == NULL)
			continue;
		*path++ = '\0';
		if (strcmp(ctl + 1, "devices") != 0)
			continue;
		/* "/" is the root cgroup (or a cgroup namespace hiding the real
		 * one): never widen that. */
		if (strcmp(path, "/") != 0 && hook_path_is_clean(path) &&
		    xsnprintf(out, size, "/sys/fs/cgroup/devices%s/devices.allow", path) >= 0)
			rv = 0;
		break;
	}
	free(text);
	return rv;
}

int hook_cgroup_allow(pid_t pid, const struct hook_plan *p)
{
	char allow[4096];
	int fd, written = 0;

	if (devices_path(pid, allow, sizeof(allow)) < 0)
		return 0;
	fd = open(allow, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0; /* rootless, or no v1 devices controller mounted */
	for (size_t i = 0; i < p->n; i++) {
		char rule[64];
		struct stat st;
		int len;

		if (p->v[i].kind != HOOK_ITEM_DEV || fstat(p->v[i].srcfd, &st) < 0)
			continue;
		len = snprintf(rule, sizeof(rule), "c %u:%u rwm", major(st.st_rdev),
			       minor(st.st_rdev));
		/* One rule per write(2): the kernel parses one per call. */
		if (len > 0 && write_all(fd, rule, (size_t)len) == 0)
			written++;
	}
	close(fd);
	return written;
}
