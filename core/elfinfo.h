/* elfinfo.h - what a shared library says about itself and what it needs of
 * the C library: its DT_SONAME, the highest GLIBC_x.y among its version
 * needs (.gnu.version_r: what the dynamic loader refuses to load it
 * without, "version `GLIBC_2.34' not found"), and the highest it defines
 * (.gnu.version_d: libc.so.6's own, which is glibc's version).
 *
 * Pure and bounded: bytes in, facts or an error out; every offset and
 * count is checked against the buffer, so a truncated or hostile file is
 * an error, never a read out of bounds (tests/fuzz/fuzz_elfinfo.c).
 * ELF64 little-endian only (x86_64, aarch64: the machines ctrun runs on). */
#ifndef CTRUN_ELFINFO_H
#define CTRUN_ELFINFO_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

#define ELFINFO_MAX (64u << 20) /* bytes of a library read to check it */

struct elf_info {
	char soname[128];        /* DT_SONAME, "" when it has none */
	char glibc_needed[24];   /* "2.34": the highest GLIBC_ version needed, "" none */
	char glibc_defined[24];  /* "2.36": the highest GLIBC_ version defined, "" none */
	unsigned machine;        /* e_machine */
};

/* -1 with e (EXIT_USAGE) naming what is wrong, `what` (the file) first. */
int elf_info_parse(const unsigned char *buf, size_t len, const char *what,
		   struct elf_info *out, struct err *e);

/* Compares two glibc versions ("2.34" and "2.4": 34 > 4); <0, 0, >0. */
int glibc_version_cmp(const char *a, const char *b);

#endif
