/* Unit tests: docker and OCI archives unpack with layer semantics (whiteouts,
 * opaque directories, links) and nothing a layer says can reach outside dest. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "imgconfig.h"
#include "image.h"
#include "imgtest.h"
#include "inroot.h"
#include "rootpath.h"
#include "strv.h"
#include "util.h"

struct fx {
	char dir[64];       /* scratch, removed after each test */
	char dest[128];     /* the (empty) unpack target */
	char outside[128];  /* a host directory layers try to reach */
	char image[128];
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	strcpy(f->dir, "/tmp/ctrun-test-archive-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->dest, sizeof(f->dest), "%s/dest", f->dir);
	snprintf(f->outside, sizeof(f->outside), "%s/outside", f->dir);
	snprintf(f->image, sizeof(f->image), "%s/image.tar", f->dir);
	assert_int_equal(mkdir(f->dest, 0755), 0);
	assert_int_equal(mkdir(f->outside, 0755), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	remove_tree(f->dir);
	free(f);
	return 0;
}

static char *in(const struct fx *f, const char *rel)
{
	static char buf[8][256];
	static int i;

	i = (i + 1) % 8;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", f->dest, rel);
	return buf[i];
}

static int present(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static void assert_content(const char *path, const char *want)
{
	char got[256] = "";
	FILE *fp = fopen(path, "r");

	assert_non_null(fp);
	assert_non_null(fgets(got, sizeof(got), fp));
	fclose(fp);
	assert_string_equal(got, want);
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

static void test_docker_archive_applies_layers_in_order_with_whiteouts(void **state)
{
	struct fx *f = *state;
	struct err e = { 0 };
	struct blob l[2];

	two_layers(l, 0);
	make_docker_archive(f->image, l, 2, 0);
	assert_int_equal(image_unpack(f->image, IMAGE_DOCKER_ARCHIVE, f->dest, &e), 0);
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
	make_docker_archive(f->image, l, 2, 0);
	r = image_unpack(f->image, IMAGE_DOCKER_ARCHIVE, f->dest, e);
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

/* A `docker save` archive with config JSON `cfg` (imgtest.h's has "{}"). */
static void make_docker_archive_cfg(const char *path, const struct blob *layer, const char *cfg)
{
	const struct member m[] = {
		{ "0001/layer.tar", 'f', layer->data, layer->len },
		{ "cfg.json", 'f', cfg, 0 },
		{ "manifest.json", 'f', "[{\"Config\":\"cfg.json\",\"Layers\":[\"0001/layer.tar\"]}]", 0 },
	};
	struct blob outer = tar_blob(m, 3, 0);

	write_blob(path, outer);
	blob_free(&outer);
}

/* Unpacks one layer `m` with config `cfg` (docker archive) into f->dest. */
static int unpack_with_config(struct fx *f, const struct member *m, size_t n, const char *cfg,
			      struct err *e)
{
	struct blob l = tar_blob(m, n, 0);
	int r;

	make_docker_archive_cfg(f->image, &l, cfg);
	blob_free(&l);
	r = image_unpack(f->image, IMAGE_DOCKER_ARCHIVE, f->dest, e);
	return r;
}

/* What ctrun's runtime adapters will see: image_environ_read on the result. */
static const char *image_env(const struct fx *f, struct strv *env, const char *key)
{
	struct err e = { 0 };

	strv_free(env);
	assert_int_equal(image_environ_read(f->dest, env, &e), 0);
	return strv_getenv(env, key);
}

static void assert_file(const char *path, const char *want)
{
	size_t len = 0;
	char *got = read_file(path, &len);

	assert_non_null(got);
	assert_int_equal(len, strlen(want));
	assert_string_equal(got, want);
	free(got);
}

static const struct member etc_layer[] = {
	{ "etc/", 'd', NULL, 0 },
	{ "etc/environment", 'f', "PATH=/usr/bin:/bin\nCTRUN_IMAGE_ENV=layer\nOLD_ONLY=1\n", 0 },
	{ "bin/", 'd', NULL, 0 },
};

static const char env_cfg[] =
	"{\"config\":{\"Env\":[\"PATH=/usr/local/bin:/usr/bin:/bin:/custom\","
	"\"CTRUN_IMAGE_ENV=from-image\"],\"WorkingDir\":\"/workspace/proj\"}}";

static void test_config_env_becomes_etc_environment(void **state)
{
	struct fx *f = *state;
	struct err e = { 0 };
	struct strv env = { 0 };
	const struct member bare[] = { { "bin/", 'd', NULL, 0 } }; /* no /etc at all */
	struct stat st;

	assert_int_equal(unpack_with_config(f, bare, 1, env_cfg, &e), 0);
	assert_file(in(f, "etc/environment"),
		    "PATH=/usr/local/bin:/usr/bin:/bin:/custom\nCTRUN_IMAGE_ENV=from-image\n");
	assert_string_equal(image_env(f, &env, "CTRUN_IMAGE_ENV"), "from-image");
	assert_string_equal(image_env(f, &env, "PATH"), "/usr/local/bin:/usr/bin:/bin:/custom");
	/* enroot and docker create the WorkingDir */
	assert_int_equal(stat(in(f, "workspace/proj"), &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	strv_free(&env);
}

static void test_config_env_replaces_the_layers_environment(void **state)
{
	struct fx *f = *state;
	struct err e = { 0 };
	struct strv env = { 0 };

	/* enroot: the generated file is the top overlay layer, the layers' one is gone */
	assert_int_equal(unpack_with_config(f, etc_layer, 3, env_cfg, &e), 0);
	assert_string_equal(image_env(f, &env, "CTRUN_IMAGE_ENV"), "from-image");
	assert_null(image_env(f, &env, "OLD_ONLY"));
	strv_free(&env);
}

static void test_oci_config_env_is_written(void **state)
{
	struct fx *f = *state;
	struct err e = { 0 };
	struct strv env = { 0 };
	struct blob l = tar_blob(etc_layer, 3, 1), outer;
	const struct member m[] = {
		{ "oci-layout", 'f', "{\"imageLayoutVersion\":\"1.0.0\"}", 0 },
		{ "index.json", 'f', "{\"schemaVersion\":2,\"manifests\":[{\"digest\":\"sha256:aa\"}]}", 0 },
		{ "blobs/sha256/aa", 'f', "{\"schemaVersion\":2,\"config\":{\"digest\":\"sha256:cc\"},"
					 "\"layers\":[{\"digest\":\"sha256:01\"}]}", 0 },
		{ "blobs/sha256/cc", 'f', env_cfg, 0 },
		{ "blobs/sha256/01", 'f', l.data, l.len },
	};

	outer = tar_blob(m, 5, 0);
	write_blob(f->image, outer);
	blob_free(&outer);
	blob_free(&l);
	assert_int_equal(image_unpack(f->image, IMAGE_OCI_ARCHIVE, f->dest, &e), 0);
	assert_string_equal(image_env(f, &env, "CTRUN_IMAGE_ENV"), "from-image");
	assert_null(image_env(f, &env, "OLD_ONLY"));
	strv_free(&env);
}

static void test_config_env_through_hostile_etc_symlink_stays_inside(void **state)
{
	struct fx *f = *state;
	struct err e = { 0 };
	struct strv env = { 0 };
	char host[256], victim[256];
	struct member abs[1], file_link[2];
	const struct member up[] = { { "etc", 'l', "../../../../../../../../../..", 0 } };
	FILE *fp;
	struct stat st;

	/* /etc -> a host directory (absolute): lands in dest + that path */
	snprintf(host, sizeof(host), "%s/environment", f->outside);
	abs[0] = (struct member){ "etc", 'l', f->outside, 0 };
	assert_int_equal(unpack_with_config(f, abs, 1, env_cfg, &e), 0);
	assert_false(present(host));
	assert_string_equal(image_env(f, &env, "CTRUN_IMAGE_ENV"), "from-image");
	/* /etc -> ../../.. (climbing out): .. stops at the root */
	remove_tree(f->dest);
	assert_int_equal(mkdir(f->dest, 0755), 0);
	assert_int_equal(unpack_with_config(f, up, 1, env_cfg, &e), 0);
	assert_true(present(in(f, "environment")));
	assert_false(present(host));
	assert_string_equal(image_env(f, &env, "CTRUN_IMAGE_ENV"), "from-image");
	/* /etc/environment -> a host file: the link is replaced, the file untouched */
	snprintf(victim, sizeof(victim), "%s/victim", f->outside);
	fp = fopen(victim, "w");
	assert_non_null(fp);
	fputs("HOST=1\n", fp);
	fclose(fp);
	remove_tree(f->dest);
	assert_int_equal(mkdir(f->dest, 0755), 0);
	file_link[0] = (struct member){ "etc/", 'd', NULL, 0 };
	file_link[1] = (struct member){ "etc/environment", 'l', victim, 0 };
	assert_int_equal(unpack_with_config(f, file_link, 2, env_cfg, &e), 0);
	assert_file(victim, "HOST=1\n");
	assert_int_equal(lstat(in(f, "etc/environment"), &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_string_equal(image_env(f, &env, "CTRUN_IMAGE_ENV"), "from-image");
	strv_free(&env);
}

static void test_reader_does_not_follow_etc_out_of_the_image(void **state)
{
	struct fx *f = *state;
	struct strv env = { 0 };
	char path[256];
	FILE *fp;

	/* A rootfs (say a directory image) whose /etc leads to a host directory. */
	snprintf(path, sizeof(path), "%s/environment", f->outside);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fputs("HOST_SECRET=1\n", fp);
	fclose(fp);
	assert_int_equal(symlink(f->outside, in(f, "etc")), 0);
	assert_null(image_env(f, &env, "HOST_SECRET"));
	strv_free(&env);
}

static void test_values_with_equals_blanks_and_quotes_read_back_exactly(void **state)
{
	struct fx *f = *state;
	struct err e = { 0 };
	struct strv env = { 0 };
	static const struct {
		const char *key, *json, *want;
	} v[] = {
		{ "EQ", "x=y=z", "x=y=z" },
		{ "SPACES", "two  words", "two  words" },
		{ "TRAILING", "blank ", "blank " },
		{ "TAB", "\\tlead and trail\\t", "\tlead and trail\t" },
		{ "CR", "dos\\r", "dos\r" },
		{ "SQ", "'single'", "'single'" },
		{ "DQ", "\\\"double\\\"", "\"double\"" },
		{ "MIXED", "'a\\\"", "'a\"" },
		{ "ONEQUOTE", "\\\"", "\"" },
		{ "EMPTY", "", "" },
		{ "HASH", "#not a comment", "#not a comment" },
		{ "DOLLAR", "${HOME} $x `id`", "${HOME} $x `id`" },
		{ "UTF8", "caf\\u00e9", "caf\xc3\xa9" },
	};
	char cfg[4096];
	size_t off;

	off = (size_t)snprintf(cfg, sizeof(cfg), "{\"config\":{\"Env\":[\"1BAD=x\",\"NOEQ\","
			       "\"my-var=1\"");
	for (size_t i = 0; i < sizeof(v) / sizeof(*v); i++)
		off += (size_t)snprintf(cfg + off, sizeof(cfg) - off, ",\"%s=%s\"", v[i].key, v[i].json);
	snprintf(cfg + off, sizeof(cfg) - off, "]}}");
	assert_int_equal(unpack_with_config(f, etc_layer, 3, cfg, &e), 0);
	for (size_t i = 0; i < sizeof(v) / sizeof(*v); i++) {
		const char *got = image_env(f, &env, v[i].key);

		assert_non_null(got);
		assert_string_equal(got, v[i].want);
	}
	/* names no reader accepts are left out, not written */
	assert_null(image_env(f, &env, "NOEQ"));
	assert_int_equal(env.n, sizeof(v) / sizeof(*v));
	strv_free(&env);
}

static void test_value_with_newline_or_nul_is_refused(void **state)
{
	struct fx *f = *state;
	struct err e = { 0 };

	assert_int_equal(unpack_with_config(f, etc_layer, 3,
					    "{\"config\":{\"Env\":[\"A=1\",\"SPLIT=a\\nb\"]}}", &e), -1);
	assert_non_null(strstr(e.msg, "config.Env[1] (SPLIT) holds a newline"));
	assert_int_equal(e.code, EXIT_CTRUN);
	remove_tree(f->dest);
	assert_int_equal(mkdir(f->dest, 0755), 0);
	memset(&e, 0, sizeof(e));
	assert_int_equal(unpack_with_config(f, etc_layer, 3,
					    "{\"config\":{\"Env\":[\"Z=a\\u0000b\"]}}", &e), -1);
	assert_non_null(strstr(e.msg, "NUL"));
}

static void test_config_without_env_leaves_an_empty_environment(void **state)
{
	struct fx *f = *state;
	struct err e = { 0 };
	struct strv env = { 0 };

	/* docker runs such an image with no variables of its own; enroot writes an empty file */
	assert_int_equal(unpack_with_config(f, etc_layer, 3, "{\"config\":{}}", &e), 0);
	assert_file(in(f, "etc/environment"), "");
	assert_null(image_env(f, &env, "OLD_ONLY"));
	strv_free(&env);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_docker_archive_applies_layers_in_order_with_whiteouts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_oci_archive_with_gzip_layers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gzipped_docker_archive, setup, teardown),
		cmocka_unit_test_setup_teardown(test_compressed_archive_is_read_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hundred_thousand_layers_are_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dotdot_member_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_absolute_symlink_then_write_through_it_stays_inside, setup, teardown),
		cmocka_unit_test_setup_teardown(test_relative_symlink_climbing_out_stays_inside, setup, teardown),
		cmocka_unit_test_setup_teardown(test_whiteout_and_opaque_through_symlink_do_not_touch_the_host, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hardlink_out_of_the_image_is_refused_or_contained, setup, teardown),
		cmocka_unit_test_setup_teardown(test_missing_layer_member_is_an_error, setup, teardown),
		cmocka_unit_test_setup_teardown(test_empty_layer_path_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_layer_path_escaping_the_archive_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_paths_in_the_image_are_confined, setup, teardown),
		cmocka_unit_test_setup_teardown(test_config_env_becomes_etc_environment, setup, teardown),
		cmocka_unit_test_setup_teardown(test_config_env_replaces_the_layers_environment, setup, teardown),
		cmocka_unit_test_setup_teardown(test_oci_config_env_is_written, setup, teardown),
		cmocka_unit_test_setup_teardown(test_config_env_through_hostile_etc_symlink_stays_inside, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reader_does_not_follow_etc_out_of_the_image, setup, teardown),
		cmocka_unit_test_setup_teardown(test_values_with_equals_blanks_and_quotes_read_back_exactly, setup, teardown),
		cmocka_unit_test_setup_teardown(test_value_with_newline_or_nul_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_config_without_env_leaves_an_empty_environment, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
