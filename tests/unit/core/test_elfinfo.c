/* Unit tests: a shared library's soname and glibc versions, read from the
 * machine's own libraries (glibc's libc.so.6, json-c's, which ctrun links)
 * and from broken copies of them: every truncation and stray bytes are an
 * error or a result, never a read outside the buffer (ASan in make
 * unit-san; the fuzz target fuzz_elfinfo goes further). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "elfinfo.h"
#include "util.h"

/* A library of this machine, by the path the loader took for it. */
static char *slurp(const char *soname, size_t *len)
{
	char cmd[256], path[512] = "";
	FILE *p;
	char *buf;
	int fd;

	snprintf(cmd, sizeof(cmd), "ldconfig -p | awk '$1 == \"%s\" && /x86-64|AArch64/ {print $NF; "
		 "exit}'", soname);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_non_null(fgets(path, sizeof(path), p));
	pclose(p);
	path[strcspn(path, "\n")] = '\0';
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	buf = read_fd_max(fd, ELFINFO_MAX, len);
	close(fd);
	assert_non_null(buf);
	return buf;
}

static void test_glibc_itself(void **state)
{
	struct elf_info i;
	struct err e = { 0 };
	size_t len;
	char *b = slurp("libc.so.6", &len);

	(void)state;
	assert_int_equal(elf_info_parse((unsigned char *)b, len, "libc.so.6", &i, &e), 0);
	assert_string_equal(i.soname, "libc.so.6");
	/* Its highest GLIBC_ definition is the running glibc's version. */
	assert_string_equal(i.glibc_defined, gnu_get_libc_version());
	free(b);
}

static void test_a_library_and_its_needs(void **state)
{
	struct elf_info i;
	struct err e = { 0 };
	size_t len;
	char *b = slurp("libjson-c.so.5", &len);

	(void)state;
	assert_int_equal(elf_info_parse((unsigned char *)b, len, "json-c", &i, &e), 0);
	assert_string_equal(i.soname, "libjson-c.so.5");
	assert_true(i.glibc_needed[0] == '2' && i.glibc_needed[1] == '.');
	assert_true(glibc_version_cmp(i.glibc_needed, gnu_get_libc_version()) <= 0);
	assert_string_equal(i.glibc_defined, "");
	free(b);
}

static void test_not_a_library(void **state)
{
	struct elf_info i;
	struct err e = { 0 };
	unsigned char text[] = "#!/bin/sh\necho hello\n";

	(void)state;
	assert_int_equal(elf_info_parse(text, sizeof(text), "/opt/x/lib.so", &i, &e), -1);
	assert_string_equal(e.msg, "/opt/x/lib.so is not an ELF file");
	assert_int_equal(e.code, EXIT_USAGE);
	text[0] = 0x7f, text[1] = 'E', text[2] = 'L', text[3] = 'F';
	assert_int_equal(elf_info_parse(text, sizeof(text), "f", &i, &e), -1);
}

/* Every cut of a real library, and bytes flipped all over it: an error or
 * a result, each time within the buffer (the copy is exactly len long). */
static void test_truncated_and_corrupted_copies(void **state)
{
	struct elf_info i;
	size_t len;
	char *b = slurp("libjson-c.so.5", &len);

	(void)state;
	for (size_t cut = 0; cut < len; cut += cut < 8192 ? 1 : 997) {
		unsigned char *c = malloc(cut + 1);
		struct err e = { 0 };

		memcpy(c, b, cut);
		(void)elf_info_parse(c, cut, "cut", &i, &e);
		free(c);
	}
	srand(42);
	for (int round = 0; round < 2000; round++) {
		unsigned char *c = malloc(len);
		struct err e = { 0 };

		memcpy(c, b, len);
		for (int k = 0; k < 8; k++)
			c[(size_t)rand() % (round % 2 ? 4096 : len)] = (unsigned char)rand();
		(void)elf_info_parse(c, len, "corrupt", &i, &e);
		free(c);
	}
	free(b);
}

static void test_glibc_version_order(void **state)
{
	(void)state;
	assert_true(glibc_version_cmp("2.34", "2.4") > 0);
	assert_true(glibc_version_cmp("2.17", "2.28") < 0);
	assert_int_equal(glibc_version_cmp("2.36", "2.36"), 0);
	assert_true(glibc_version_cmp("2.2.5", "2.2") > 0);
	assert_true(glibc_version_cmp("2.3", "2.2.5") > 0);
	assert_true(glibc_version_cmp("3.0", "2.99") > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_glibc_itself),
		cmocka_unit_test(test_a_library_and_its_needs),
		cmocka_unit_test(test_not_a_library),
		cmocka_unit_test(test_truncated_and_corrupted_copies),
		cmocka_unit_test(test_glibc_version_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
