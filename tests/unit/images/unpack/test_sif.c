/* Unit tests: the SIF reader finds the primary system partition and refuses
 * every header or descriptor that points outside the file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "unpack/sif.h"

#define NDESCR 4
#define DESCR_OFF 256
#define PART_OFF 4096
#define PART_SIZE 1000
#define FILE_SIZE (PART_OFF + PART_SIZE)

static void put64(unsigned char *p, int64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)((uint64_t)v >> (8 * i));
}

static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static unsigned char *descr(unsigned char *buf, int i)
{
	return buf + DESCR_OFF + i * SIF_DESCR_SIZE;
}

/* Fills descriptor i as a partition (offsets as in sylabs/sif's rawDescriptor). */
static void set_partition(unsigned char *buf, int i, int64_t off, int64_t size, int32_t fstype,
			  int32_t parttype)
{
	unsigned char *d = descr(buf, i);

	put32(d + 0, SIF_DATA_PARTITION);
	d[4] = 1;                      /* used */
	put32(d + 5, (uint32_t)i + 1); /* id */
	put32(d + 9, 0xf0000001u);     /* group */
	put64(d + 17, off);
	put64(d + 25, size);
	put64(d + 33, size);
	put32(d + 201, (uint32_t)fstype);
	put32(d + 205, (uint32_t)parttype);
	memcpy(d + 209, "02", 3);
}

/* A valid SIF: a deffile descriptor, then the primary squashfs partition. */
static unsigned char *make_sif(void)
{
	unsigned char *b = calloc(1, FILE_SIZE);
	unsigned char *d;

	memcpy(b, "#!/usr/bin/env run-singularity\n", 31);
	memcpy(b + 32, "SIF_MAGIC", 10);
	memcpy(b + 42, "01", 3);
	memcpy(b + 45, "02", 3);
	put64(b + 80, NDESCR - 2);          /* free */
	put64(b + 88, NDESCR);              /* total */
	put64(b + 96, DESCR_OFF);
	put64(b + 104, NDESCR * SIF_DESCR_SIZE);
	put64(b + 112, PART_OFF);
	put64(b + 120, PART_SIZE);
	d = descr(b, 0);
	put32(d, SIF_DATA_DEFFILE);
	d[4] = 1;
	put64(d + 17, PART_OFF);
	put64(d + 25, 10);
	set_partition(b, 1, PART_OFF, PART_SIZE, SIF_FS_SQUASH, SIF_PART_PRIMSYS);
	memcpy(b + PART_OFF, "hsqs", 4);
	return b;
}

static void test_valid_sif_gives_the_primary_partition(void **state)
{
	unsigned char *b = make_sif();
	struct sif_partition p;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(sif_parse_buffer(b, FILE_SIZE, &p, &e), 0);
	assert_int_equal(p.offset, PART_OFF);
	assert_int_equal(p.size, PART_SIZE);
	assert_int_equal(p.fstype, SIF_FS_SQUASH);
	assert_int_equal(p.parttype, SIF_PART_PRIMSYS);
	assert_string_equal(p.arch, "02");
	assert_int_equal(p.id, 2);
	free(b);
}

static void expect_error(unsigned char *b, size_t len, const char *needle)
{
	struct sif_partition p;
	struct err e = { 0 };

	assert_int_equal(sif_parse_buffer(b, len, &p, &e), -1);
	assert_int_equal(e.code, EXIT_CTRUN);
	if (strstr(e.msg, needle) == NULL)
		fail_msg("error '%s' does not say '%s'", e.msg, needle);
	free(b);
}

static void test_truncated_header(void **state)
{
	(void)state;
	expect_error(make_sif(), 100, "too short");
}

static void test_bad_magic(void **state)
{
	unsigned char *b = make_sif();

	(void)state;
	b[32] = 'X';
	expect_error(b, FILE_SIZE, "SIF_MAGIC");
}

static void test_unknown_version(void **state)
{
	unsigned char *b = make_sif();

	(void)state;
	memcpy(b + 42, "02", 3);
	expect_error(b, FILE_SIZE, "version");
}

static void test_descriptor_table_past_eof(void **state)
{
	(void)state;
	/* the file ends inside the table */
	expect_error(make_sif(), DESCR_OFF + SIF_DESCR_SIZE + 10, "past the end");
}

static void test_descriptor_table_offset_negative(void **state)
{
	unsigned char *b = make_sif();

	(void)state;
	put64(b + 96, -1);
	expect_error(b, FILE_SIZE, "past the end");
}

static void test_descriptor_count_huge(void **state)
{
	unsigned char *b = make_sif();

	(void)state;
	put64(b + 88, (int64_t)1 << 40);
	expect_error(b, FILE_SIZE, "descriptor count");
}

static void test_descriptor_size_too_small_for_count(void **state)
{
	unsigned char *b = make_sif();

	(void)state;
	put64(b + 104, 10);
	expect_error(b, FILE_SIZE, "cannot hold");
}

static void test_partition_offset_past_eof(void **state)
{
	unsigned char *b = make_sif();

	(void)state;
	set_partition(b, 1, FILE_SIZE + 1, 10, SIF_FS_SQUASH, SIF_PART_PRIMSYS);
	expect_error(b, FILE_SIZE, "outside the file");
}

static void test_partition_size_past_eof(void **state)
{
	unsigned char *b = make_sif();

	(void)state;
	set_partition(b, 1, PART_OFF, PART_SIZE + 1, SIF_FS_SQUASH, SIF_PART_PRIMSYS);
	expect_error(b, FILE_SIZE, "outside the file");
}

static void test_partition_offset_plus_size_overflows(void **state)
{
	unsigned char *b = make_sif();

	(void)state;
	set_partition(b, 1, INT64_MAX - 10, 100, SIF_FS_SQUASH, SIF_PART_PRIMSYS);
	expect_error(b, FILE_SIZE, "outside the file");
}

static void test_partition_negative_size(void **state)
{
	unsigned char *b = make_sif();

	(void)state;
	set_partition(b, 1, PART_OFF, -5, SIF_FS_SQUASH, SIF_PART_PRIMSYS);
	expect_error(b, FILE_SIZE, "outside the file");
}

static void test_no_system_partition(void **state)
{
	unsigned char *b = make_sif();

	(void)state;
	/* a data partition and a non-primary system partition are not the rootfs */
	set_partition(b, 1, PART_OFF, PART_SIZE, SIF_FS_SQUASH, SIF_PART_DATA);
	set_partition(b, 2, PART_OFF, PART_SIZE, SIF_FS_SQUASH, SIF_PART_SYSTEM);
	expect_error(b, FILE_SIZE, "no primary system partition");
}

static void test_unused_descriptor_is_ignored(void **state)
{
	unsigned char *b = make_sif();

	(void)state;
	descr(b, 1)[4] = 0; /* the primary partition's slot, marked free */
	expect_error(b, FILE_SIZE, "no primary system partition");
}

static void test_two_primary_partitions_are_refused(void **state)
{
	unsigned char *b = make_sif();

	(void)state;
	set_partition(b, 2, PART_OFF, 10, SIF_FS_SQUASH, SIF_PART_PRIMSYS);
	expect_error(b, FILE_SIZE, "more than one");
}

static void test_read_fd_reads_only_what_it_needs(void **state)
{
	char path[] = "/tmp/ctrun-test-sif-XXXXXX";
	unsigned char *b = make_sif();
	struct sif_partition p;
	struct err e = { 0 };
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, b, FILE_SIZE), FILE_SIZE);
	assert_int_equal(sif_read_fd(fd, &p, &e), 0);
	assert_int_equal(p.offset, PART_OFF);
	/* and the same file cut short inside the partition fails */
	assert_int_equal(ftruncate(fd, PART_OFF + 10), 0);
	assert_int_equal(sif_read_fd(fd, &p, &e), -1);
	close(fd);
	unlink(path);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid_sif_gives_the_primary_partition),
		cmocka_unit_test(test_truncated_header),
		cmocka_unit_test(test_bad_magic),
		cmocka_unit_test(test_unknown_version),
		cmocka_unit_test(test_descriptor_table_past_eof),
		cmocka_unit_test(test_descriptor_table_offset_negative),
		cmocka_unit_test(test_descriptor_count_huge),
		cmocka_unit_test(test_descriptor_size_too_small_for_count),
		cmocka_unit_test(test_partition_offset_past_eof),
		cmocka_unit_test(test_partition_size_past_eof),
		cmocka_unit_test(test_partition_offset_plus_size_overflows),
		cmocka_unit_test(test_partition_negative_size),
		cmocka_unit_test(test_no_system_partition),
		cmocka_unit_test(test_unused_descriptor_is_ignored),
		cmocka_unit_test(test_two_primary_partitions_are_refused),
		cmocka_unit_test(test_read_fd_reads_only_what_it_needs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
