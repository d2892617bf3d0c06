/* worker_check.c - can build/ctrun-worker (the workers of check and bench
 * in an image) run in this image?  It is linked against glibc (see
 * docs/bench.md), so the image needs its program interpreter; without it
 * the workers would only fail with exec's bare ENOENT. */
#include "runtime.h"

#include <elf.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "inroot.h"

/* The program interpreter (PT_INTERP) of a 64-bit ELF file, "" for none. */
static void elf_interp(const char *path, char *out, size_t size)
{
	Elf64_Ehdr eh;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	out[0] = '\0';
	if (fd < 0)
		return;
	if (pread(fd, &eh, sizeof(eh), 0) == (ssize_t)sizeof(eh) &&
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
	    eh.e_phentsize == sizeof(Elf64_Phdr))
		for (unsigned i = 0; i < eh.e_phnum; i++) {
			Elf64_Phdr ph;

			if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) !=
			    (ssize_t)sizeof(ph))
				break;
			if (ph.p_type != PT_INTERP || ph.p_filesz >= size)
				continue;
			if (pread(fd, out, ph.p_filesz, (off_t)ph.p_offset) != (ssize_t)ph.p_filesz)
				out[0] = '\0';
			else
				out[ph.p_filesz] = '\0';
			break;
		}
	close(fd);
}

int ctr_worker_check(const char *rootfs, const char *image, const char *worker, struct err *e)
{
	char interp[PATH_MAX];
	int rootfd, fd, rv = 0;

	elf_interp(worker, interp, sizeof(interp));
	if (rootfs == NULL || interp[0] != '/')
		return 0;
	rootfd = open(rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return err_sys(e, EXIT_CTRUN, "image root %s", rootfs);
	/* Inside the image: its symlinks (lib64 -> usr/lib64) followed there. */
	fd = inroot_open(rootfd, interp, O_PATH, 0, INROOT_CHROOT, NULL);
	if (fd < 0)
		rv = err_set(e, EXIT_CTRUN, "image %s has no C library (no %s): check and bench "
			     "need glibc in the image, their workers (ctrun-worker) are linked "
			     "against it", image, interp);
	else
		close(fd);
	close(rootfd);
	return rv;
}
