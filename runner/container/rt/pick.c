/* pick.c - which runtime runs an image: the driver table's ranks per image
 * kind, the drivers' binaries on PATH, and ctrun's own start in a
 * runtime's place where that runtime adds nothing (see rt.h, drivers.h). */
#include "drivers.h"

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

/* A driver's binary on PATH, the first of its list found; every name
 * asked for is noted once in looked. */
static bool find(const struct ctr_driver *d, bool (*have)(const char *, char *, size_t),
		 char *bin, size_t size, struct strv *looked)
{
	for (const char *const *b = d->bins; *b != NULL; b++) {
		if (strv_find(looked, *b) < 0)
			strv_push(looked, *b);
		if (have(*b, bin, size))
			return true;
	}
	return false;
}

/* "a, b and c" (sep ", " and last " and ") or "a or b" into buf. */
static void join(const char *const *v, size_t n, const char *sep, const char *last, char *buf,
		 size_t size)
{
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		size_t o = strlen(buf);

		snprintf(buf + o, size - o, "%s%s", i == 0 ? "" : i + 1 == n ? last : sep, v[i]);
	}
}

/* auto found d (its binary in bin): ctrun's own start instead (d's
 * auto_own, its binary into bin) where that is installed and runs the kind
 * and d as configured here adds nothing to a container (its adds). */
static const struct ctr_driver *own_start(const struct ctr_pick *q, const struct ctr_driver *d,
					  char *bin, size_t size, struct strv *looked)
{
	const struct ctr_driver *own = d->auto_own != NULL ? ctr_driver_named(d->auto_own) : NULL;
	bool (*adds)(const struct ctr_driver *, const char *, char *const *, char *, size_t) =
		q->adds != NULL ? q->adds : d->adds;
	char own_bin[4096], why[1024] = "";

	if (own == NULL || adds == NULL || !ctr_driver_runs(own, q->kind) ||
	    !find(own, q->have, own_bin, sizeof(own_bin), looked))
		return d;
	if (adds(d, bin, q->envp, why, sizeof(why))) {
		if (q->note != NULL)
			snprintf(q->note, q->note_size, "--runtime auto: %s for %s, not %s (%s): %s",
				 d->name, q->image, own->name, own_bin, why);
		return d;
	}
	if (q->note != NULL)
		snprintf(q->note, q->note_size, "--runtime auto: %s (%s) for %s, not %s: %s's "
			 "configuration here adds nothing to what ctrun's own start gives a "
			 "container, which is faster (--runtime %s to use %s)", own->name, own_bin,
			 q->image, d->name, d->name, d->name, d->name);
	if (xsnprintf(bin, size, "%s", own_bin) < 0)
		return d;
	return own;
}

/* --runtime auto: the first driver of the kind's order with a binary on
 * PATH (or ctrun's own start in its place, own_start), or NULL. */
static const struct ctr_driver *pick_auto(const struct ctr_pick *q, char *bin, size_t size,
					  struct strv *looked)
{
	const struct ctr_driver *order[32];
	size_t n = ctr_driver_auto(q->kind, order, sizeof(order) / sizeof(order[0]));

	for (size_t i = 0; i < n; i++) {
		const struct ctr_driver *fast = q->start_fast && order[i]->start_fast != NULL ?
			ctr_driver_named(order[i]->start_fast) : NULL;

		if (fast != NULL && find(fast, q->have, bin, size, looked)) {
			if (q->note != NULL)
				snprintf(q->note, q->note_size, "--runtime auto: %s (%s) for %s, not "
					 "%s: it starts a container faster", fast->name, bin, q->image,
					 order[i]->name);
			return fast;
		}
		if (find(order[i], q->have, bin, size, looked))
			return own_start(q, order[i], bin, size, looked);
	}
	return NULL;
}

/* --runtime auto, enroot, ...: every name of the table. */
static void names(char *buf, size_t size)
{
	const char *v[33] = { "auto" };
	size_t n = 1;

	for (const struct ctr_driver *const *d = ctr_drivers; *d != NULL && n < 33; d++)
		v[n++] = (*d)->name;
	join(v, n, ", ", " or ", buf, size);
}

int ctr_pick_runtime(const struct ctr_pick *q, const struct ctr_driver **rt, char *bin,
		     size_t size, struct err *e)
{
	struct ctr_pick p = *q;
	const char *want = q->want, *image = q->image;
	enum image_kind kind = q->kind;
	const struct ctr_driver *d, *order[32];
	struct strv looked = { 0 };
	char list[512];
	bool found;

	if (p.have == NULL)
		p.have = ctr_which;
	if (p.note != NULL && p.note_size > 0)
		p.note[0] = '\0';
	*rt = NULL;
	if (want == NULL || strcmp(want, "auto") == 0) {
		*rt = pick_auto(&p, bin, size, &looked);
		join((const char *const *)looked.v, looked.n, ", ", " and ", list, sizeof(list));
		strv_free(&looked);
		if (*rt != NULL)
			return 0;
		return err_set(e, EXIT_CTRUN, "no container runtime for %s (%s): looked for %s in "
			       "PATH; install one of them or add its directory to PATH", image,
			       image_kind_name(kind), list);
	}
	d = ctr_driver_named(want);
	if (d == NULL) {
		names(list, sizeof(list));
		return err_set(e, EXIT_USAGE, "--runtime %s: unknown runtime (use %s)", want, list);
	}
	if (!ctr_driver_runs(d, kind)) {
		const char *v[32] = { 0 };
		size_t n = ctr_driver_auto(kind, order, sizeof(order) / sizeof(order[0]));

		for (size_t i = 0; i < n; i++)
			v[i] = order[i]->name;
		join(v, n, " or ", " or ", list, sizeof(list));
		return err_set(e, EXIT_CTRUN, "--runtime %s cannot run %s (%s): use --runtime %s",
			       want, image, image_kind_name(kind), n > 0 ? list : "auto");
	}
	found = find(d, p.have, bin, size, &looked);
	strv_free(&looked);
	if (!found) {
		size_t n = 0;

		while (d->bins[n] != NULL)
			n++;
		join(d->bins, n, " or ", " or ", list, sizeof(list));
		return err_set(e, EXIT_CTRUN, "--runtime %s: %s not found in PATH; install it, add "
			       "its directory to PATH or use --runtime auto", want, list);
	}
	*rt = d;
	return 0;
}
