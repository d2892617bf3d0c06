/* Unit tests: docker and OCI archives unpack with layer semantics (whiteouts,
 * opaque directories, links) and nothing a layer says can reach outside dest.
 * The layer rules run twice: unpacked into a tree (a docker archive, as the
 * node cache unpacks it) and streamed into a squashfs (as a registry pull
 * makes it: mlayer.c), then unpacked by unsquashfs for the same checks. */
#define CTRTEST_STREAM
#include "ctrtest.h"

/* The group being run streams its layers into a squashfs. */
static bool streamed;

static int setup_tree(void **state)
{
	streamed = false;
	return setup(state);
}

static int setup_streamed(void **state)
{
	streamed = true;
	return setup(state);
}

/* The layers into f->dest: a docker archive unpacked there, or (streamed)
 * a squashfs made from them and unpacked there by unsquashfs. */
static int unpack_layers(struct fx *f, const struct blob *l, size_t n, struct err *e)
{
	char sqsh[256];

	if (!streamed) {
		make_docker_archive(f->image, l, n, 0);
		return image_unpack(f->image, IMAGE_DOCKER_ARCHIVE, f->dest, e);
	}
	if (stream_layers(f->dir, l, n, NULL, NULL, e) < 0)
		return -1;
	snprintf(sqsh, sizeof(sqsh), "%s/image.sqsh", f->dir);
	unsquash(sqsh, f->dest);
	return 0;
}

/* Layer 1 is a small rootfs; layer 2 adds, deletes (whiteout) and hides (opaque). */
static void two_layers(struct blob l[2], int gz)
{
	static const struct member l1[] = {
		{ "./", 'd', NULL, 0 },
		{ "etc/", 'd', NULL, 0 },
		{ "etc/motd", 'f', "hello\n", 0 },
		{ "etc/deleted", 'f', "lower\n", 0 },
		{ "etc/motd.link", 'h', "etc/motd", 0 },
		{ "usr/lib/", 'd', NULL, 0 },
		{ "lib", 'l', "usr/lib", 0 },
		{ "opt/old/a", 'f', "a\n", 0 },
		{ "opt/old/sub/deep", 'f', "deep\n", 0 },
		{ "var/dir-to-file/x", 'f', "x\n", 0 },
	};
	static const struct member l2[] = {
		{ "etc/.wh.deleted", 'f', "", 0 },
		{ "etc/layer2", 'f', "upper\n", 0 },
		{ "opt/old/b", 'f', "b\n", 0 },
		{ "opt/old/.wh..wh..opq", 'f', "", 0 },
		{ "opt/old/newsub/c", 'f', "c\n", 0 },
		{ "lib/through-symlink", 'f', "via lib\n", 0 },
		{ "var/dir-to-file", 'f', "now a file\n", 0 },
		{ "etc/motd", 'f', "replaced\n", 0 },
	};
	l[0] = tar_blob(l1, sizeof(l1) / sizeof(*l1), gz);
	l[1] = tar_blob(l2, sizeof(l2) / sizeof(*l2), gz);
}

static void check_two_layers(const struct fx *f)
{
	struct stat a, b;

	assert_content(in(f, "etc/layer2"), "upper\n");
	assert_false(present(in(f, "etc/deleted")));          /* whiteout */
	assert_content(in(f, "opt/old/b"), "b\n");            /* same layer as the opaque marker */
	assert_content(in(f, "opt/old/newsub/c"), "c\n");
	assert_false(present(in(f, "opt/old/a")));            /* hidden by the opaque dir */
	assert_false(present(in(f, "opt/old/sub")));
	assert_false(present(in(f, "opt/old/.wh..wh..opq"))); /* markers are never written */
	assert_false(present(in(f, "etc/.wh.deleted")));
	assert_content(in(f, "usr/lib/through-symlink"), "via lib\n"); /* parent resolved in root */
	assert_int_equal(lstat(in(f, "lib"), &a), 0);
	assert_true(S_ISLNK(a.st_mode));                      /* the symlink survives */
	assert_content(in(f, "var/dir-to-file"), "now a file\n");
	assert_content(in(f, "etc/motd"), "replaced\n");
	assert_int_equal(stat(in(f, "etc/motd.link"), &b), 0);
	assert_content(in(f, "etc/motd.link"), "hello\n");    /* the link kept layer 1's inode */
}

static void test_layers_apply_in_order_with_whiteouts(void **state)
{
	struct fx *f = *state;
	struct err e = { 0 };
	struct blob l[2];

	two_layers(l, 0);
	if (unpack_layers(f, l, 2, &e) < 0)
		fail_msg("%s", e.msg);
	check_two_layers(f);
	blob_free(&l[0]);
	blob_free(&l[1]);
}

static void test_oci_archive_with_gzip_layers(void **state)
{
	struct fx *f = *state;
	struct err e = { 0 };
	enum image_kind k;
	struct blob l[2];

	two_layers(l, 1);
	make_oci_archive(f->image, l, 2);
	assert_int_equal(image_detect(f->image, &k, &e), 0);
	assert_int_equal(k, IMAGE_OCI_ARCHIVE);
	assert_int_equal(image_unpack(f->image, IMAGE_OCI_ARCHIVE, f->dest, &e), 0);
	check_two_layers(f);
	blob_free(&l[0]);
	blob_free(&l[1]);
}

static void test_gzipped_docker_archive(void **state)
{
	struct fx *f = *state;
	struct err e = { 0 };
	struct blob l[2];

	two_layers(l, 0);
	make_docker_archive(f->image, l, 2, 1); /* docker save | gzip */
	assert_int_equal(image_unpack(f->image, IMAGE_DOCKER_ARCHIVE, f->dest, &e), 0);
	check_two_layers(f);
	blob_free(&l[0]);
	blob_free(&l[1]);
}

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)) != NULL)
		n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	closedir(d);
	return n;
}

/* A compressed archive is decompressed once, not once per member: the
 * file is opened twice (the probe, the one pass) however many layers. */
static void test_compressed_archive_is_read_once(void **state)
{
	struct fx *f = *state;
	struct err e = { 0 };
	struct blob l[8];
	char names[8][32], buf[4096];
	struct member m[8];
	int ino, opens = 0;
	ssize_t n;

	for (int i = 0; i < 8; i++) {
		snprintf(names[i], sizeof(names[i]), "layer%d", i);
		m[i] = (struct member){ names[i], 'f', "content\n", 0 };
		l[i] = tar_blob(&m[i], 1, 0);
	}
	make_docker_archive(f->image, l, 8, 1);
	ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	assert_true(ino >= 0);
	assert_true(inotify_add_watch(ino, f->image, IN_OPEN | IN_CLOSE_NOWRITE) >= 0);
	assert_int_equal(image_unpack(f->image, IMAGE_DOCKER_ARCHIVE, f->dest, &e), 0);
	while ((n = read(ino, buf, sizeof(buf))) > 0)
		for (char *p = buf; p < buf + n; p += sizeof(struct inotify_event) +
						     ((struct inotify_event *)p)->len)
			opens += (((struct inotify_event *)p)->mask & IN_OPEN) != 0;
	close(ino);
	for (int i = 0; i < 8; i++) {
		assert_content(in(f, names[i]), "content\n");
		blob_free(&l[i]);
	}
	assert_int_equal(opens, 2);
	/* (IN_CLOSE between them: inotify merges repeated identical events.)
	 * The decompressed copy was unnamed: nothing is left beside dest. */
	assert_int_equal(count_entries(f->dir), 3); /* dest, outside, image.tar */
}

/* A manifest listing 100,000 layers is refused at once, by name, instead of
 * a pass over the archive per layer. */
static void test_hundred_thousand_layers_are_refused(void **state)
{
	struct fx *f = *state;
	struct err e = { 0 };
	size_t cap = 100000 * 24 + 64, off;
	char *man = malloc(cap);
	struct member m[1];
	struct blob outer;

	assert_non_null(man);
	off = (size_t)snprintf(man, cap, "[{\"Layers\":[");
	for (int i = 0; i < 100000; i++)
		off += (size_t)snprintf(man + off, cap - off, "%s\"%07d/l.tar\"", i ? "," : "", i);
	snprintf(man + off, cap - off, "]}]");
	m[0] = (struct member){ "manifest.json", 'f', man, 0 };
	outer = tar_blob(m, 1, 0);
	write_blob(f->image, outer);
	blob_free(&outer);
	free(man);
	assert_int_equal(image_unpack(f->image, IMAGE_DOCKER_ARCHIVE, f->dest, &e), -1);
	assert_int_equal(e.code, EXIT_CTRUN);
	assert_non_null(strstr(e.msg, "lists 100000 layers; ctrun unpacks at most 1000"));
	assert_int_equal(count_entries(f->dest), 0);
}

/* One hostile layer on top of a harmless one; returns image_unpack's result. */
static int unpack_hostile(struct fx *f, const struct member *m, size_t n, struct err *e)
{
	static const struct member base[] = { { "etc/motd", 'f', "hi\n", 0 } };
	struct blob l[2];
	int r;

	l[0] = tar_blob(base, 1, 0);
	l[1] = tar_blob(m, n, 0);
	r = unpack_layers(f, l, 2, e);
	blob_free(&l[0]);
	blob_free(&l[1]);
	return r;
}

static void test_dotdot_member_is_refused(void **state)
{
	struct fx *f = *state;
	struct err e = { 0 };
	const struct member m[] = { { "etc/../../outside/pwned", 'f', "x\n", 0 } };

	assert_int_equal(unpack_hostile(f, m, 1, &e), -1);
	assert_non_null(strstr(e.msg, "refused"));
	assert_false(present(in(f, "../outside/pwned")));
}

static void test_absolute_symlink_then_write_through_it_stays_inside(void **state)
{
	struct fx *f = *state;
	struct err e = { 0 };
	char target[256], host[256], contained[256];
	struct member m[2];

	/* evil -> /tmp/.../outside (absolute, host path), then evil/pwned */
	snprintf(target, sizeof(target), "%s", f->outside);
	m[0] = (struct member){ "evil", 'l', target, 0 };
	m[1] = (struct member){ "evil/pwned", 'f', "x\n", 0 };
	assert_int_equal(unpack_hostile(f, m, 2, &e), 0);
	snprintf(host, sizeof(host), "%s/pwned", f->outside);
	assert_false(present(host));
	/* chroot semantics: it landed at dest + target */
	snprintf(contained, sizeof(contained), "%s%s/pwned", f->dest, f->outside);
	assert_true(present(contained));
}

static void test_relative_symlink_climbing_out_stays_inside(void **state)
{
	struct fx *f = *state;
	struct err e = { 0 };
	char host[256];
	const struct member m[] = {
		{ "a/b/up", 'l', "../../../../../../../../../../../../..", 0 },
		{ "a/b/up/etc/pwned", 'f', "x\n", 0 },
	};

	assert_int_equal(unpack_hostile(f, m, 2, &e), 0);
	assert_true(present(in(f, "etc/pwned")));  /* .. stops at the root */
	assert_false(present("/etc/pwned"));
	snprintf(host, sizeof(host), "%s/pwned", f->outside);
	assert_false(present(host));
}

static void test_whiteout_and_opaque_through_symlink_do_not_touch_the_host(void **state)
{
	struct fx *f = *state;
	struct err e = { 0 };
	char victim[256], target[256];
	struct member m[3];
	FILE *fp;

	snprintf(victim, sizeof(victim), "%s/victim", f->outside);
	fp = fopen(victim, "w");
	assert_non_null(fp);
	fclose(fp);
	snprintf(target, sizeof(target), "%s", f->outside);
	m[0] = (struct member){ "evil", 'l', target, 0 };
	m[1] = (struct member){ "evil/.wh.victim", 'f', "", 0 };
	m[2] = (struct member){ "evil/.wh..wh..opq", 'f', "", 0 };
	assert_int_equal(unpack_hostile(f, m, 3, &e), 0);
	assert_true(present(victim));
}

static void test_hardlink_out_of_the_image_is_refused_or_contained(void **state)
{
	struct fx *f = *state;
	struct err e = { 0 };
	struct stat host, got;
	const struct member up[] = { { "stolen", 'h', "../../../../etc/passwd", 0 } };
	const struct member abs[] = { { "stolen", 'h', "/etc/passwd", 0 } };

	assert_int_equal(unpack_hostile(f, up, 1, &e), -1);
	assert_non_null(strstr(e.msg, "refused"));
	/* An absolute link target means the image's own /etc/passwd, which is absent. */
	remove_tree(f->dest);
	assert_int_equal(mkdir(f->dest, 0755), 0);
	memset(&e, 0, sizeof(e));
	if (unpack_hostile(f, abs, 1, &e) == 0 && lstat(in(f, "stolen"), &got) == 0) {
		assert_int_equal(stat("/etc/passwd", &host), 0);
		assert_false(got.st_ino == host.st_ino && got.st_dev == host.st_dev);
	}
}

static void test_missing_layer_member_is_an_error(void **state)
{
	struct fx *f = *state;
	struct err e = { 0 };
	const struct member m[] = {
		{ "manifest.json", 'f', "[{\"Layers\":[\"nope/layer.tar\"]}]", 0 },
	};
	struct blob b = tar_blob(m, 1, 0);

	write_blob(f->image, b);
	blob_free(&b);
	assert_int_equal(image_unpack(f->image, IMAGE_DOCKER_ARCHIVE, f->dest, &e), -1);
	assert_non_null(strstr(e.msg, "nope/layer.tar"));
	assert_int_equal(e.code, EXIT_CTRUN);
}

/* "" cleans to ".", one byte longer than the name: it was copied over
 * the name in place (a heap overflow under ASan). */
static void test_empty_layer_path_is_refused(void **state)
{
	struct fx *f = *state;
	struct err e = { 0 };
	const struct member m[] = {
		{ "manifest.json", 'f', "[{\"Layers\":[\"\"]}]", 0 },
	};
	struct blob b = tar_blob(m, 1, 0);

	write_blob(f->image, b);
	blob_free(&b);
	assert_int_equal(image_unpack(f->image, IMAGE_DOCKER_ARCHIVE, f->dest, &e), -1);
	assert_non_null(strstr(e.msg, "a layer path is empty or names the archive's root"));
}

static void test_layer_path_escaping_the_archive_is_refused(void **state)
{
	struct fx *f = *state;
	struct err e = { 0 };
	const struct member m[] = {
		{ "manifest.json", 'f', "[{\"Layers\":[\"../../etc/shadow\"]}]", 0 },
	};
	struct blob b = tar_blob(m, 1, 0);

	write_blob(f->image, b);
	blob_free(&b);
	assert_int_equal(image_unpack(f->image, IMAGE_DOCKER_ARCHIVE, f->dest, &e), -1);
	/* Refused for leaving, not merely for being missing. */
	assert_non_null(strstr(e.msg, "layer path '../../etc/shadow' leaves the archive"));
}

static void test_paths_in_the_image_are_confined(void **state)
{
	struct fx *f = *state;
	char out[256];
	int fd;

	assert_int_equal(mkdir(in(f, "usr"), 0755), 0);
	assert_int_equal(symlink("/usr", in(f, "abs")), 0);
	assert_int_equal(symlink("../../..", in(f, "up")), 0);
	assert_int_equal(symlink("loop", in(f, "loop")), 0);
	fd = open(f->dest, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	assert_int_equal(inroot_resolve(fd, "abs/bin", INROOT_CHROOT, true, out, sizeof(out), NULL), 0);
	assert_string_equal(out, "usr/bin");
	assert_int_equal(inroot_resolve(fd, "up/etc/passwd", INROOT_CHROOT, true, out, sizeof(out), NULL), 0);
	assert_string_equal(out, "etc/passwd");
	assert_int_equal(inroot_resolve(fd, "abs", INROOT_CHROOT, false, out, sizeof(out), NULL), 0);
	assert_string_equal(out, "abs");
	assert_int_equal(inroot_resolve(fd, "loop/x", INROOT_CHROOT, true, out, sizeof(out), NULL), -1);
	assert_int_equal(errno, ELOOP);
	close(fd);
	assert_int_equal(rootpath_clean("./a//b/./c/", out, sizeof(out)), 0);
	assert_string_equal(out, "a/b/c");
	assert_int_equal(rootpath_clean("/", out, sizeof(out)), 0);
	assert_string_equal(out, ".");
	assert_int_equal(rootpath_clean("a/../b", out, sizeof(out)), -1);
}

int main(void)
{
	const struct CMUnitTest tree[] = {
		cmocka_unit_test_setup_teardown(test_layers_apply_in_order_with_whiteouts, setup_tree, teardown),
		cmocka_unit_test_setup_teardown(test_oci_archive_with_gzip_layers, setup_tree, teardown),
		cmocka_unit_test_setup_teardown(test_gzipped_docker_archive, setup_tree, teardown),
		cmocka_unit_test_setup_teardown(test_compressed_archive_is_read_once, setup_tree, teardown),
		cmocka_unit_test_setup_teardown(test_hundred_thousand_layers_are_refused, setup_tree, teardown),
		cmocka_unit_test_setup_teardown(test_dotdot_member_is_refused, setup_tree, teardown),
		cmocka_unit_test_setup_teardown(test_absolute_symlink_then_write_through_it_stays_inside, setup_tree, teardown),
		cmocka_unit_test_setup_teardown(test_relative_symlink_climbing_out_stays_inside, setup_tree, teardown),
		cmocka_unit_test_setup_teardown(test_whiteout_and_opaque_through_symlink_do_not_touch_the_host, setup_tree, teardown),
		cmocka_unit_test_setup_teardown(test_hardlink_out_of_the_image_is_refused_or_contained, setup_tree, teardown),
		cmocka_unit_test_setup_teardown(test_missing_layer_member_is_an_error, setup_tree, teardown),
		cmocka_unit_test_setup_teardown(test_empty_layer_path_is_refused, setup_tree, teardown),
		cmocka_unit_test_setup_teardown(test_layer_path_escaping_the_archive_is_refused, setup_tree, teardown),
		cmocka_unit_test_setup_teardown(test_paths_in_the_image_are_confined, setup_tree, teardown),
	};
	/* The layer rules again, streamed into a squashfs (a registry pull). */
	const struct CMUnitTest squashed[] = {
		cmocka_unit_test_setup_teardown(test_layers_apply_in_order_with_whiteouts, setup_streamed, teardown),
		cmocka_unit_test_setup_teardown(test_dotdot_member_is_refused, setup_streamed, teardown),
		cmocka_unit_test_setup_teardown(test_absolute_symlink_then_write_through_it_stays_inside, setup_streamed, teardown),
		cmocka_unit_test_setup_teardown(test_relative_symlink_climbing_out_stays_inside, setup_streamed, teardown),
		cmocka_unit_test_setup_teardown(test_whiteout_and_opaque_through_symlink_do_not_touch_the_host, setup_streamed, teardown),
		cmocka_unit_test_setup_teardown(test_hardlink_out_of_the_image_is_refused_or_contained, setup_streamed, teardown),
	};
	int failed = cmocka_run_group_tests_name("unpacked", tree, NULL, NULL);

	return failed + cmocka_run_group_tests_name("streamed", squashed, NULL, NULL);
}
