/* ldconfig.c - the host's ldconfig over the image's tree, with the least
 * privilege that still writes the image's ld.so.cache (see driver.h).
 *
 * `ldconfig -r ROOT` reads a tree the image controls (its ld.so.conf and
 * includes, every ELF file in the scanned directories) and writes
 * ROOT/etc/ld.so.cache.  It chroots itself into ROOT first, so it needs
 * CAP_SYS_CHROOT and nothing else: as uid 0 it owns a root-owned image's
 * /etc without CAP_DAC_OVERRIDE.  libnvidia-container (nvc_ldcache.c) runs
 * it chrooted with a cleared bounding set, the container's uid, rlimits and
 * a seccomp filter; ctrun keeps the subset that needs no library: every
 * capability but CAP_SYS_CHROOT dropped (bounding, permitted, effective,
 * inheritable, ambient), no_new_privs, no inherited descriptor, rlimits on
 * CPU, file size and core, a wall-clock alarm that survives the exec, and
 * death with the hook. */
#include "driver.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* A cache of thousands of libraries takes well under a second to build. */
#define LDCONFIG_TIMEOUT_S 30
/* ld.so.cache is ~100 KiB for a large image; nothing else is written. */
#define LDCONFIG_FSIZE (16ULL << 20)

/* Keeps only CAP_SYS_CHROOT, in every set.  -1 when root could not drop:
 * then ldconfig must not run.  A process without CAP_SETPCAP (a plain
 * user) cannot touch its bounding set, and has nothing there to lose. */
static int keep_only_chroot(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { { 0 } };

	for (int cap = 0; cap < 64; cap++)
		/* EINVAL: past this kernel's last capability. */
		if (cap != CAP_SYS_CHROOT && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 &&
		    errno == EPERM && geteuid() == 0)
			return -1;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -1;
	if (syscall(SYS_capget, &h, d) < 0)
		return -1;
	/* CAP_SYS_CHROOT (18) is in the first word; keep it only if held. */
	d[0].effective = d[0].permitted = d[0].permitted & (1u << CAP_SYS_CHROOT);
	d[0].inheritable = 0;
	d[1].effective = d[1].permitted = d[1].inheritable = 0;
	return syscall(SYS_capset, &h, d) < 0 ? -1 : 0;
}

static int limit(int res, rlim_t v)
{
	struct rlimit r = { v, v };

	return setrlimit(res, &r);
}

__attribute__((noreturn)) static void child(const char *bin, char *const argv[], pid_t parent,
					    unsigned timeout_s)
{
	char *envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(126);
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
	}
	/* Nothing of the hook's (the container's namespace, the state) is
	 * ldconfig's business. */
	if (close_range(3, ~0U, 0) < 0)
		for (int fd = 3; fd < 4096; fd++)
			close(fd);
	if (keep_only_chroot() < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    limit(RLIMIT_CPU, timeout_s) < 0 || limit(RLIMIT_FSIZE, LDCONFIG_FSIZE) < 0 ||
	    limit(RLIMIT_CORE, 0) < 0)
		_exit(126);
	/* An alarm survives execve: ldconfig is killed after timeout_s of wall
	 * time even when it waits rather than computes. */
	alarm(timeout_s);
	execve(bin, argv, envp);
	_exit(127);
}

int hook_ldconfig_run(const char *bin, const char *root, const char *libdir, unsigned timeout_s)
{
	/* LIBDIR named too: the host's ldconfig scans its own distribution's
	 * default directories, which need not be the image's (/usr/lib64 is
	 * not one of Debian's). */
	char *argv[] = { "ldconfig", "-r", (char *)root, (char *)libdir, NULL };
	pid_t self = getpid(), pid = fork();
	int status;

	if (pid == 0)
		child(bin, argv, self, timeout_s);
	if (pid < 0)
		return -1;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

void hook_driver_ldconfig(const char *root, const char *libdir)
{
	static const char *const bins[] = { "/sbin/ldconfig.real", "/sbin/ldconfig",
					    "/usr/sbin/ldconfig" };
	const char *bin = NULL;

	/* Ubuntu's /sbin/ldconfig is a shell wrapper; the real one is static. */
	for (size_t i = 0; i < sizeof(bins) / sizeof(*bins) && bin == NULL; i++)
		if (access(bins[i], X_OK) == 0)
			bin = bins[i];
	if (bin == NULL) {
		fprintf(stderr, "ctrun-hook: warning: no ldconfig on the host; the container's "
			"ld.so.cache was not updated\n");
		return;
	}
	if (hook_ldconfig_run(bin, root, libdir, LDCONFIG_TIMEOUT_S) < 0)
		fprintf(stderr, "ctrun-hook: warning: %s -r %s failed or ran past %d s; the "
			"driver libraries are in the default search path but not in the "
			"container's ld.so.cache\n", bin, root, LDCONFIG_TIMEOUT_S);
}
