/* Unit tests: what a layer member does (layer_decide), from a table of
 * members and the decision each must get, the same for both writers of a
 * layer (layer.c on disk, squash/mlayer.c in memory).  The parent paths are
 * resolved by a table of the image's directory symlinks, as a back end
 * would resolve them: `lib -> usr/lib`, `evil -> /etc` (chroot: the image's
 * own etc), `gone` that cannot be resolved. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "unpack/layerrule.h"

/* The image's directory symlinks, resolved: a path starting with `from`
 * goes on from `to`. */
static const struct {
	const char *from, *to;
} links[] = {
	{ "lib", "usr/lib" },
	{ "evil", "etc" },
	{ "a/up", "b" },
};

static int resolves;

static int resolve(void *arg, const char *dir, char *out, size_t size)
{
	(void)arg;
	resolves++;
	if (strcmp(dir, "gone") == 0 || strncmp(dir, "gone/", 5) == 0) {
		errno = ELOOP;
		return -1;
	}
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		size_t n = strlen(links[i].from);

		if (strncmp(dir, links[i].from, n) == 0 && (dir[n] == '\0' || dir[n] == '/'))
			return snprintf(out, size, "%s%s", links[i].to, dir + n) < (int)size ? 0 : -1;
	}
	return snprintf(out, size, "%s", dir) < (int)size ? 0 : -1;
}

/* One row: the member, and its decision or the error it must get. */
struct row {
	const char *name;
	mode_t type;
	const char *hardlink;
	enum layer_action action;
	const char *path, *link, *base;
	const char *error; /* a part of the error line; NULL: no error */
};

#define REG S_IFREG
static const struct row rows[] = {
	/* The root's own entry: nothing. */
	{ "./", S_IFDIR, NULL, LAYER_SKIP, "", "", NULL, NULL },
	{ "/", S_IFDIR, NULL, LAYER_SKIP, "", "", NULL, NULL },
	/* Put at the cleaned path, the parent resolved. */
	{ "file", REG, NULL, LAYER_PUT, "file", "", "file", NULL },
	{ "./a//b/./file", REG, NULL, LAYER_PUT, "a/b/file", "", "file", NULL },
	{ "/a/dir/", S_IFDIR, NULL, LAYER_PUT, "a/dir", "", "dir", NULL },
	{ "lib/libc.so", REG, NULL, LAYER_PUT, "usr/lib/libc.so", "", "libc.so", NULL },
	{ "evil/passwd", REG, NULL, LAYER_PUT, "etc/passwd", "", "passwd", NULL },
	{ "a/up/x/s", S_IFLNK, NULL, LAYER_PUT, "b/x/s", "", "s", NULL },
	/* The last component is never followed: it is what is written. */
	{ "lib", S_IFDIR, NULL, LAYER_PUT, "lib", "", "lib", NULL },
	/* A `..` anywhere is refused. */
	{ "../x", REG, NULL, LAYER_SKIP, NULL, NULL, NULL,
	  "layer 1: member '../x' leaves the image (..): refused" },
	{ "a/../../x", REG, NULL, LAYER_SKIP, NULL, NULL, NULL, "leaves the image (..)" },
	{ "a/..", S_IFDIR, NULL, LAYER_SKIP, NULL, NULL, NULL, "leaves the image (..)" },
	/* Whiteouts: the named path, resolved as any other. */
	{ "a/.wh.b", REG, NULL, LAYER_WHITEOUT, "a/b", "", NULL, NULL },
	{ ".wh.top", REG, NULL, LAYER_WHITEOUT, "top", "", NULL, NULL },
	{ "lib/.wh.libc.so", REG, NULL, LAYER_WHITEOUT, "usr/lib/libc.so", "", NULL, NULL },
	{ "a/.wh..wh.x", REG, NULL, LAYER_WHITEOUT, "a/.wh.x", "", NULL, NULL },
	/* A whiteout of nothing, of the directory itself or its parent. */
	{ "a/.wh.", REG, NULL, LAYER_SKIP, NULL, NULL, NULL, "layer 1: bad whiteout 'a/.wh.'" },
	{ "a/.wh..", REG, NULL, LAYER_SKIP, NULL, NULL, NULL, "bad whiteout" },
	{ "a/.wh...", REG, NULL, LAYER_SKIP, NULL, NULL, NULL, "bad whiteout" },
	/* Opaque markers: their directory, resolved; the root's too. */
	{ "a/b/.wh..wh..opq", REG, NULL, LAYER_OPAQUE, "a/b", "", NULL, NULL },
	{ ".wh..wh..opq", REG, NULL, LAYER_OPAQUE, ".", "", NULL, NULL },
	{ "lib/.wh..wh..opq", REG, NULL, LAYER_OPAQUE, "usr/lib", "", NULL, NULL },
	/* Device nodes are left out (the runtime provides /dev); FIFOs are not. */
	{ "dev/sda", S_IFBLK, NULL, LAYER_SKIP, "dev/sda", "", "sda", NULL },
	{ "dev/null", S_IFCHR, NULL, LAYER_SKIP, "dev/null", "", "null", NULL },
	{ "run/fifo", S_IFIFO, NULL, LAYER_PUT, "run/fifo", "", "fifo", NULL },
	/* Hard links: the target resolved inside the image too. */
	{ "a/h", REG, "b/t", LAYER_LINK, "a/h", "b/t", "h", NULL },
	{ "a/h", REG, "/lib/t", LAYER_LINK, "a/h", "usr/lib/t", "h", NULL },
	{ "lib/h", REG, "lib", LAYER_LINK, "usr/lib/h", "lib", "h", NULL },
	{ "a/h", REG, "../t", LAYER_SKIP, NULL, NULL, NULL,
	  "layer 1: hard link 'a/h' -> '../t' leaves the image: refused" },
	{ "a/h", REG, "./", LAYER_SKIP, NULL, NULL, NULL, "leaves the image: refused" },
	/* A device node's hard link is still a device node. */
	{ "dev/h", S_IFCHR, "dev/null", LAYER_SKIP, "dev/h", "", "h", NULL },
	/* What cannot be resolved fails, naming the member. */
	{ "gone/x", REG, NULL, LAYER_SKIP, NULL, NULL, NULL, "layer 1: resolving 'gone/x'" },
	{ "a/h", REG, "gone/t", LAYER_SKIP, NULL, NULL, NULL, "resolving hard link 'gone/t'" },
};

static void test_each_member_gets_its_decision(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		struct layer_member m = { r->name, r->type, r->hardlink };
		struct layer_decision d;
		struct err e = { 0 };
		int rc = layer_decide(&m, resolve, NULL, true, "layer 1", &d, &e);

		print_message("%s%s%s\n", r->name, r->hardlink ? " -> " : "",
			      r->hardlink ? r->hardlink : "");
		if (r->error != NULL) {
			assert_int_equal(rc, -1);
			assert_int_equal(e.code, EXIT_CTRUN);
			assert_non_null(strstr(e.msg, r->error));
			continue;
		}
		assert_int_equal(rc, 0);
		assert_int_equal(d.action, r->action);
		assert_string_equal(d.path, r->path);
		assert_string_equal(d.link, r->link);
		if (r->base == NULL)
			assert_null(d.base);
		else
			assert_string_equal(d.base, r->base);
	}
}

/* A last component over NAME_MAX bytes: refused where the writer asks
 * (the tree in memory), put where the kernel refuses it (on disk). */
static void test_a_name_over_name_max_is_refused_when_asked(void **state)
{
	char name[NAME_MAX + 8];
	struct layer_member m = { name, S_IFREG, NULL };
	struct layer_decision d;
	struct err e = { 0 };

	(void)state;
	memcpy(name, "a/", 2);
	memset(name + 2, 'x', NAME_MAX + 1);
	name[NAME_MAX + 3] = '\0';
	assert_int_equal(layer_decide(&m, resolve, NULL, true, "layer 3", &d, &e), -1);
	assert_non_null(strstr(e.msg, "layer 3: path too long: 'a/xxx"));
	assert_int_equal(layer_decide(&m, resolve, NULL, false, "layer 3", &d, &e), 0);
	assert_int_equal(d.action, LAYER_PUT);
	assert_int_equal(strlen(d.base), NAME_MAX + 1);
	/* NAME_MAX itself is a name. */
	name[NAME_MAX + 2] = '\0';
	assert_int_equal(layer_decide(&m, resolve, NULL, true, "layer 3", &d, &e), 0);
	assert_int_equal(d.action, LAYER_PUT);
}

/* A path that no longer fits once its parent is resolved is refused. */
static void test_a_resolved_path_too_long_is_refused(void **state)
{
	static char name[PATH_MAX];
	struct layer_member m = { name, S_IFREG, NULL };
	struct layer_decision d;
	struct err e = { 0 };
	size_t n = PATH_MAX - 6;

	(void)state;
	/* lib/xx...x/f: fits as written, not as usr/lib/xx...x/f. */
	memcpy(name, "lib/", 4);
	for (size_t i = 4; i < n; i++)
		name[i] = i % 200 == 0 ? '/' : 'x';
	memcpy(name + n, "/f", 3);
	assert_int_equal(layer_decide(&m, resolve, NULL, false, "layer 2", &d, &e), -1);
	assert_non_null(strstr(e.msg, "layer 2: path too long: 'lib/xxx"));
	/* Without the link the same name fits. */
	memcpy(name, "lub/", 4);
	assert_int_equal(layer_decide(&m, resolve, NULL, false, "layer 2", &d, &e), 0);
	assert_int_equal(d.action, LAYER_PUT);
}

/* The root's entry and a `..` are decided before any resolving. */
static void test_nothing_is_resolved_for_a_refused_or_root_member(void **state)
{
	struct layer_member m = { "../etc/passwd", S_IFREG, NULL };
	struct layer_decision d;
	struct err e = { 0 };

	(void)state;
	resolves = 0;
	assert_int_equal(layer_decide(&m, resolve, NULL, true, "layer 1", &d, &e), -1);
	m.name = ".";
	assert_int_equal(layer_decide(&m, resolve, NULL, true, "layer 1", &d, &e), 0);
	assert_int_equal(d.action, LAYER_SKIP);
	m.name = "top";
	assert_int_equal(layer_decide(&m, resolve, NULL, true, "layer 1", &d, &e), 0);
	assert_int_equal(resolves, 0); /* a member at the root has no parent to resolve */
	m.name = "a/b";
	assert_int_equal(layer_decide(&m, resolve, NULL, true, "layer 1", &d, &e), 0);
	assert_int_equal(resolves, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_member_gets_its_decision),
		cmocka_unit_test(test_a_name_over_name_max_is_refused_when_asked),
		cmocka_unit_test(test_a_resolved_path_too_long_is_refused),
		cmocka_unit_test(test_nothing_is_resolved_for_a_refused_or_root_member),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
