/* progress.c - the stderr progress meter (see progress.h). */
#include "progress.h"
#include "util.h"

#include <stdio.h>
#include <time.h>

static void draw(struct progress *p)
{
	double mb = (double)p->done / 1048576.0, s = (double)(mono_ms() - p->start_ms) / 1000.0;

	if (p->total > 0)
		fprintf(stderr, "\rctrun: %s: %3d%% (%.0f/%.0f MB, %.0f MB/s) ", p->what,
			(int)(p->done * 100 / p->total), mb, (double)p->total / 1048576.0,
			s > 0.05 ? mb / s : 0.0);
	else
		fprintf(stderr, "\rctrun: %s: %.0f MB (%.0f MB/s) ", p->what, mb, s > 0.05 ? mb / s : 0.0);
	fflush(stderr);
	p->drawn = true;
}

void progress_start(struct progress *p, bool on, const char *what, unsigned long long total)
{
	p->on = on;
	p->what = what;
	p->total = total;
	p->done = 0;
	p->last_ms = 0;
	p->start_ms = mono_ms();
	p->drawn = false;
}

void progress_add(struct progress *p, unsigned long long n)
{
	long long t;

	if (!p->on)
		return;
	p->done += n;
	if (p->total > 0 && p->done > p->total)
		p->done = p->total;
	t = mono_ms();
	if (t - p->last_ms < 200)
		return;
	p->last_ms = t;
	draw(p);
}

void progress_end(struct progress *p, bool ok)
{
	if (!p->on || !p->drawn)
		return;
	if (ok && p->total > 0)
		p->done = p->total;
	draw(p);
	fputc('\n', stderr);
}
