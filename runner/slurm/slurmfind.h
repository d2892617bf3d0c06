/* slurmfind.h - which libslurm belongs to the Slurm in use.
 *
 * A node may hold several Slurm installs (Debian's package in /usr and a
 * newer build in /opt; Spack or EasyBuild trees), and the -dev symlink
 * libslurm.so names whichever was installed last.  The library must be the
 * one of the Slurm that runs the job, so it is looked for, in order:
 *
 *   1. $CTRUN_LIBSLURM (a path or a soname): that one only;
 *   2. the install of the Slurm commands on PATH: srun, else scontrol or
 *      sinfo, followed through symlinks to PREFIX/bin/srun, then
 *      PREFIX/lib64, PREFIX/lib and PREFIX/lib/<multiarch> (Debian:
 *      /usr/lib/x86_64-linux-gnu), the newest libslurm.so.N there;
 *   3. the install of $SLURM_CONF (PREFIX/etc/slurm.conf), the same way;
 *   4. the dynamic linker's libslurm.so.N, newest N first (any release
 *      from .30 up, so Slurm's next soname needs no new ctrun), then
 *      libslurm.so.
 *
 * Looking loads nothing (slurmlib.c dlopens the answer in a child
 * process); its answer is kept for the next look from the same PATH,
 * SLURM_CONF and CTRUN_LIBSLURM (a process's installs do not change while
 * it runs), so a ctrun start reads the directories once. */
#ifndef CTRUN_SLURMFIND_H
#define CTRUN_SLURMFIND_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

struct slurmlib_choice {
	char path[PATH_MAX];  /* what to dlopen; "" = step 4, the soname scan */
	bool only;            /* $CTRUN_LIBSLURM: that or nothing */
	char why[PATH_MAX + 96]; /* "the Slurm of srun on PATH (/opt/slurm-new/bin/srun)" */
};

/* Fills c from envp (PATH, SLURM_CONF, CTRUN_LIBSLURM) and the file system. */
void slurmlib_find(char *const *envp, struct slurmlib_choice *c);

/* The newest libslurm.so.N (N all digits) in directory dir, into out;
 * false when there is none. */
bool slurmlib_newest_in(const char *dir, char *out, size_t size);

#endif
