/* Unit tests: what an image may cost the node.  A compression bomb stops at
 * [cache] max_unpacked and leaves nothing behind; a layer in a compression
 * that libarchive only decompresses by running a program is refused, and
 * the program never runs; a pulled image's config is refused over 16 MiB
 * before a byte of it is read (issue 29). */
#define CTRTEST_STREAM /* last in ctrtest.h: archive_dl.h renames libarchive's functions */
#include "ctrtest.h"
#include "cache/cache.h"

#include <sys/wait.h>

#define MiB (1ULL << 20)

/* One layer holding a file of `size` zeros, gzip'd when gz. */
static struct blob zeros_layer(size_t size, int gz)
{
	char *zeros = calloc(1, size);
	struct member m = { "zeros", 'f', zeros, size };
	struct blob b;

	assert_non_null(zeros);
	b = tar_blob(&m, 1, gz);
	free(zeros);
	return b;
}

/* Entries of dir other than . and .. whose name starts with prefix. */
static int count_prefixed(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)) != NULL)
		n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
		     strncmp(de->d_name, prefix, strlen(prefix)) == 0;
	closedir(d);
	return n;
}

/* `docker save | gzip` of 3 MiB of zeros: a few KiB on disk. */
static void test_gzip_bomb_archive_stops_at_the_limit(void **state)
{
	struct fx *f = *state;
	struct err e = { 0 };
	struct blob l = zeros_layer(3 * MiB, 0);
	struct stat st;

	make_docker_archive(f->image, &l, 1, 1);
	blob_free(&l);
	assert_int_equal(stat(f->image, &st), 0);
	assert_true(st.st_size < 64 * 1024);
	assert_int_equal(image_unpack_progress(f->image, IMAGE_DOCKER_ARCHIVE, f->dest, false, MiB,
					       &e), -1);
	assert_int_equal(e.code, EXIT_CTRUN);
	assert_non_null(strstr(e.msg, f->image));
	assert_non_null(strstr(e.msg, "more than 1 MiB"));
	assert_non_null(strstr(e.msg, "[cache] max_unpacked"));
	assert_null(strchr(e.msg, '\n'));
	/* The decompressed copy was unnamed (or named for an instant). */
	assert_int_equal(count_prefixed(f->dir, ".ctrun"), 0);
	assert_false(present(in(f, "zeros")));
	/* Under the limit, the same image unpacks. */
	assert_int_equal(image_unpack_progress(f->image, IMAGE_DOCKER_ARCHIVE, f->dest, false,
					       8 * MiB, &e), 0);
	assert_int_equal(stat(in(f, "zeros"), &st), 0);
	assert_int_equal(st.st_size, 3 * MiB);
}

/* A plain outer tar with a gzip'd layer: the bound holds while the layer
 * is written, not only while a whole archive is decompressed. */
static void test_gzip_bomb_layer_stops_at_the_limit(void **state)
{
	struct fx *f = *state;
	struct err e = { 0 };
	struct blob l = zeros_layer(3 * MiB, 1);
	struct stat st;

	make_docker_archive(f->image, &l, 1, 0);
	blob_free(&l);
	assert_int_equal(image_unpack_progress(f->image, IMAGE_DOCKER_ARCHIVE, f->dest, false, MiB,
					       &e), -1);
	assert_non_null(strstr(e.msg, "more than 1 MiB"));
	assert_non_null(strstr(e.msg, "CTRUN_CACHE_MAX_UNPACKED"));
	/* Stopped before the block that would pass the limit was written
	 * (libarchive may still give the file its declared size, as a hole). */
	assert_true(stat(in(f, "zeros"), &st) < 0 || (unsigned long long)st.st_blocks * 512 <= MiB);
}

/* Through the cache: the failed creation leaves no entry and no temp. */
static void test_cache_refuses_a_bomb_and_keeps_no_temp(void **state)
{
	struct fx *f = *state;
	char cache[128], entries[160], rootfs[4096];
	struct cache_cfg c = { .quiet = true, .max_unpacked = MiB };
	struct err e = { 0 };
	struct blob l = zeros_layer(3 * MiB, 1);

	make_docker_archive(f->image, &l, 1, 0);
	blob_free(&l);
	snprintf(cache, sizeof(cache), "%s/cache", f->dir);
	snprintf(entries, sizeof(entries), "%s/entries", cache);
	c.dir = cache;
	assert_int_equal(cache_get_rootfs(&c, f->image, rootfs, sizeof(rootfs), &e), -1);
	assert_non_null(strstr(e.msg, "[cache] max_unpacked"));
	assert_int_equal(count_prefixed(entries, ""), 0);
}

/* lrzip's header as libarchive's bidder wants it: "LRZI", major 0, minor 6. */
static const char lrzip_head[] = "LRZI\0\x06\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0";

static void test_layer_needing_an_external_decompressor_is_refused(void **state)
{
	struct fx *f = *state;
	struct err e = { 0 };
	struct blob l = { malloc(sizeof(lrzip_head)), sizeof(lrzip_head) };
	char bin[128], prog[160], marker[160], script[512], *path = getenv("PATH");
	char *old = strdup(path != NULL ? path : "/usr/bin:/bin"), newpath[4096];
	FILE *fp;

	/* A stand-in lrzip first on PATH: it leaves a mark if anything runs it. */
	snprintf(bin, sizeof(bin), "%s/bin", f->dir);
	snprintf(prog, sizeof(prog), "%s/lrzip", bin);
	snprintf(marker, sizeof(marker), "%s/lrzip-ran", f->dir);
	snprintf(script, sizeof(script), "#!/bin/sh\n: > '%s'\ncat >/dev/null\n", marker);
	assert_int_equal(mkdir(bin, 0755), 0);
	fp = fopen(prog, "w");
	assert_non_null(fp);
	fputs(script, fp);
	fclose(fp);
	assert_int_equal(chmod(prog, 0755), 0);
	snprintf(newpath, sizeof(newpath), "%s:%s", bin, old);
	setenv("PATH", newpath, 1);

	memcpy(l.data, lrzip_head, sizeof(lrzip_head));
	make_docker_archive(f->image, &l, 1, 0);
	blob_free(&l);
	assert_int_equal(image_unpack(f->image, IMAGE_DOCKER_ARCHIVE, f->dest, &e), -1);
	setenv("PATH", old, 1);
	free(old);
	assert_false(present(marker));
	assert_non_null(strstr(e.msg, "compressed with lrzip"));
	assert_non_null(strstr(e.msg, "layer 1"));
}

/* The whole archive so compressed: named at detection, not "unknown format". */
static void test_archive_needing_an_external_decompressor_is_named(void **state)
{
	struct fx *f = *state;
	struct err e = { 0 };
	enum image_kind k;

	write_blob(f->image, (struct blob){ (char *)lrzip_head, sizeof(lrzip_head) });
	assert_int_equal(image_detect(f->image, &k, &e), -1);
	assert_non_null(strstr(e.msg, "compressed with lrzip"));
	assert_non_null(strstr(e.msg, f->image));
}

static void test_compressions_are_known_by_their_magic(void **state)
{
	(void)state;
	assert_string_equal(archive_filter_by_magic((const unsigned char *)"\x1f\x8b\x08", 3), "gzip");
	assert_string_equal(archive_filter_by_magic((const unsigned char *)"\x28\xb5\x2f\xfd", 4),
			    "zstd");
	assert_string_equal(archive_filter_by_magic((const unsigned char *)"\x89LZO\0\r\n\x1a\n", 9),
			    "lzop");
	assert_null(archive_filter_by_magic((const unsigned char *)"\x1f", 1));
	assert_null(archive_filter_by_magic((const unsigned char *)"etc/motd", 8));
	/* .lzma has no magic: its properties byte and a dictionary size that its
	 * writers use (8 MiB here, xz's lzma -6), as libarchive's bidder reads it. */
	assert_string_equal(archive_filter_by_magic((const unsigned char *)"\x5d\0\0\x80\0"
						    "\xff\xff\xff\xff\xff\xff\xff\xff", 13), "lzma");
	assert_null(archive_filter_by_magic((const unsigned char *)"\x5d\0\0\x81\0"
					    "\xff\xff\xff\xff\xff\xff\xff\xff", 13));
}

/* A tar header (ustar at 257) is a plain tar whatever its first name says:
 * a layer whose first member is BZh... or LZIP... is no bzip2 or lzip. */
static void test_a_tar_is_a_tar_whatever_its_first_name(void **state)
{
	const struct member m = { "BZh91AY&SY-notes", 'f', "x\n", 0 };
	struct blob tar = tar_blob(&m, 1, 0);

	(void)state;
	assert_string_equal(archive_filter_by_magic((const unsigned char *)tar.data, 16), "bzip2");
	assert_null(archive_filter_by_magic((const unsigned char *)tar.data, 512));
	blob_free(&tar);
}

/* A registry's config blob: its size is checked before it is read, so a
 * 4 GiB one costs no memory (a child limited to 256 MiB of address space
 * would fail to hold it, with another message). */
static void test_image_config_over_16_mib_is_refused_unread(void **state)
{
	struct fx *f = *state;
	int fd = open(f->image, O_RDWR | O_CREAT | O_EXCL, 0600), status;
	pid_t pid;

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 4LL << 30), 0); /* sparse: no disk */
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct err e = { 0 };

		child_limit_as(256ull * MiB);
		/* Refused before anything is written: no image needed. */
		if (layerfile_config(fd, NULL, &e) == 0)
			_exit(11);
		if (e.code != EXIT_CTRUN || strstr(e.msg, "larger than 16 MiB") == NULL ||
		    strchr(e.msg, '\n') != NULL) {
			fprintf(stderr, "message: %s\n", e.msg);
			_exit(12);
		}
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	close(fd);
}

/* The config and a layer applied from descriptors (what blob_fetch hands
 * out), each read from its start wherever its offset was left. */
static void test_config_and_layer_applied_from_descriptors(void **state)
{
	static const char config[] = "{\"config\": {\"Env\": [\"FROM_CONFIG=1\"]}}";
	struct sqimage_opts o = { .comp = SQ_GZIP, .level = 1 };
	struct fx *f = *state;
	struct member m = { "etc/motd", 'f', "layer\n", 6 };
	struct blob b = tar_blob(&m, 1, 1);
	struct sqimage *s;
	struct err e = { 0 };
	char env[4096], sqsh[256];
	int fd, out;

	snprintf(sqsh, sizeof(sqsh), "%s/image.sqsh", f->dir);
	out = open(sqsh, O_RDWR | O_CREAT | O_EXCL, 0600);
	assert_true(out >= 0);
	assert_int_equal(sqimage_open(&s, out, &o, &e), 0);
	write_blob(f->image, b);
	blob_free(&b);
	fd = open(f->image, O_RDONLY);
	assert_true(fd >= 0);
	assert_true(lseek(fd, 0, SEEK_END) > 0);
	assert_int_equal(layerfile_apply(fd, 0, "sha256:x", s, NULL, &e), 0);
	close(fd);
	write_blob(f->image, (struct blob){ (char *)config, sizeof(config) - 1 });
	fd = open(f->image, O_RDONLY);
	assert_true(fd >= 0);
	assert_true(lseek(fd, 5, SEEK_SET) == 5);
	assert_int_equal(layerfile_config(fd, s, &e), 0);
	close(fd);
	assert_int_equal(sqimage_finish(s, &e), 0);
	sqimage_free(s);
	close(out);
	unsquash(sqsh, f->dest);
	assert_content(in(f, "etc/motd"), "layer\n");
	fd = open(in(f, "etc/environment"), O_RDONLY);
	assert_true(fd >= 0);
	env[read(fd, env, sizeof(env) - 1)] = '\0';
	close(fd);
	assert_non_null(strstr(env, "FROM_CONFIG=1"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_gzip_bomb_archive_stops_at_the_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gzip_bomb_layer_stops_at_the_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cache_refuses_a_bomb_and_keeps_no_temp, setup, teardown),
		cmocka_unit_test_setup_teardown(test_layer_needing_an_external_decompressor_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_archive_needing_an_external_decompressor_is_named, setup, teardown),
		cmocka_unit_test(test_compressions_are_known_by_their_magic),
		cmocka_unit_test(test_a_tar_is_a_tar_whatever_its_first_name),
		cmocka_unit_test_setup_teardown(test_image_config_over_16_mib_is_refused_unread, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_config_and_layer_applied_from_descriptors, setup,
						teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
