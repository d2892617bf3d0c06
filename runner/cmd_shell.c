/* cmd_shell.c - `ctrun shell --image IMG [COMMAND...]` (and `ctrun --image IMG`
 * with no command): an interactive shell in the container, with the binds
 * and GPUs a run would get.
 *
 * From an salloc shell or a batch script (a job but no step), the shell
 * belongs on the allocation's first node, not where salloc runs: ctrun
 * re-runs itself there with `srun --pty -N1 -n1`. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commands.h"
#include "container.h"
#include "drivers.h"
#include "inroot.h"
#include "quote.h"
#include "topology.h"
#include "util.h"

extern char **environ;

/* srun --pty -N1 -n1 -w FIRST ctrun shell ARGS: the same command line, on
 * the first node of the allocation. */
static int via_srun(const struct options *o, const struct topo *t, struct err *e)
{
	struct strv argv = { 0 };
	char self[PATH_MAX];
	int ret = 0, ws;
	pid_t pid;

	if (realpath("/proc/self/exe", self) == NULL)
		return err_sys(e, EXIT_CTRUN, "finding ctrun's own path");
	if (t->nodes.n == 0)
		return err_set(e, EXIT_CTRUN, "shell: the job has no nodes (SLURM_JOB_NODELIST)");
	ret |= strv_push(&argv, "srun");
	if (isatty(STDIN_FILENO))
		ret |= strv_push(&argv, "--pty");
	ret |= strv_push(&argv, "--nodes=1");
	ret |= strv_push(&argv, "--ntasks=1");
	ret |= strv_pushf(&argv, "--nodelist=%s", t->nodes.v[0]);
	ret |= strv_push(&argv, "--export=ALL");
	ret |= strv_push(&argv, self);
	ret |= strv_extend(&argv, o->args.v);
	if (ret != 0) {
		strv_free(&argv);
		return err_sys(e, EXIT_CTRUN, "srun argv");
	}
	if (o->dry_run) {
		shell_quote_argv(stdout, argv.v);
		putchar('\n');
		strv_free(&argv);
		return 0;
	}
	pid = fork();
	if (pid == 0) {
		execvp(argv.v[0], argv.v);
		fprintf(stderr, "ctrun: cannot run srun: %s\n", strerror(errno));
		_exit(errno == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC);
	}
	strv_free(&argv);
	if (pid < 0)
		return err_sys(e, EXIT_CTRUN, "fork");
	/* srun owns the terminal; ^C reaches it directly. */
	signal(SIGINT, SIG_IGN);
	while (waitpid(pid, &ws, 0) < 0)
		if (errno != EINTR)
			return err_sys(e, EXIT_CTRUN, "waiting for srun");
	return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

/* bash when the image has it, else sh. */
static const char *default_shell(const struct ctr_setup *c)
{
	struct stat st;
	int rootfd, fd;
	bool bash;

	if (ctr_rootfs_dir(&c->spec) == NULL)
		return "/bin/sh";
	rootfd = open(c->spec.rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return "/bin/sh";
	fd = inroot_open(rootfd, "/bin/bash", O_PATH, 0, INROOT_CHROOT, NULL);
	bash = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
	if (fd >= 0)
		close(fd);
	close(rootfd);
	return bash ? "/bin/bash" : "/bin/sh";
}

/* `ctrun --image IMG` with no command runs the image's default, as `docker
 * run` and `apptainer run` do: for OCI its /etc/rc (Entrypoint and Cmd,
 * which ctrun's unpacker and enroot's import write) or a SIF's runscript,
 * through sh; else a shell.  Under enroot and apptainer the agent looks
 * inside the container (the adapter's entrypoint candidates, run alone) and
 * runs the shell when there is none: every default gets the workers'
 * environment (--env, --clean-env). */
static int image_default(struct ctr_setup *c, struct strv *argv)
{
	static const char *const entries[] = { "/etc/rc", "/.singularity.d/runscript", NULL };
	int rootfd;

	switch (c->spec.rt->default_cmd) {
	case DEFAULT_CMD_ENTRYPOINT:
		c->spec.entrypoint = true;
		c->spec.run_default = true;
		return strv_push(argv, default_shell(c));
	case DEFAULT_CMD_ROOT:
		break;
	}
	rootfd = ctr_rootfs_dir(&c->spec) != NULL
			 ? open(c->spec.rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC) : -1;
	for (const char *const *p = entries; rootfd >= 0 && *p != NULL; p++) {
		struct stat st;
		int fd = inroot_open(rootfd, *p, O_PATH, 0, INROOT_CHROOT, NULL);
		bool file = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode);

		if (fd >= 0)
			close(fd);
		if (file) {
			close(rootfd);
			return strv_push(argv, "/bin/sh") < 0 || strv_push(argv, *p) < 0 ? -1 : 0;
		}
	}
	if (rootfd >= 0)
		close(rootfd);
	return strv_push(argv, default_shell(c));
}

int cmd_shell(struct options *o, struct err *e)
{
	char host[256] = "localhost";
	struct ctr_setup c;
	struct topo t;
	int rv = -1;

	if (o->image == NULL)
		return err_set(e, EXIT_USAGE, "shell: no image (ctrun shell --image IMG)");
	if (gethostname(host, sizeof(host) - 1) == 0)
		host[strcspn(host, ".")] = '\0';
	if (topo_detect(o, environ, host, 0, &t, e) < 0)
		return -1;
	if (t.mode == MODE_BATCH) {
		rv = via_srun(o, &t, e);
		topo_free(&t);
		return rv;
	}
	/* The agent (its exec mode) gives the shell, or the image's default
	 * command, the workers' environment. */
	if (ctr_setup_init(&c, o, &t, environ, true, e) < 0)
		goto out;
	c.spec.tty = isatty(STDIN_FILENO);
	if (o->command.n > 0	       ? strv_extend(&c.spec.argv, o->command.v) < 0
	    : options_cmd_is(o, "run") ? image_default(&c, &c.spec.argv) < 0
				       : strv_push(&c.spec.argv, default_shell(&c)) < 0) {
		err_sys(e, EXIT_CTRUN, "shell");
		goto free;
	}
	rv = ctr_run_exec(&c, o, &t, environ, false, e);
	/* --save after the image's default command, as after a run. */
	if (rv == 0 && !o->dry_run && o->save != NULL && options_cmd_is(o, "run") &&
	    o->command.n == 0 && ctr_save(&c, o->save, o->cache_compression, o->quiet, e) < 0)
		rv = -1;
free:
	ctr_setup_free(&c);
out:
	topo_free(&t);
	return rv;
}
