/* elfinfo.c - a shared library's soname and glibc versions (see elfinfo.h). */
#include "elfinfo.h"

#include <elf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VER_MAX 4096 /* version entries walked: glibc's libc.so.6 has ~45 */

struct elf {
	const unsigned char *b;
	size_t len;
	Elf64_Phdr *phs;
	size_t nph;
	size_t str_off, str_len; /* the dynamic string table, in the file */
};

static bool in_file(const struct elf *f, uint64_t off, uint64_t n)
{
	return off <= f->len && n <= f->len - off;
}

/* A virtual address of a PT_LOAD segment as a file offset. */
static bool vaddr_off(const struct elf *f, uint64_t va, uint64_t *off)
{
	for (size_t i = 0; i < f->nph; i++) {
		const Elf64_Phdr *p = &f->phs[i];

		if (p->p_type == PT_LOAD && va >= p->p_vaddr && va - p->p_vaddr < p->p_filesz) {
			*off = p->p_offset + (va - p->p_vaddr);
			return in_file(f, *off, 1);
		}
	}
	return false;
}

/* A string of the dynamic string table, NUL-terminated inside it. */
static const char *dstr(const struct elf *f, uint64_t idx)
{
	const char *s, *nul;

	if (idx >= f->str_len)
		return NULL;
	s = (const char *)f->b + f->str_off + idx;
	nul = memchr(s, '\0', f->str_len - idx);
	return nul != NULL ? s : NULL;
}

int glibc_version_cmp(const char *a, const char *b)
{
	while (*a != '\0' || *b != '\0') {
		long x = strtol(a, (char **)&a, 10), y = strtol(b, (char **)&b, 10);

		if (x != y)
			return x < y ? -1 : 1;
		a += *a == '.';
		b += *b == '.';
		if ((*a != '\0' && (*a < '0' || *a > '9')) || (*b != '\0' && (*b < '0' || *b > '9')))
			break;
	}
	return 0;
}

/* Keeps the higher of `name`'s GLIBC_x.y and out. */
static void keep_glibc(const char *name, char *out, size_t size)
{
	const char *v;

	if (name == NULL || strncmp(name, "GLIBC_", 6) != 0)
		return;
	v = name + 6;
	if (*v < '0' || *v > '9' || strspn(v, "0123456789.") != strlen(v) || strlen(v) >= size)
		return;
	if (out[0] == '\0' || glibc_version_cmp(v, out) > 0)
		snprintf(out, size, "%s", v);
}

static int verneed(const struct elf *f, uint64_t va, uint64_t num, struct elf_info *o)
{
	uint64_t off;
	size_t walked = 0;

	if (num == 0 || !vaddr_off(f, va, &off))
		return num == 0 ? 0 : -1;
	for (uint64_t i = 0; i < num; i++) {
		Elf64_Verneed vn;
		uint64_t aoff;

		if (!in_file(f, off, sizeof(vn)))
			return -1;
		memcpy(&vn, f->b + off, sizeof(vn));
		aoff = off + vn.vn_aux;
		for (unsigned k = 0; k < vn.vn_cnt; k++) {
			Elf64_Vernaux va_;

			if (++walked > VER_MAX || !in_file(f, aoff, sizeof(va_)))
				return -1;
			memcpy(&va_, f->b + aoff, sizeof(va_));
			keep_glibc(dstr(f, va_.vna_name), o->glibc_needed, sizeof(o->glibc_needed));
			if (va_.vna_next == 0)
				break;
			aoff += va_.vna_next;
		}
		if (vn.vn_next == 0)
			break;
		off += vn.vn_next;
	}
	return 0;
}

static int verdef(const struct elf *f, uint64_t va, uint64_t num, struct elf_info *o)
{
	uint64_t off;

	if (num == 0 || !vaddr_off(f, va, &off))
		return num == 0 ? 0 : -1;
	for (uint64_t i = 0; i < num && i < VER_MAX; i++) {
		Elf64_Verdef vd;
		Elf64_Verdaux vda;

		if (!in_file(f, off, sizeof(vd)))
			return -1;
		memcpy(&vd, f->b + off, sizeof(vd));
		if (vd.vd_cnt > 0 && in_file(f, off + vd.vd_aux, sizeof(vda))) {
			memcpy(&vda, f->b + off + vd.vd_aux, sizeof(vda));
			keep_glibc(dstr(f, vda.vda_name), o->glibc_defined, sizeof(o->glibc_defined));
		}
		if (vd.vd_next == 0)
			break;
		off += vd.vd_next;
	}
	return 0;
}

/* The dynamic section's entries we read. */
struct dyn {
	uint64_t strtab, strsz, soname, verneed, verneednum, verdef, verdefnum;
	bool has_strtab, has_soname;
};

static int read_dynamic(const struct elf *f, struct dyn *d)
{
	memset(d, 0, sizeof(*d));
	for (size_t i = 0; i < f->nph; i++) {
		const Elf64_Phdr *p = &f->phs[i];

		if (p->p_type != PT_DYNAMIC)
			continue;
		if (!in_file(f, p->p_offset, p->p_filesz))
			return -1;
		for (uint64_t o = 0; o + sizeof(Elf64_Dyn) <= p->p_filesz; o += sizeof(Elf64_Dyn)) {
			Elf64_Dyn dy;

			memcpy(&dy, f->b + p->p_offset + o, sizeof(dy));
			if (dy.d_tag == DT_NULL)
				break;
			switch (dy.d_tag) {
			case DT_STRTAB: d->strtab = dy.d_un.d_ptr, d->has_strtab = true; break;
			case DT_STRSZ: d->strsz = dy.d_un.d_val; break;
			case DT_SONAME: d->soname = dy.d_un.d_val, d->has_soname = true; break;
			case DT_VERNEED: d->verneed = dy.d_un.d_ptr; break;
			case DT_VERNEEDNUM: d->verneednum = dy.d_un.d_val; break;
			case DT_VERDEF: d->verdef = dy.d_un.d_ptr; break;
			case DT_VERDEFNUM: d->verdefnum = dy.d_un.d_val; break;
			default: break;
			}
		}
		return 0;
	}
	return -1; /* no PT_DYNAMIC: not a shared library */
}

int elf_info_parse(const unsigned char *buf, size_t len, const char *what,
		   struct elf_info *out, struct err *e)
{
	struct elf f = { .b = buf, .len = len };
	Elf64_Ehdr eh;
	struct dyn d;
	uint64_t str_off;
	int rv = -1;

	memset(out, 0, sizeof(*out));
	if (len < sizeof(eh) || memcmp(buf, ELFMAG, SELFMAG) != 0)
		return err_set(e, EXIT_USAGE, "%s is not an ELF file", what);
	memcpy(&eh, buf, sizeof(eh));
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return err_set(e, EXIT_USAGE, "%s is not a 64-bit little-endian ELF file", what);
	if (eh.e_type != ET_DYN || eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 ||
	    eh.e_phnum > 256 || !in_file(&f, eh.e_phoff, (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr)))
		return err_set(e, EXIT_USAGE, "%s is not a shared library (ELF type %u, %u program "
			       "headers)", what, eh.e_type, eh.e_phnum);
	out->machine = eh.e_machine;
	f.nph = eh.e_phnum;
	f.phs = malloc(f.nph * sizeof(*f.phs));
	if (f.phs == NULL)
		return err_sys(e, EXIT_CTRUN, "%s", what);
	memcpy(f.phs, buf + eh.e_phoff, f.nph * sizeof(*f.phs));
	if (read_dynamic(&f, &d) < 0 || !d.has_strtab || !vaddr_off(&f, d.strtab, &str_off) ||
	    !in_file(&f, str_off, d.strsz)) {
		err_set(e, EXIT_USAGE, "%s: its dynamic section is missing or broken", what);
		goto out;
	}
	f.str_off = str_off;
	f.str_len = d.strsz;
	if (d.has_soname) {
		const char *s = dstr(&f, d.soname);

		if (s == NULL || strlen(s) >= sizeof(out->soname)) {
			err_set(e, EXIT_USAGE, "%s: its DT_SONAME is broken", what);
			goto out;
		}
		snprintf(out->soname, sizeof(out->soname), "%s", s);
	}
	if (verneed(&f, d.verneed, d.verneednum, out) < 0 || verdef(&f, d.verdef, d.verdefnum, out) < 0) {
		err_set(e, EXIT_USAGE, "%s: its symbol versions are broken", what);
		goto out;
	}
	rv = 0;
out:
	free(f.phs);
	return rv;
}
