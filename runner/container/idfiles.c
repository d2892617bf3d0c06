/* idfiles.c - the container's /etc/passwd and /etc/group with the caller
 * in them (see idfiles.h). */
#include "idfiles.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

struct text {
	char *buf;
	size_t len, cap;
	bool failed;
};

static void put(struct text *t, const char *s, size_t n)
{
	if (t->failed)
		return;
	if (t->len + n + 1 > t->cap) {
		size_t cap = (t->len + n + 1) * 2;
		char *b = realloc(t->buf, cap);

		if (b == NULL) {
			t->failed = true;
			return;
		}
		t->buf = b;
		t->cap = cap;
	}
	memcpy(t->buf + t->len, s, n);
	t->len += n;
	t->buf[t->len] = '\0';
}

/* A host field that goes into a line: no ':' (a field more) nor newline
 * (a line more). */
static int field_ok(const char *what, const char *v, struct err *e)
{
	if (v != NULL && v[strcspn(v, ":\n\r")] != '\0')
		return err_set(e, EXIT_CTRUN, "your %s '%s' holds ':' or a newline, which the "
			       "container's /etc/passwd cannot carry: ask the administrator, or "
			       "run with --root", what, v);
	return 0;
}

/* Field k (0-based) of a line of n bytes, as a pointer and length. */
static bool field(const char *line, size_t n, unsigned k, const char **f, size_t *flen)
{
	const char *p = line, *end = line + n;

	for (unsigned i = 0; i < k; i++) {
		const char *c = memchr(p, ':', (size_t)(end - p));

		if (c == NULL)
			return false;
		p = c + 1;
	}
	const char *c = memchr(p, ':', (size_t)(end - p));

	*f = p;
	*flen = (size_t)((c != NULL ? c : end) - p);
	return true;
}

static bool field_is(const char *line, size_t n, unsigned k, const char *want)
{
	const char *f;
	size_t fl;

	return field(line, n, k, &f, &fl) && fl == strlen(want) && memcmp(f, want, fl) == 0;
}

/* `first`, then the image's lines but those naming `name` (field 0) or
 * `id` (field 2); `fallback` when the image has no file. */
static int merge(const char *first, const char *image, size_t len, const char *name,
		 const char *id, const char *fallback, char **out, size_t *out_len,
		 struct err *e)
{
	struct text t = { 0 };

	put(&t, first, strlen(first));
	if (image == NULL && fallback != NULL)
		put(&t, fallback, strlen(fallback));
	for (size_t off = 0; image != NULL && off < len;) {
		const char *line = image + off, *nl = memchr(line, '\n', len - off);
		size_t n = nl != NULL ? (size_t)(nl - line) : len - off;

		off += n + (nl != NULL);
		if (n == 0 || memchr(line, '\0', n) != NULL || field_is(line, n, 0, name) ||
		    field_is(line, n, 2, id))
			continue;
		put(&t, line, n);
		put(&t, "\n", 1);
	}
	if (t.failed) {
		free(t.buf);
		return err_sys(e, EXIT_CTRUN, "generating the container's user database");
	}
	*out = t.buf;
	*out_len = t.len;
	return 0;
}

int idfiles_passwd(const struct idfiles_user *u, const char *image, size_t len, char **out,
		   size_t *out_len, struct err *e)
{
	char first[8192], id[32];

	if (field_ok("user name", u->name, e) < 0 || field_ok("home directory", u->home, e) < 0 ||
	    field_ok("login shell", u->shell, e) < 0 || field_ok("full name (gecos)", u->gecos, e) < 0)
		return -1;
	if (u->name[0] == '\0')
		return err_set(e, EXIT_CTRUN, "your user name is empty");
	if (xsnprintf(first, sizeof(first), "%s:x:%u:%u:%s:%s:%s\n", u->name, (unsigned)u->uid,
		      (unsigned)u->gid, u->gecos != NULL ? u->gecos : "", u->home, u->shell) < 0 ||
	    xsnprintf(id, sizeof(id), "%u", (unsigned)u->uid) < 0)
		return err_set(e, EXIT_CTRUN, "your passwd entry is too long for the container's "
			       "/etc/passwd");
	return merge(first, image, len, u->name, id,
		     u->uid != 0 ? "root:x:0:0:root:/root:/bin/sh\n" : NULL, out, out_len, e);
}

int idfiles_group(const struct idfiles_user *u, const char *image, size_t len, char **out,
		  size_t *out_len, struct err *e)
{
	char first[512], id[32];

	if (field_ok("group name", u->group, e) < 0)
		return -1;
	if (u->group[0] == '\0')
		return err_set(e, EXIT_CTRUN, "your group name is empty");
	if (xsnprintf(first, sizeof(first), "%s:x:%u:\n", u->group, (unsigned)u->gid) < 0 ||
	    xsnprintf(id, sizeof(id), "%u", (unsigned)u->gid) < 0)
		return err_set(e, EXIT_CTRUN, "your group name is too long for the container's "
			       "/etc/group");
	return merge(first, image, len, u->group, id, u->gid != 0 ? "root:x:0:\n" : NULL, out,
		     out_len, e);
}
