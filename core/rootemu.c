/* rootemu.c - root emulation's seccomp filter (see rootemu.h). */
#include "rootemu.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util.h"

#ifndef SECCOMP_FILTER_FLAG_SPEC_ALLOW
#define SECCOMP_FILTER_FLAG_SPEC_ALLOW (1UL << 2)
#endif

/* The filter knows the ABI this program is built for, and no other. */
#if defined(__x86_64__) && !defined(__ILP32__)
#define ROOTEMU_ARCH AUDIT_ARCH_X86_64
#define ROOTEMU_NR_LIMIT 0x40000000u /* x32's numbers carry this bit */
#elif defined(__aarch64__) && defined(__LP64__)
#define ROOTEMU_ARCH AUDIT_ARCH_AARCH64
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ROOTEMU_ARCH AUDIT_ARCH_PPC64LE
#endif

bool rootemu_in_userns(void)
{
	char buf[256];
	unsigned long inside, outside, count;
	int fd = open("/proc/self/uid_map", O_RDONLY | O_CLOEXEC | O_NOFOLLOW), n;
	ssize_t len;

	if (fd < 0)
		return false;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		/* Empty: a namespace whose map nobody wrote yet. */
		return len == 0;
	buf[len] = '\0';
	/* The host's namespace maps every id to itself, in one line. */
	if (sscanf(buf, " %lu %lu %lu %n", &inside, &outside, &count, &n) == 3 &&
	    buf[n] == '\0' && inside == 0 && outside == 0 && count == 4294967295UL)
		return false;
	return true;
}

#ifdef ROOTEMU_ARCH

/* Jump targets of the program below, resolved once it is laid out. */
enum { NEXT, ALLOW, FAKE, FSARG, NLABELS };

struct insn {
	uint16_t code;
	uint32_t k;
	int jt, jf; /* labels, for jumps */
};

/* Laid out with labels, then turned into sock_filter with relative jumps. */
static size_t layout(struct sock_filter *out, size_t max)
{
	static const uint32_t fake[] = {
#ifdef SYS_chown
		SYS_chown,
#endif
#ifdef SYS_lchown
		SYS_lchown,
#endif
		SYS_fchown,    SYS_fchownat,  SYS_setuid,    SYS_setgid,
		SYS_setreuid,  SYS_setregid,  SYS_setresuid, SYS_setresgid,
		SYS_setgroups,
	};
	struct insn p[40];
	size_t n = 0, at[NLABELS] = { 0 };

#define OP(c, kk) (p[n++] = (struct insn){ (uint16_t)(c), (uint32_t)(kk), NEXT, NEXT })
#define JEQ(kk, t, f) (p[n++] = (struct insn){ BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(kk), t, f })
	OP(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
	JEQ(ROOTEMU_ARCH, NEXT, ALLOW);
	OP(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
#ifdef ROOTEMU_NR_LIMIT
	p[n++] = (struct insn){ BPF_JMP | BPF_JGE | BPF_K, ROOTEMU_NR_LIMIT, ALLOW, NEXT };
#endif
	for (size_t i = 0; i < sizeof(fake) / sizeof(fake[0]); i++)
		JEQ(fake[i], FAKE, NEXT);
	JEQ(SYS_setfsuid, FSARG, NEXT);
	JEQ(SYS_setfsgid, FSARG, ALLOW);
	at[FSARG] = n;
	/* The low 32 bits of the first argument (every architecture here
	 * is little-endian); (uid_t)-1 asks for the current id. */
	OP(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]));
	JEQ(UINT32_MAX, ALLOW, FAKE);
	at[ALLOW] = n;
	OP(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	at[FAKE] = n;
	OP(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (0 & SECCOMP_RET_DATA));
#undef OP
#undef JEQ
	if (n > max)
		return 0;
	for (size_t i = 0; i < n; i++) {
		size_t t = p[i].jt == NEXT ? i + 1 : at[p[i].jt];
		size_t f = p[i].jf == NEXT ? i + 1 : at[p[i].jf];

		out[i] = (struct sock_filter){ p[i].code, (uint8_t)(t - i - 1),
					       (uint8_t)(f - i - 1), p[i].k };
	}
	return n;
}

int rootemu_install(struct err *e)
{
	struct sock_filter f[40];
	struct sock_fprog prog = { 0 };

	prog.len = (unsigned short)layout(f, sizeof(f) / sizeof(f[0]));
	prog.filter = f;
	if (prog.len == 0) {
		errno = EINVAL;
		return err_sys(e, EXIT_CTRUN, "root emulation: the filter does not fit");
	}
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_SPEC_ALLOW,
		    &prog) == 0)
		return 0;
	/* Kernels before 4.17 know no such flag. */
	if (errno == EINVAL && prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) == 0)
		return 0;
	return err_sys(e, EXIT_CTRUN, "root emulation: installing its seccomp filter");
}

#else

int rootemu_install(struct err *e)
{
	errno = EINVAL;
	return err_sys(e, EXIT_CTRUN, "root emulation: no seccomp filter for this architecture");
}

#endif

void rootemu_apply(bool quiet)
{
	struct err e = { 0 };

	if (!rootemu_in_userns() || rootemu_install(&e) == 0 || errno == EACCES)
		return;
	if (!quiet)
		fprintf(stderr, "ctrun: note: %s; chown and setuid fail in this container as "
				"they do outside one\n", e.msg);
}
