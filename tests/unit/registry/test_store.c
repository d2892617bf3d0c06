/* Unit tests of the image store's names and records (registry/store.c),
 * of whom a store is trusted from (registry/store_trust.c, issue 29: a
 * store another user made or can write, a group's store and its members),
 * of the bounds on what a pull downloads (registry/blobs.c: blobs_fit) and
 * of the same-origin rule that keeps credentials off redirects
 * (registry/http.c: http_origin). */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "blobs.h"
#include "http.h"
#include "ref.h"
#include "rootpath.h"
#include "store.h"

#define HEX64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void test_digest_must_be_sha256_and_64_lowercase_hex(void **state)
{
	(void)state;
	assert_true(digest_valid("sha256:" HEX64));
	assert_false(digest_valid("sha512:" HEX64));
	assert_false(digest_valid("sha256:" HEX64 "0"));
	assert_false(digest_valid("sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef"));
	assert_false(digest_valid("sha256:../../etc/passwd"));
	assert_false(digest_valid(""));
}

static void test_image_and_blob_paths_by_digest(void **state)
{
	char p[PATH_MAX];
	struct err e = { 0 };

	(void)state;
	assert_int_equal(store_image("/s", "sha256:" HEX64, p, sizeof(p), &e), 0);
	assert_string_equal(p, "/s/images/sha256-" HEX64 ".sqsh");
	assert_int_equal(store_blob("/s", "sha256:" HEX64, p, sizeof(p), &e), 0);
	assert_string_equal(p, "/s/blobs/sha256/" HEX64);
	/* A digest from a hostile manifest never becomes a path. */
	assert_int_equal(store_blob("/s", "sha256:../../../../tmp/x", p, sizeof(p), &e), -1);
}

static void test_tag_record_written_and_read_back(void **state)
{
	char dir[] = "/tmp/ctrun-test-store.XXXXXX", d[80];
	struct image_ref r;
	struct err e = { 0 };

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(store_init(dir, &e), 0);
	assert_int_equal(ref_parse("docker://reg.example:5000/team/app:v1", &r, &e), 0);
	assert_int_equal(store_ref_read(dir, &r, d, sizeof(d), &e), 0);
	assert_int_equal(store_ref_write(dir, &r, r.tag, "sha256:" HEX64, &e), 0);
	assert_int_equal(store_ref_read(dir, &r, d, sizeof(d), &e), 1);
	assert_string_equal(d, "sha256:" HEX64);
	/* The same repository by another tag has no record. */
	assert_int_equal(ref_parse("docker://reg.example:5000/team/app:v2", &r, &e), 0);
	assert_int_equal(store_ref_read(dir, &r, d, sizeof(d), &e), 0);
	remove_tree(dir);
}

static void test_store_is_private_to_its_user(void **state)
{
	char dir[] = "/tmp/ctrun-test-store.XXXXXX", sub[PATH_MAX];
	struct stat st;
	struct err e = { 0 };

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/new", dir);
	assert_int_equal(store_init(sub, &e), 0);
	assert_int_equal(stat(sub, &st), 0);
	assert_int_equal(st.st_mode & 077, 0);
	remove_tree(dir);
}

/* A user and a group no one on the test machine has. */
#define OTHER_UID 65533
#define MEMBER_UID 65534
#define GROUP_GID 65532

static char base[64];

static int scratch(void **state)
{
	(void)state;
	snprintf(base, sizeof(base), "/tmp/ctrun-test-store.XXXXXX");
	if (mkdtemp(base) == NULL || chmod(base, 0755) < 0)
		return -1;
	return 0;
}

static int scratch_gone(void **state)
{
	(void)state;
	return remove_tree(base);
}

static char *at(const char *rel)
{
	static char buf[4][PATH_MAX];
	static int k;
	char *b = buf[k++ % 4];

	snprintf(b, PATH_MAX, "%s/%s", base, rel);
	return b;
}

/* Runs fn as MEMBER_UID (in GROUP_GID when member), umask 022 as most
 * users have it: its exit status. */
static int as_user(bool member, int (*fn)(void))
{
	gid_t g = GROUP_GID;
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		umask(022);
		if (setgroups(member ? 1 : 0, &g) < 0 || setgid(MEMBER_UID) < 0 ||
		    setuid(MEMBER_UID) < 0)
			_exit(90);
		_exit(fn());
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static void test_store_another_user_made_is_refused(void **state)
{
	struct err e = { 0 };

	(void)state;
	if (geteuid() != 0)
		skip();
	/* Made first by someone else, as anyone can in a /scratch: 0777. */
	assert_int_equal(mkdir(at("store"), 0777), 0);
	assert_int_equal(chmod(at("store"), 0777), 0);
	assert_int_equal(chown(at("store"), OTHER_UID, OTHER_UID), 0);
	assert_int_equal(store_init(at("store"), &e), -1);
	assert_int_equal(e.code, EXIT_CTRUN);
	assert_non_null(strstr(e.msg, at("store")));
	assert_non_null(strstr(e.msg, "uid 65533"));
	assert_null(strchr(e.msg, '\n'));
	/* Read-only to others, still another user's. */
	assert_int_equal(chmod(at("store"), 0755), 0);
	assert_int_equal(store_init(at("store"), &e), -1);
	assert_non_null(strstr(e.msg, "not owned by root"));
	/* Root's own, but writable by others: refused too, nothing made in it. */
	assert_int_equal(chown(at("store"), 0, 0), 0);
	assert_int_equal(chmod(at("store"), 0777), 0);
	assert_int_equal(store_init(at("store"), &e), -1);
	assert_non_null(strstr(e.msg, "writable by group or others"));
	assert_int_equal(access(at("store/images"), F_OK), -1);
}

static void test_store_folder_or_image_of_another_user_is_refused(void **state)
{
	char p[PATH_MAX];
	struct err e = { 0 };
	int fd;

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(store_init(at("store"), &e), 0);
	assert_int_equal(store_image(at("store"), "sha256:" HEX64, p, sizeof(p), &e), 0);
	assert_int_equal(store_image_check(at("store"), p, &e), 0);
	/* A folder someone loosened. */
	assert_int_equal(chmod(at("store/images"), 0777), 0);
	assert_int_equal(store_image_check(at("store"), p, &e), -1);
	assert_non_null(strstr(e.msg, at("store/images")));
	assert_int_equal(chmod(at("store/images"), 0700), 0);
	/* An image another user owns. */
	fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(store_image_check(at("store"), p, &e), 1);
	assert_int_equal(chown(p, OTHER_UID, OTHER_UID), 0);
	assert_int_equal(store_image_check(at("store"), p, &e), -1);
	assert_non_null(strstr(e.msg, "uid 65533"));
	/* A FIFO or a link where an image belongs: refused at once, no wait. */
	assert_int_equal(unlink(p), 0);
	assert_int_equal(mkfifo(p, 0644), 0);
	assert_int_equal(store_image_check(at("store"), p, &e), -1);
	assert_non_null(strstr(e.msg, "not a regular file"));
	assert_int_equal(unlink(p), 0);
	assert_int_equal(symlink("/etc/passwd", p), 0);
	assert_int_equal(store_image_check(at("store"), p, &e), -1);
	assert_non_null(strstr(e.msg, "a symlink"));
}

static void test_group_store_is_refused_for_root(void **state)
{
	struct err e = { 0 };

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(mkdir(at("store"), 0700), 0);
	assert_int_equal(chown(at("store"), 0, GROUP_GID), 0);
	assert_int_equal(chmod(at("store"), 02770), 0);
	assert_int_equal(store_init(at("store"), &e), -1);
	assert_non_null(strstr(e.msg, "which its members can write"));
}

/* A member's view of a group store: usable, and its folders the group's
 * (02770 exactly, whatever the member's umask). */
static int member_inits(void)
{
	struct err e = { 0 };
	struct stat st;

	if (store_init(at("store"), &e) < 0) {
		fprintf(stderr, "%s\n", e.msg);
		return 1;
	}
	if (stat(at("store/blobs/sha256"), &st) < 0 || (st.st_mode & 07777) != 02770 ||
	    st.st_gid != GROUP_GID)
		return 2;
	if (stat(at("store/tmp"), &st) < 0 || (st.st_mode & 07777) != 02770)
		return 3;
	return 0;
}

static int made_by_nonmember_refused(void)
{
	struct err e = { 0 };

	if (store_init(at("store"), &e) == 0)
		return 1;
	return strstr(e.msg, "made by uid 65533, who is not in it") != NULL ? 0 : 2;
}

static int nonmember_inits(void)
{
	struct err e = { 0 };

	if (store_init(at("store"), &e) == 0)
		return 1;
	return strstr(e.msg, "which you are not in") != NULL ? 0 : 2;
}

/* gc keeps blobs/sha256 the group's (the next member still pulls). */
static int member_gcs(void)
{
	unsigned long long freed;
	struct err e = { 0 };
	struct stat st;
	int fd = open(at("store/blobs/sha256/" HEX64), O_WRONLY | O_CREAT | O_EXCL, 0644);

	if (fd < 0 || close(fd) < 0)
		return 1;
	if (store_gc(at("store"), &freed, &e) < 0)
		return 2;
	if (access(at("store/blobs/sha256/" HEX64), F_OK) == 0)
		return 3;
	if (stat(at("store/blobs/sha256"), &st) < 0 || (st.st_mode & 07777) != 02770 ||
	    st.st_gid != GROUP_GID)
		return 4;
	return 0;
}

static void test_group_store_works_for_each_member(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	assert_int_equal(mkdir(at("store"), 0700), 0);
	assert_int_equal(chown(at("store"), 0, GROUP_GID), 0);
	assert_int_equal(chmod(at("store"), 02770), 0);
	assert_int_equal(as_user(true, member_inits), 0);
	assert_int_equal(as_user(false, nonmember_inits), 0);
	assert_int_equal(as_user(true, member_gcs), 0);
}

static void test_group_store_made_by_a_nonmember_is_refused(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip();
	/* Setgid and of the group, as a folder made in a setgid parent is: but
	 * OTHER_UID is in no group of the machine's. */
	assert_int_equal(mkdir(at("store"), 0700), 0);
	assert_int_equal(chown(at("store"), OTHER_UID, GROUP_GID), 0);
	assert_int_equal(chmod(at("store"), 02770), 0);
	assert_int_equal(as_user(true, made_by_nonmember_refused), 0);
}

/* What a hostile registry's manifest may declare (blobs_fit). */
static void test_blob_sizes_bounded_before_download(void **state)
{
	struct descriptor layers[2] = { { .size = 600 }, { .size = 500 } };
	struct manifest m = { .kind = MANIFEST_IMAGE, .config = { .size = 100 },
			      .layers = layers, .nlayers = 2 };
	struct err e = { 0 };

	(void)state;
	snprintf(m.config.digest, sizeof(m.config.digest), "sha256:%s", HEX64);
	snprintf(layers[0].digest, sizeof(layers[0].digest), "sha256:%s", HEX64);
	snprintf(layers[1].digest, sizeof(layers[1].digest), "sha256:%s", HEX64);
	assert_int_equal(blobs_fit(&m, 0, 1200, 1200, "img", &e), 0);
	assert_int_equal(blobs_fit(&m, 1100, 1200, 1200, "img", &e), 0);
	/* A layer over [cache] max_unpacked. */
	assert_int_equal(blobs_fit(&m, 550, 0, 1 << 20, "img", &e), -1);
	assert_int_equal(e.code, EXIT_CTRUN);
	assert_non_null(strstr(e.msg, "img: layer 1 (sha256:0123456789ab) is 600 bytes, more than "
				      "[cache] max_unpacked (550 bytes)"));
	/* All of them together. */
	assert_int_equal(blobs_fit(&m, 1000, 0, 1 << 20, "img", &e), -1);
	assert_non_null(strstr(e.msg, "its layers are 1.1 KiB, more than [cache] max_unpacked (1000 bytes)"));
	/* More to download than the store has free. */
	assert_int_equal(blobs_fit(&m, 0, 1200, 1000, "img", &e), -1);
	assert_non_null(strstr(e.msg, "1.2 KiB to download, more than the 1000 bytes free"));
	/* A config over 16 MiB is never downloaded. */
	m.config.size = (16 << 20) + 1;
	assert_int_equal(blobs_fit(&m, 0, 0, 1ULL << 40, "img", &e), -1);
	assert_non_null(strstr(e.msg, "more than an image config may be (16 MiB)"));
}

static void test_origin_is_scheme_host_and_port(void **state)
{
	char o[256];

	(void)state;
	assert_int_equal(http_origin("https://Reg.Example:5000/v2/x/blobs/sha256:1", o, sizeof(o)), 0);
	assert_string_equal(o, "https://reg.example:5000");
	assert_int_equal(http_origin("https://user:pw@blobs.example/path?x=1", o, sizeof(o)), 0);
	assert_string_equal(o, "https://blobs.example");
	assert_int_equal(http_origin("http://reg.example:5000", o, sizeof(o)), 0);
	assert_string_equal(o, "http://reg.example:5000");
	assert_int_equal(http_origin("no-scheme/path", o, sizeof(o)), -1);
}

static void test_redirect_to_other_port_or_scheme_is_another_origin(void **state)
{
	char a[256], b[256];

	(void)state;
	assert_int_equal(http_origin("https://reg.example/v2/", a, sizeof(a)), 0);
	assert_int_equal(http_origin("https://reg.example:8443/v2/", b, sizeof(b)), 0);
	assert_string_not_equal(a, b);
	assert_int_equal(http_origin("http://reg.example/v2/", b, sizeof(b)), 0);
	assert_string_not_equal(a, b);
	assert_int_equal(http_origin("https://reg.example.evil/v2/", b, sizeof(b)), 0);
	assert_string_not_equal(a, b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_digest_must_be_sha256_and_64_lowercase_hex),
		cmocka_unit_test(test_image_and_blob_paths_by_digest),
		cmocka_unit_test(test_tag_record_written_and_read_back),
		cmocka_unit_test(test_store_is_private_to_its_user),
		cmocka_unit_test_setup_teardown(test_store_another_user_made_is_refused, scratch,
						scratch_gone),
		cmocka_unit_test_setup_teardown(test_store_folder_or_image_of_another_user_is_refused,
						scratch, scratch_gone),
		cmocka_unit_test_setup_teardown(test_group_store_is_refused_for_root, scratch,
						scratch_gone),
		cmocka_unit_test_setup_teardown(test_group_store_works_for_each_member, scratch,
						scratch_gone),
		cmocka_unit_test_setup_teardown(test_group_store_made_by_a_nonmember_is_refused,
						scratch, scratch_gone),
		cmocka_unit_test(test_blob_sizes_bounded_before_download),
		cmocka_unit_test(test_origin_is_scheme_host_and_port),
		cmocka_unit_test(test_redirect_to_other_port_or_scheme_is_another_origin),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
