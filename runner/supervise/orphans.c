/* orphans.c - a subreaper's inherited processes (see orphans.h). */
#include "orphans.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

size_t orphans_signal(pid_t self, bool (*known)(void *arg, pid_t pid), void *arg, int sig)
{
	char path[64], buf[4096];
	size_t n = 0, len;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%ld/children", (long)self);
	f = fopen(path, "re");
	if (f == NULL)
		return 0;
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = '\0';
	for (char *p = buf, *end; *p != '\0'; p = end) {
		long pid = strtol(p, &end, 10);

		if (end == p)
			break;
		if (pid <= 0 || known(arg, (pid_t)pid))
			continue;
		/* A zombie counts until reaped; ESRCH after that. */
		if (sig == 0 || kill((pid_t)pid, sig) == 0 || errno != ESRCH)
			n++;
	}
	return n;
}
