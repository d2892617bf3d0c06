/* Unit tests: the container's /etc/passwd and /etc/group with the caller
 * in them (runner/container/idfiles.c, pure) and their making from an
 * image's files (ident.c: read inside the image's root, bounded), with
 * hostile images: a huge file, a symlink out of the image, a FIFO, no
 * file, no /etc, no trailing newline, the user already there with another
 * home. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "container.h"
#include "drivers.h"
#include "idfiles.h"
#include "rootpath.h"
#include "util.h"

static const struct idfiles_user alice = {
	.name = "alice", .uid = 1003, .gid = 1005, .gecos = "Alice A", .home = "/home/alice",
	.shell = "/bin/bash", .group = "physics",
};

static char *passwd_of(const struct idfiles_user *u, const char *image, int want_rc,
		       struct err *e)
{
	char *out = NULL;
	size_t len = 0;

	assert_int_equal(idfiles_passwd(u, image, image != NULL ? strlen(image) : 0, &out, &len, e),
			 want_rc);
	if (out != NULL)
		assert_int_equal(strlen(out), len);
	return out;
}

static void test_user_first_then_the_images_lines(void **state)
{
	struct err e = { 0 };
	char *out;

	(void)state;
	out = passwd_of(&alice, "root:x:0:0:root:/root:/bin/sh\ndaemon:x:1:1::/:/bin/false\n", 0, &e);
	assert_string_equal(out, "alice:x:1003:1005:Alice A:/home/alice:/bin/bash\n"
				 "root:x:0:0:root:/root:/bin/sh\n"
				 "daemon:x:1:1::/:/bin/false\n");
	free(out);
}

/* The image has the name with another home, or another name with the uid:
 * ours is the one getpwnam and getpwuid find (enroot keeps its own first too). */
static void test_the_user_already_in_the_image_is_replaced(void **state)
{
	struct err e = { 0 };
	char *out;

	(void)state;
	out = passwd_of(&alice, "root:x:0:0:root:/root:/bin/sh\n"
				"alice:x:1000:1000::/nonexistent:/bin/sh\n"
				"builder:x:1003:1003::/build:/bin/sh\n"
				"alicex:x:7:7::/:/bin/sh\n", 0, &e);
	assert_string_equal(out, "alice:x:1003:1005:Alice A:/home/alice:/bin/bash\n"
				 "root:x:0:0:root:/root:/bin/sh\n"
				 "alicex:x:7:7::/:/bin/sh\n");
	free(out);
}

/* No newline at the end: the next line must not glue onto it; blank
 * lines and lines holding NUL go. */
static void test_last_line_without_newline_and_odd_bytes(void **state)
{
	struct err e = { 0 };
	static const char img[] = "root:x:0:0:root:/root:/bin/sh\n\nweird\0:x:5:5::/:\nlast:x:9:9::/:/bin/sh";
	char *out = NULL;
	size_t len = 0;

	(void)state;
	assert_int_equal(idfiles_passwd(&alice, img, sizeof(img) - 1, &out, &len, &e), 0);
	assert_string_equal(out, "alice:x:1003:1005:Alice A:/home/alice:/bin/bash\n"
				 "root:x:0:0:root:/root:/bin/sh\n"
				 "last:x:9:9::/:/bin/sh\n");
	free(out);
}

static void test_no_image_file_gets_root_too(void **state)
{
	struct err e = { 0 };
	struct idfiles_user root = alice;
	char *out;

	(void)state;
	out = passwd_of(&alice, NULL, 0, &e);
	assert_string_equal(out, "alice:x:1003:1005:Alice A:/home/alice:/bin/bash\n"
				 "root:x:0:0:root:/root:/bin/sh\n");
	free(out);
	/* An empty file is a file: the image said who is there. */
	out = passwd_of(&alice, "", 0, &e);
	assert_string_equal(out, "alice:x:1003:1005:Alice A:/home/alice:/bin/bash\n");
	free(out);
	root.name = "root";
	root.uid = 0;
	root.gid = 0;
	out = passwd_of(&root, NULL, 0, &e);
	assert_string_equal(out, "root:x:0:0:Alice A:/home/alice:/bin/bash\n");
	free(out);
}

/* A host field that would add a field or a line: refused, naming it. */
static void test_host_fields_with_colon_or_newline_are_refused(void **state)
{
	struct idfiles_user u = alice;
	struct err e = { 0 };

	(void)state;
	u.home = "/home/a:b";
	assert_null(passwd_of(&u, "", -1, &e));
	assert_int_equal(e.code, EXIT_CTRUN);
	assert_non_null(strstr(e.msg, "home directory '/home/a:b'"));
	u = alice;
	u.gecos = "Alice\nroot::0:0::/:/bin/sh";
	memset(&e, 0, sizeof(e));
	assert_null(passwd_of(&u, "", -1, &e));
	assert_non_null(strstr(e.msg, "gecos"));
	u = alice;
	u.group = "ph:ys";
	memset(&e, 0, sizeof(e));
	{
		char *out = NULL;
		size_t len;

		assert_int_equal(idfiles_group(&u, "", 0, &out, &len, &e), -1);
		assert_null(out);
		assert_non_null(strstr(e.msg, "group name 'ph:ys'"));
	}
}

static void test_group_first_then_the_images_others(void **state)
{
	struct err e = { 0 };
	char *out = NULL;
	size_t len;
	static const char img[] = "root:x:0:\nphysics:x:2000:bob\nstaff:x:1005:\nusers:x:100:";

	(void)state;
	assert_int_equal(idfiles_group(&alice, img, sizeof(img) - 1, &out, &len, &e), 0);
	assert_string_equal(out, "physics:x:1005:\nroot:x:0:\nusers:x:100:\n");
	free(out);
	assert_int_equal(idfiles_group(&alice, NULL, 0, &out, &len, &e), 0);
	assert_string_equal(out, "physics:x:1005:\nroot:x:0:\n");
	free(out);
}

/* ident.c over a real directory tree standing for the image. */
struct img {
	char root[64], run[64];
	struct ctr_setup c;
};

static void img_init(struct img *m)
{
	char etc[128];

	snprintf(m->root, sizeof(m->root), "/tmp/ctrun-ident-root-XXXXXX");
	snprintf(m->run, sizeof(m->run), "/tmp/ctrun-ident-run-XXXXXX");
	assert_non_null(mkdtemp(m->root));
	assert_non_null(mkdtemp(m->run));
	snprintf(etc, sizeof(etc), "%s/etc", m->root);
	assert_int_equal(mkdir(etc, 0755), 0);
	memset(&m->c, 0, sizeof(m->c));
	m->c.spec.rt = ctr_driver_named("oci");
	m->c.spec.rootless = true;
	/* Ids no host database names: the result depends on nothing here. */
	m->c.spec.uid = 64242;
	m->c.spec.gid = 64243;
	m->c.spec.user = "alice";
	m->c.spec.user_home = "/home/alice";
	m->c.spec.home = "/home/alice";
	m->c.spec.rootfs = m->root;
	snprintf(m->c.rundir, sizeof(m->c.rundir), "%s", m->run);
}

static void img_file(struct img *m, const char *rel, const char *text)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", m->root, rel);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write_all(fd, text, strlen(text)), 0);
	close(fd);
}

static char *img_out(struct img *m, const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", m->run, name);
	return read_file(path, NULL);
}

static void img_free(struct img *m)
{
	assert_int_equal(remove_tree(m->root), 0);
	assert_int_equal(remove_tree(m->run), 0);
}

static void test_files_from_the_image(void **state)
{
	struct img m;
	struct err e = { 0 };
	char *pw, *gr;

	(void)state;
	img_init(&m);
	img_file(&m, "etc/passwd", "root:x:0:0:root:/root:/bin/sh\nalice:x:1:1::/old:/bin/sh");
	img_file(&m, "etc/group", "root:x:0:\n");
	assert_int_equal(ctr_ident_files(&m.c, &e), 0);
	pw = img_out(&m, "passwd");
	gr = img_out(&m, "group");
	assert_string_equal(pw, "alice:x:64242:64243::/home/alice:/bin/sh\n"
				"root:x:0:0:root:/root:/bin/sh\n");
	/* A gid the host cannot name is named as the user. */
	assert_string_equal(gr, "alice:x:64243:\nroot:x:0:\n");
	free(pw);
	free(gr);
	img_free(&m);
}

/* /etc/passwd -> ../../../../etc/passwd and /etc -> /: resolved inside the
 * image (chroot semantics), never the host's file. */
static void test_symlinks_stay_in_the_image(void **state)
{
	struct img m;
	struct err e = { 0 };
	char path[256], *pw;

	(void)state;
	img_init(&m);
	snprintf(path, sizeof(path), "%s/etc/passwd", m.root);
	assert_int_equal(symlink("../../../../../../etc/passwd", path), 0);
	snprintf(path, sizeof(path), "%s/etc/group", m.root);
	assert_int_equal(symlink("/etc/group-in-image", path), 0);
	img_file(&m, "etc/group-in-image", "wheel:x:10:\n");
	assert_int_equal(ctr_ident_files(&m.c, &e), 0);
	pw = img_out(&m, "passwd");
	/* The link leads to the image's own /etc/passwd: itself, a loop: none. */
	assert_string_equal(pw, "alice:x:64242:64243::/home/alice:/bin/sh\n"
				"root:x:0:0:root:/root:/bin/sh\n");
	free(pw);
	pw = img_out(&m, "group");
	assert_string_equal(pw, "alice:x:64243:\nwheel:x:10:\n");
	free(pw);
	img_free(&m);

	/* /etc itself a link to /: /etc/passwd is the image's /passwd. */
	img_init(&m);
	snprintf(path, sizeof(path), "%s/etc", m.root);
	assert_int_equal(rmdir(path), 0);
	assert_int_equal(symlink("/", path), 0);
	img_file(&m, "passwd", "img:x:5:5::/:/bin/sh\n");
	assert_int_equal(ctr_ident_files(&m.c, &e), 0);
	pw = img_out(&m, "passwd");
	assert_string_equal(pw, "alice:x:64242:64243::/home/alice:/bin/sh\nimg:x:5:5::/:/bin/sh\n");
	free(pw);
	img_free(&m);
}

/* A FIFO (would block a read), a directory: no file; no /etc at all. */
static void test_not_a_plain_file_or_no_etc(void **state)
{
	struct img m;
	struct err e = { 0 };
	char path[256], *pw;

	(void)state;
	img_init(&m);
	snprintf(path, sizeof(path), "%s/etc/passwd", m.root);
	assert_int_equal(mkfifo(path, 0644), 0);
	snprintf(path, sizeof(path), "%s/etc/group", m.root);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(ctr_ident_files(&m.c, &e), 0);
	pw = img_out(&m, "passwd");
	assert_string_equal(pw, "alice:x:64242:64243::/home/alice:/bin/sh\n"
				"root:x:0:0:root:/root:/bin/sh\n");
	free(pw);
	img_free(&m);

	img_init(&m);
	snprintf(path, sizeof(path), "%s/etc", m.root);
	assert_int_equal(rmdir(path), 0);
	assert_int_equal(ctr_ident_files(&m.c, &e), 0);
	pw = img_out(&m, "group");
	assert_string_equal(pw, "alice:x:64243:\nroot:x:0:\n");
	free(pw);
	img_free(&m);
}

/* Over IDFILES_MAX: one line naming the file and the fix, nothing written. */
static void test_huge_file_is_refused(void **state)
{
	struct img m;
	struct err e = { 0 };
	char path[256];
	int fd;

	(void)state;
	img_init(&m);
	snprintf(path, sizeof(path), "%s/etc/passwd", m.root);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)IDFILES_MAX + 1), 0);
	close(fd);
	assert_int_equal(ctr_ident_files(&m.c, &e), -1);
	assert_int_equal(e.code, EXIT_CTRUN);
	assert_non_null(strstr(e.msg, "/etc/passwd is larger than 4 MiB"));
	assert_non_null(strstr(e.msg, "--root"));
	snprintf(path, sizeof(path), "%s/passwd", m.run);
	assert_int_equal(access(path, F_OK), -1);
	img_free(&m);
}

/* Only where ctrun switches identity: --root and real root write nothing. */
static void test_nothing_with_root(void **state)
{
	struct img m;
	struct err e = { 0 };
	char path[256];

	(void)state;
	img_init(&m);
	m.c.spec.as_root = true;
	assert_false(ctr_ident_nests(&m.c.spec));
	assert_int_equal(ctr_ident_files(&m.c, &e), 0);
	m.c.spec.as_root = false;
	m.c.spec.rootless = false;
	assert_false(ctr_ident_nests(&m.c.spec));
	assert_int_equal(ctr_ident_files(&m.c, &e), 0);
	snprintf(path, sizeof(path), "%s/passwd", m.run);
	assert_int_equal(access(path, F_OK), -1);
	m.c.spec.rt = ctr_driver_named("enroot");
	m.c.spec.rootless = true;
	assert_false(ctr_ident_nests(&m.c.spec));
	img_free(&m);
}

/* ch-run binds a passwd and group of its own: where the image has none and
 * its /etc is another user's (root's here, the caller uid 64242), the
 * overlay cannot hold their mount points, and the spec says so. */
static void test_idfile_points_only_where_the_overlay_can_hold_them(void **state)
{
	struct img m;
	struct err e = { 0 };
	char path[256];

	(void)state;
	img_init(&m);
	m.c.spec.rt = ctr_driver_named("charliecloud");
	assert_int_equal(ctr_ident_mounts(&m.c, true, &e), 0);
	assert_true(m.c.spec.no_idfile_points);
	img_file(&m, "etc/passwd", "root:x:0:0:root:/root:/bin/sh\n");
	assert_int_equal(ctr_ident_mounts(&m.c, true, &e), 0);
	assert_true(m.c.spec.no_idfile_points); /* /etc/group still missing */
	img_file(&m, "etc/group", "root:x:0:\n");
	assert_int_equal(ctr_ident_mounts(&m.c, true, &e), 0);
	assert_false(m.c.spec.no_idfile_points);
	/* Root makes any mount point. */
	snprintf(path, sizeof(path), "%s/etc/passwd", m.root);
	assert_int_equal(unlink(path), 0);
	m.c.spec.rootless = false;
	assert_int_equal(ctr_ident_mounts(&m.c, true, &e), 0);
	assert_false(m.c.spec.no_idfile_points);
	assert_int_equal(m.c.spec.mounts.n, 0);
	img_free(&m);
}

/* HOME, USER, LOGNAME: the caller's, or root's with --root. */
static void test_environment(void **state)
{
	struct ctr_spec s = { .user = "alice", .user_home = "/home/alice", .home = "/home/alice" };
	struct strv env = { 0 };

	(void)state;
	assert_int_equal(strv_push(&env, "HOME=/"), 0);
	assert_int_equal(ctr_ident_env(&s, &env), 0);
	assert_string_equal(strv_getenv(&env, "HOME"), "/home/alice");
	assert_string_equal(strv_getenv(&env, "USER"), "alice");
	assert_string_equal(strv_getenv(&env, "LOGNAME"), "alice");
	s.as_root = true;
	assert_int_equal(ctr_ident_env(&s, &env), 0);
	assert_string_equal(strv_getenv(&env, "HOME"), "/root");
	assert_string_equal(strv_getenv(&env, "USER"), "root");
	strv_free(&env);
}

/* The home bound and named by HOME: the password database's, or with
 * ask.home_env (the SPANK plugin's containers, enroot's 10-home.sh rule)
 * the directory $HOME names when it is absolute; the passwd entry written
 * into the container keeps the database's either way. */
static void test_home_from_the_database_or_from_dollar_home(void **state)
{
	struct ctr_setup *c = calloc(1, sizeof(*c));
	char *env[] = { "PATH=/bin", "HOME=/scratch/alice", NULL };
	char *rel[] = { "HOME=scratch", NULL };
	struct passwd *pw = getpwuid(getuid());
	struct err e = { 0 };

	(void)state;
	assert_non_null(c);
	assert_non_null(pw);
	c->spec.uid = getuid();
	c->ask.envp = env;
	assert_int_equal(ctr_ident_init(c, &e), 0);
	assert_string_equal(c->spec.user_home, pw->pw_dir);
	assert_string_equal(c->spec.home, pw->pw_dir);
	c->ask.home_env = true;
	assert_int_equal(ctr_ident_init(c, &e), 0);
	assert_string_equal(c->spec.user_home, pw->pw_dir);
	assert_string_equal(c->spec.home, "/scratch/alice");
	c->ask.envp = rel;
	assert_int_equal(ctr_ident_init(c, &e), 0);
	assert_string_equal(c->spec.home, pw->pw_dir);
	free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_user_first_then_the_images_lines),
		cmocka_unit_test(test_the_user_already_in_the_image_is_replaced),
		cmocka_unit_test(test_last_line_without_newline_and_odd_bytes),
		cmocka_unit_test(test_no_image_file_gets_root_too),
		cmocka_unit_test(test_host_fields_with_colon_or_newline_are_refused),
		cmocka_unit_test(test_group_first_then_the_images_others),
		cmocka_unit_test(test_files_from_the_image),
		cmocka_unit_test(test_symlinks_stay_in_the_image),
		cmocka_unit_test(test_not_a_plain_file_or_no_etc),
		cmocka_unit_test(test_huge_file_is_refused),
		cmocka_unit_test(test_nothing_with_root),
		cmocka_unit_test(test_idfile_points_only_where_the_overlay_can_hold_them),
		cmocka_unit_test(test_environment),
		cmocka_unit_test(test_home_from_the_database_or_from_dollar_home),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
