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

#include "agentspec.h"
#include "imageenv.h"
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

	if (ctr_root_dir(&c->root) == NULL)
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
 * through sh; else a shell.  enroot runs its rc itself, apptainer `run`. */
static int image_default(struct ctr_setup *c, struct strv *argv)
{
	static const char *const entries[] = { "/etc/rc", "/.singularity.d/runscript", NULL };
	int rootfd;

	switch (c->spec.rt->default_cmd) {
	case DEFAULT_CMD_ENTRYPOINT:
		c->spec.entrypoint = true; /* enroot start NAME: the image's rc, no arguments */
		return 0;
	case DEFAULT_CMD_RUN:
		c->spec.run_default = true;
		return 0;
	case DEFAULT_CMD_ROOT:
		break;
	}
	rootfd = ctr_root_dir(&c->root) != NULL
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

/* Under runc nothing reads a SIF's /.singularity.d/env/ *.sh (the agent
 * does for workers): the command runs through apptainer's exec action, a
 * fixed script, when the image has that directory and a /bin/sh. */
static int image_scripts(struct ctr_setup *c)
{
	struct strv argv = { 0 };
	int rootfd, fd, sh;
	bool has;

	if (ctr_root_dir(&c->root) == NULL)
		return 0;
	rootfd = open(c->spec.rootfs, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return 0;
	fd = inroot_open(rootfd, IMAGEENV_DIR, O_PATH | O_DIRECTORY, 0, INROOT_CHROOT, NULL);
	sh = inroot_open(rootfd, IMAGEENV_SH, O_PATH, 0, INROOT_CHROOT, NULL);
	has = fd >= 0 && sh >= 0;
	if (fd >= 0)
		close(fd);
	if (sh >= 0)
		close(sh);
	close(rootfd);
	if (!has)
		return 0;
	if (strv_push(&argv, IMAGEENV_SH) < 0 || strv_push(&argv, "-c") < 0 ||
	    strv_push(&argv, imageenv_exec_script) < 0 || strv_push(&argv, "sh") < 0 ||
	    strv_extend(&argv, c->spec.argv.v) < 0) {
		strv_free(&argv);
		return -1;
	}
	strv_free(&c->spec.argv);
	c->spec.argv = argv;
	return 0;
}

/* OCI starts from nothing: the host's variables (as workers get them),
 * under the image's own, and the terminal type. */
static int shell_env(struct ctr_setup *c)
{
	struct strv env = { 0 };
	const char *term = getenv("TERM");

	for (char **p = environ; *p != NULL; p++)
		if (agentspec_inheritable(*p) && strv_push(&env, *p) < 0)
			goto fail;
	for (size_t i = 0; i < c->spec.env.n; i++) {
		char *kv = c->spec.env.v[i], *eq = strchr(kv, '=');
		int rc;

		if (eq == NULL)
			continue;
		*eq = '\0';
		rc = strv_setenv(&env, kv, eq + 1, 1);
		*eq = '=';
		if (rc < 0)
			goto fail;
	}
	if (term != NULL && strv_setenv(&env, "TERM", term, 1) < 0)
		goto fail;
	strv_free(&c->spec.env);
	c->spec.env = env;
	return 0;
fail:
	strv_free(&env);
	return -1;
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
	if (ctr_setup_init(&c, o, &t, environ, false, e) < 0)
		goto out;
	c.spec.tty = isatty(STDIN_FILENO);
	if (o->command.n > 0		  ? strv_extend(&c.spec.argv, o->command.v) < 0
	    : o->cmd == CMD_RUN ? image_default(&c, &c.spec.argv) < 0
				  : strv_push(&c.spec.argv, default_shell(&c)) < 0) {
		err_sys(e, EXIT_CTRUN, "shell");
		goto free;
	}
	if (c.spec.rt->image_env && (shell_env(&c) < 0 || image_scripts(&c) < 0)) {
		err_sys(e, EXIT_CTRUN, "shell environment");
		goto free;
	}
	if (o->dry_run) {
		struct ctr_plan p = { 0 };

		if (ctr_make_plan(&c, &p, e) == 0) {
			ctr_plan_print(&c.spec, &p);
			rv = 0;
		}
		ctr_plan_free(&p);
		goto free;
	}
	rv = ctr_run_foreground(&c, environ, e);
	if (rv == 0 && o->save != NULL && ctr_save(&c, o->save, o->quiet, e) < 0)
		rv = -1;
free:
	ctr_setup_free(&c);
out:
	topo_free(&t);
	return rv;
}
