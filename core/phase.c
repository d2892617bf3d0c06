/* phase.c - the start-up timeline (see phase.h). */
#include "phase.h"
#include "util.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PHASES_MAX 16

static struct {
	const char *name;
	double at; /* seconds, CLOCK_MONOTONIC */
} marks[PHASES_MAX];
static size_t nmarks;

/* When this process started: its start time in /proc/self/stat (clock
 * ticks since boot, the same clock as CLOCK_MONOTONIC without suspend). */
static double process_start(void)
{
	char buf[1024], *p;
	unsigned long long ticks = 0;
	FILE *f = fopen("/proc/self/stat", "re");
	size_t n;

	if (f == NULL)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* the command name may hold spaces */
	if (p == NULL)
		return -1;
	/* Field 22 is the start time; after ')' come fields 3.. */
	for (int field = 2; p != NULL && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (p == NULL || sscanf(p + 1, "%llu", &ticks) != 1)
		return -1;
	return (double)ticks / (double)sysconf(_SC_CLK_TCK);
}

void phase_mark(const char *name)
{
	if (nmarks < PHASES_MAX) {
		marks[nmarks].name = name;
		marks[nmarks].at = (double)mono_ns() / 1e9;
		nmarks++;
	}
}

size_t phase_rows(struct phase_row *rows, size_t max)
{
	double start = process_start(), prev;
	size_t n = 0;

	if (nmarks == 0 || max == 0)
		return 0;
	if (start < 0 || start > marks[0].at)
		start = marks[0].at;
	prev = start;
	for (size_t i = 0; i < nmarks && n + 1 < max; i++) {
		rows[n].name = marks[i].name;
		rows[n++].ms = (marks[i].at - prev) * 1e3;
		prev = marks[i].at;
	}
	rows[n].name = "total";
	rows[n++].ms = (prev - start) * 1e3;
	return n;
}

int phase_encode(char *buf, size_t size, const char *prefix)
{
	struct phase_row rows[PHASE_ROWS_MAX];
	size_t n = phase_rows(rows, PHASE_ROWS_MAX), len = 0;
	int count = 0;

	if (size == 0)
		return -1;
	buf[0] = '\0';
	for (size_t i = 0; i + 1 < n; i++) {
		int k;

		if (strncmp(rows[i].name, prefix, strlen(prefix)) != 0)
			continue;
		k = snprintf(buf + len, size - len, "%s%s=%.17g", count ? ";" : "", rows[i].name,
			     rows[i].ms);
		if (k < 0 || (size_t)k >= size - len)
			return -1;
		len += (size_t)k;
		count++;
	}
	return count;
}

void phase_report(FILE *f, const char *host)
{
	struct phase_row rows[PHASE_ROWS_MAX];
	size_t n = phase_rows(rows, PHASE_ROWS_MAX);

	if (n == 0)
		return;
	fprintf(f, "ctrun: timings on %s:", host);
	for (size_t i = 0; i + 1 < n; i++)
		fprintf(f, "%s %s %.1f ms", i ? "," : "", rows[i].name, rows[i].ms);
	fprintf(f, "; total %.1f ms\n", rows[n - 1].ms);
}
