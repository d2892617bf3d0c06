/* main.c - ctrun-agent, the small static program that runs inside the
 * container (one per node) and starts and supervises that node's workers.
 *
 *     /.ctrun/agent /.ctrun/spec
 *     /.ctrun/agent --exec|--print-worker-env /.ctrun/spec   (ctrun shell, ctrun env --image)
 *     /.ctrun/agent --hold       (the command of ctrun __hold: holdmsg.h)
 *
 * It needs nothing from the image (static, no libc there required) and
 * reads everything from its spec (agentspec.h).  Two processes:
 *
 *   the shim (the container's init under runc): forwards TERM INT HUP QUIT
 *   USR1 USR2 to the supervisor, reaps orphans, and ends the supervisor when
 *   ctrun goes away (EOF on the control FIFO).  It never forwards SIGURG:
 *   runc 1.1 relays the SIGURGs the Go runtime sends itself for preemption,
 *   and SIGURG means "a peer node failed" to the supervisor.  A real peer
 *   failure arrives from Slurm (scancel --signal=URG reaches every process
 *   of the step) or from ctrun as 'U' on the control FIFO.
 *
 *   the supervisor: supervise_run (runner/supervise.h) with all its
 *   guarantees; on the first worker failure it tells ctrun (F on the
 *   events FIFO, agentproto.h) so ctrun can cancel the Slurm step at once,
 *   and when it is done it says so (E): a container that ends without it
 *   lost its agent.
 *
 * The exit status is the workers' (0, the first failing worker's status,
 * 128+N for a signal), 126/127 when the command cannot run, 125 when the
 * agent itself fails. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agentprog.h"
#include "agentproto.h"
#include "agentspec.h"
#include "asuser.h"
#include "command.h"
#include "entry.h"
#include "envfile.h"
#include "holdmsg.h"
#include "imageenv.h"
#include "pmifd.h"
#include "rootemu.h"
#include "sigloop.h"
#include "supervise.h"
#include "util.h"

extern char **environ;

static int events_fd = -1;

static void fail(const char *what, const struct err *e)
{
	fprintf(stderr, "ctrun: %s%s%s\n", what, e != NULL ? ": " : "", e != NULL ? e->msg : "");
}

static pid_t notify_failure(void *arg)
{
	const struct supervise_result *r = arg;
	/* The signal that killed it, if one did: ctrun tells a stop from
	 * outside (the whole step signalled) from a failure by it. */
	const struct agent_msg m = { .kind = AGENT_MSG_FAILED, .rank = r->failed_rank,
				     .sig = r->term_signal };

	if (events_fd >= 0)
		agentproto_send(events_fd, &m);
	return 0;
}

static const char *env_of(char *const *env, const char *key)
{
	size_t len = strlen(key);

	for (; env != NULL && *env != NULL; env++)
		if (strncmp(*env, key, len) == 0 && (*env)[len] == '=')
			return *env + len + 1;
	return NULL;
}

/* Whether apptainer sourced an environment of the image's own: the
 * /.singularity.d/env/ *.sh scripts of an image it built, or the
 * /environment of a Singularity 2 image (its action scripts read nothing
 * else). */
static bool has_apptainer_env(void)
{
	return access("/environment", F_OK) == 0 || imageenv_has_scripts(IMAGEENV_DIR);
}

/* /etc/environment of the image, a plain file read up to ENVFILE_MAX bytes;
 * NULL when there is none (or it is not a plain file). */
static char *read_environment(void)
{
	int fd = open("/etc/environment", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	size_t len = 0;
	struct stat st;
	char *text = NULL;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return NULL;
	}
	text = read_fd_max(fd, ENVFILE_MAX, &len);
	close(fd);
	return text;
}

/* The container's own environment under apptainer --cleanenv, completed as
 * apptainer does not: an image it did not build (an enroot squashfs, a
 * directory) keeps its Docker ENV in /etc/environment, which apptainer
 * never reads; and --cleanenv sets LANG=C over the host's LANG, which
 * ctrun passes on as it passes every other variable (docs/containers.md). */
static int apptainer_env(const struct agent_spec *s, struct strv *env)
{
	const char *lang = strv_getenv(env, "LANG");

	if (lang != NULL && strcmp(lang, "C") == 0) {
		for (size_t i = 0; i < s->inherit.n; i++)
			if (strncmp(s->inherit.v[i], "LANG=", 5) == 0 && strv_unsetenv(env, "LANG") < 0)
				return -1;
	}
	if (!has_apptainer_env()) {
		char *text = read_environment();
		int rc = text != NULL ? envfile_parse(text, env) : 0;

		free(text);
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* --clean-env under a runtime that passes the host's environment into the
 * container (enroot, ch-run): what is still the host's goes, but what the
 * image's /etc/environment sets (agentspec_drop_host). */
static int clean_host_env(const struct agent_spec *s, struct strv *own)
{
	struct strv image = { 0 };
	char *text = read_environment();
	int rc = text != NULL ? envfile_parse(text, &image) : 0;

	free(text);
	if (rc == 0)
		rc = agentspec_drop_host(s, own, image.v);
	strv_free(&image);
	return rc;
}

/* The image's /.singularity.d/env scripts, sourced by its /bin/sh as
 * apptainer's exec action does, for a runtime that did not (OCI, enroot):
 * their result replaces the container's own environment layer.  An image
 * without /bin/sh cannot run them: said once, and its scripts left out. */
static int image_scripts(const struct agent_spec *s, struct strv *own)
{
	struct strv env = { 0 };
	struct err e = { 0 };

	if (!imageenv_has_scripts(IMAGEENV_DIR))
		return 0;
	if (access(IMAGEENV_SH, X_OK) < 0) {
		fprintf(stderr, "ctrun: warning: the image's %s/*.sh are not applied on %s: it has "
			"no %s to source them\n", IMAGEENV_DIR, s->host, IMAGEENV_SH);
		return 0;
	}
	if (imageenv_source(IMAGEENV_SH, IMAGEENV_DIR, AGENT_BIN, own->v, IMAGEENV_TIMEOUT_MS,
			    &env, &e) < 0) {
		fprintf(stderr, "ctrun: %s (in the container on %s): fix the image's scripts\n",
			e.msg, s->host);
		return -1;
	}
	strv_free(own);
	*own = env;
	return 0;
}

/* Enters the working directory, creating it when the image lacks it (as
 * runc and docker do for process.cwd, so every runtime behaves alike). */
static int enter_cwd(const char *cwd)
{
	char path[PATH_MAX];

	if (chdir(cwd) == 0)
		return 0;
	if (errno != ENOENT || strlen(cwd) >= sizeof(path))
		goto fail;
	strcpy(path, cwd);
	for (char *p = path + 1;; p++) {
		if (*p == '/' || *p == '\0') {
			char c = *p;

			*p = '\0';
			if (mkdir(path, 0755) < 0 && errno != EEXIST) {
				fprintf(stderr, "ctrun: the working directory %s is not in the image and "
					"cannot be created there (%s): create it in the image or "
					"--mount a directory there\n", cwd, strerror(errno));
				return -1;
			}
			*p = c;
			if (c == '\0')
				break;
		}
	}
	if (chdir(cwd) == 0)
		return 0;
fail:
	fprintf(stderr, "ctrun: cannot enter the working directory %s in the container: %s\n", cwd,
		strerror(errno));
	return -1;
}

/* What every mode does before a command runs: the container's own
 * environment completed (apptainer's, --clean-env's, the image's scripts),
 * the library directories that exist, the entrypoint, the working
 * directory.  Returns 0, or the exit status to end with. */
static int prepare(struct agent_spec *s, struct strv *own, const char **entry, bool *via_sh)
{
	struct strv dirs = { 0 };

	if (strv_extend(own, environ) < 0 || (s->complete_env && apptainer_env(s, own) < 0) ||
	    (s->host_drop.n > 0 && clean_host_env(s, own) < 0)) {
		fail("agent: out of memory", NULL);
		return EXIT_CTRUN;
	}
	if (s->image_scripts && image_scripts(s, own) < 0)
		return EXIT_CTRUN;
	/* Library directories that are there (--nv's /.singularity.d/libs). */
	for (size_t i = 0; i < s->libdirs.n; i++) {
		struct stat st;

		if (stat(s->libdirs.v[i], &st) == 0 && S_ISDIR(st.st_mode) &&
		    strv_push(&dirs, s->libdirs.v[i]) < 0) {
			fail("agent: out of memory", NULL);
			return EXIT_CTRUN;
		}
	}
	strv_free(&s->libdirs);
	s->libdirs = dirs;
	/* The image's default command (F) without one: the argv, a shell. */
	if (s->entry.n > 0 && (*entry = entry_find(s, via_sh)) == NULL && !s->entry_default) {
		fprintf(stderr, "ctrun: --entrypoint: the image has no entrypoint on %s (looked for",
			s->host);
		for (size_t i = 0; i < s->entry.n; i++)
			fprintf(stderr, "%s %s", i ? "," : "", s->entry.v[i]);
		fprintf(stderr, "); run without --entrypoint\n");
		return EXIT_CTRUN;
	}
	if (s->cwd != NULL && enter_cwd(s->cwd) < 0)
		return EXIT_CTRUN;
	return 0;
}

/* The supervisor process: workers from the spec, supervise_run, exit code. */
static int supervisor(struct agent_spec *s)
{
	struct strv *envs = calloc(s->n, sizeof(*envs));
	struct worker *w = calloc(s->n, sizeof(*w));
	struct supervise_result r;
	struct supervise_opts so = { .host = s->host, .prefix = s->prefix,
				     .grace_ms = (int)s->grace_ms, .quiet = s->quiet,
				     .log_dir = s->log_dir, .on_first_failure = notify_failure,
				     .arg = &r };
	struct err e = { 0 };
	char **paths = calloc(s->n, sizeof(*paths));
	struct strv own = { 0 };
	struct agentprog prog;
	const char *entry = NULL;
	bool via_sh = false;
	int rc;

	if (envs == NULL || w == NULL || paths == NULL) {
		fail("agent: out of memory", NULL);
		return EXIT_CTRUN;
	}
	if ((rc = prepare(s, &own, &entry, &via_sh)) != 0)
		return rc;
	for (size_t i = 0; i < s->n; i++) {
		char path[PATH_MAX];

		/* The image's entrypoint runs the command, as `apptainer run` does. */
		if (entry != NULL) {
			struct strv a = { 0 };

			if (entry_argv(s, entry, via_sh, s->w[i].argv.v, &a) < 0) {
				fail("agent: out of memory", NULL);
				return EXIT_CTRUN;
			}
			strv_free(&s->w[i].argv);
			s->w[i].argv = a;
		}
		if (agentspec_worker_env(s, i, own.v, &envs[i], &e) < 0) {
			fail("agent", &e);
			return EXIT_CTRUN;
		}
		/* PATH as the worker will see it: the image's, or the user's --env. */
		if (command_resolve(s->w[i].argv.v[0], env_of(envs[i].v, "PATH"), path,
				    sizeof(path), &e) < 0) {
			fprintf(stderr, "ctrun: %s (in the container on %s)\n", e.msg, s->host);
			return e.code;
		}
		paths[i] = strdup(path);
		if (paths[i] == NULL) {
			fail("agent: out of memory", NULL);
			return EXIT_CTRUN;
		}
		free(s->w[i].argv.v[0]);
		s->w[i].argv.v[0] = paths[i];
		w[i].rank = s->w[i].rank;
		w[i].local_rank = s->w[i].local_rank;
		w[i].argv = s->w[i].argv.v;
		w[i].envp = envs[i].v;
		w[i].cpus = s->w[i].has_cpus ? &s->w[i].cpus : NULL;
	}
	/* It adds to each worker's environment: the vectors may move. */
	rc = agentprog_start(&prog, s, envs, events_fd, &so, &e);
	for (size_t i = 0; i < s->n; i++)
		w[i].envp = envs[i].v;
	if (rc < 0 || supervise_run(w, s->n, &so, &r, &e) < 0) {
		agentprog_end(&prog);
		fail("agent", &e);
		return e.code != 0 ? e.code : EXIT_CTRUN;
	}
	agentprog_end(&prog);
	return r.status;
}

static int status_of(int ws)
{
	if (WIFEXITED(ws))
		return WEXITSTATUS(ws);
	if (WIFSIGNALED(ws))
		return 128 + WTERMSIG(ws);
	return EXIT_CTRUN;
}

struct shim {
	pid_t child;      /* the supervisor */
	int control_fd;   /* -1 once ctrun is gone */
	struct agentproto_reader rd;
	int status;
	bool done;
};

static void shim_control(void *arg, size_t k, short revents)
{
	struct shim *sh = arg;
	char c[64];
	ssize_t n = read(sh->control_fd, c, sizeof(c));

	(void)k;
	(void)revents;
	for (size_t off = 0; n > 0 && off < (size_t)n;) {
		struct agent_msg m;

		off += agentproto_feed(&sh->rd, c + off, (size_t)n - off, &m);
		if (m.kind == AGENT_MSG_PEER_FAILED)
			kill(sh->child, SIGURG);
	}
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		/* ctrun is gone: nobody is left to report to. */
		kill(sh->child, SIGTERM);
		close(sh->control_fd);
		sh->control_fd = -1;
	}
}

/* Everything but SIGURG goes on to the supervisor: runc relays the Go
 * runtime's own SIGURGs, and a real peer failure comes as 'U' or from
 * Slurm straight to the supervisor. */
static void shim_signal(void *arg, int sig)
{
	struct shim *sh = arg;

	if (sig != SIGURG)
		kill(sh->child, sig);
}

/* Every child: the supervisor, and orphans the container's init inherits. */
static void shim_exit(void *arg, pid_t pid, int ws)
{
	struct shim *sh = arg;

	if (pid == sh->child) {
		sh->status = status_of(ws);
		sh->done = true;
	}
}

/* The shim: signals, orphans, ctrun's liveness; returns the supervisor's status. */
static int shim(struct sigloop *l, pid_t child, int control_fd)
{
	struct shim sh = { .child = child, .control_fd = control_fd, .status = EXIT_CTRUN };
	struct err e = { 0 };

	l->ops = (struct sigloop_ops){ .on_signal = shim_signal, .on_exit = shim_exit,
				       .on_fd = shim_control, .arg = &sh };
	if (sigloop_open(l, &e) < 0) {
		int ws;

		fail("agent", &e);
		kill(child, SIGKILL);
		if (waitpid(child, &ws, 0) == child)
			sh.status = status_of(ws);
		return sh.status;
	}
	while (!sh.done) {
		struct pollfd pfd = { .fd = sh.control_fd, .events = POLLIN };

		if (sigloop_wait(l, &pfd, 1, -1) < 0)
			break;
	}
	return sh.status;
}

/* `ctrun shell` and `ctrun env --image` (EXEC_ARG, PRINT_ARG): the spec's
 * one worker, no supervisor: its environment built as the workers' is, then
 * either exec'd in this process (the shell keeps the terminal, its signals
 * and its exit status) or printed, KEY=VALUE lines sorted by key. */
#define EXEC_ARG "--exec"
#define PRINT_ARG "--print-worker-env"
static int exec_mode(const char *spec, bool print)
{
	struct agent_spec s;
	struct strv own = { 0 }, env = { 0 }, argv = { 0 };
	struct err e = { 0 };
	const char *entry = NULL;
	bool via_sh = false;
	char path[PATH_MAX], *text;
	size_t len;
	int rc;

	text = read_file(spec, &len);
	if (text == NULL) {
		fprintf(stderr, "ctrun: agent: cannot read %s: %s\n", spec, strerror(errno));
		return EXIT_CTRUN;
	}
	if (len > AGENTSPEC_MAX || agentspec_parse(text, len, &s, &e) < 0 || s.n == 0 ||
	    (!print && s.n != 1)) {
		fail(spec, len > AGENTSPEC_MAX || e.msg[0] == '\0' ? NULL : &e);
		return EXIT_CTRUN;
	}
	free(text);
	/* The caller's identity first, as for workers (asuser.h): the image's
	 * env scripts, the entrypoint and the shell run as the user. */
	if (s.as_user && asuser_enter((uid_t)s.uid, (gid_t)s.gid, &e) < 0) {
		fail("agent", &e);
		return EXIT_CTRUN;
	}
	rootemu_apply(s.quiet);
	if ((rc = prepare(&s, &own, &entry, &via_sh)) != 0)
		return rc;
	/* One block per worker, blocks separated by a blank line (`ctrun env`). */
	for (size_t i = 0; print && i < s.n; i++) {
		if (agentspec_worker_env(&s, i, own.v, &env, &e) < 0) {
			fail("agent", &e);
			return EXIT_CTRUN;
		}
		strv_sort(&env);
		if (i > 0)
			putchar('\n');
		for (size_t k = 0; k < env.n; k++)
			puts(env.v[k]);
		strv_free(&env);
	}
	if (print)
		return fflush(stdout) == 0 ? 0 : EXIT_CTRUN;
	if (agentspec_worker_env(&s, 0, own.v, &env, &e) < 0) {
		fail("agent", &e);
		return EXIT_CTRUN;
	}
	/* The hold's entrypoint starts from the container's environment (holdmsg.h). */
	if (entry != NULL && s.w[0].argv.n >= 2 && strcmp(s.w[0].argv.v[1], HOLD_ARG) == 0 &&
	    hold_entry_env(&s, own.v, &env, &e) < 0) {
		fail("agent", &e);
		return EXIT_CTRUN;
	}
	if (entry_argv(&s, entry, via_sh, s.w[0].argv.v, &argv) < 0) {
		fail("agent: out of memory", NULL);
		return EXIT_CTRUN;
	}
	if (command_resolve(argv.v[0], env_of(env.v, "PATH"), path, sizeof(path), &e) < 0) {
		fprintf(stderr, "ctrun: %s (in the container on %s)\n", e.msg, s.host);
		return e.code;
	}
	execve(path, argv.v, env.v);
	fprintf(stderr, "ctrun: %s: %s (in the container on %s)\n", argv.v[0], strerror(errno),
		s.host);
	return errno == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC;
}

int main(int argc, char **argv)
{
	struct agent_spec s;
	struct err e = { 0 };
	struct sigloop loop;
	const struct agent_msg started = { .kind = AGENT_MSG_STARTED };
	char *text;
	size_t len;
	int control_fd = -1, status;
	pid_t child, self = getpid();
	struct pmifd pmi;

	/* The end of sourcing the image's scripts (imageenv.h): the
	 * environment they left, to the agent that started the shell. */
	if (argc == 2 && strcmp(argv[1], IMAGEENV_PRINT_ARG) == 0)
		return imageenv_print(IMAGEENV_FD, environ) < 0 ? EXIT_CTRUN : 0;
	/* srun in a batch script in the container: the host's (holdmsg.h). */
	{
		const char *base = strrchr(argv[0], '/');

		if (strcmp(base != NULL ? base + 1 : argv[0], "srun") == 0)
			return hold_srun_client(argc, argv);
	}
	/* ctrun __hold's command (through --exec): the SPANK plugin's container. */
	if (argc >= 2 && strcmp(argv[1], HOLD_ARG) == 0 &&
	    (argc == 2 || (argc == 3 && strcmp(argv[2], HOLD_WORKDIR_ARG) == 0)))
		return hold_main(argc == 3);
	if (argc == 3 && (strcmp(argv[1], EXEC_ARG) == 0 || strcmp(argv[1], PRINT_ARG) == 0))
		return exec_mode(argv[2], strcmp(argv[1], PRINT_ARG) == 0);
	/* A shell under rootless OCI: the caller's identity, then the shell. */
	if (argc >= 2 && strcmp(argv[1], ASUSER_ARG) == 0)
		return asuser_exec(argc, argv);
	if (argc != 2) {
		fprintf(stderr, "usage: %s SPEC   (started by ctrun inside a container)\n", argv[0]);
		return EXIT_USAGE;
	}
	/* Before the agent opens anything (pmifd.h). */
	pmifd_probe(&pmi);
	/* First of all: as PID 1 a signal with its default action is dropped,
	 * a blocked one waits for the signalfd. */
	sigloop_block(&loop, SIGLOOP_URG | SIGLOOP_REAP_ANY | SIGLOOP_FDS_FIRST, NULL);
	text = read_file(argv[1], &len);
	if (text == NULL) {
		fprintf(stderr, "ctrun: agent: cannot read %s: %s\n", argv[1], strerror(errno));
		return EXIT_CTRUN;
	}
	if (len > AGENTSPEC_MAX || agentspec_parse(text, len, &s, &e) < 0) {
		fail(argv[1], len > AGENTSPEC_MAX ? NULL : &e);
		return EXIT_CTRUN;
	}
	free(text);
	pmifd_settle(&pmi, s.pmi_fd3, s.quiet);
	if (s.events != NULL)
		events_fd = open(s.events, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (s.control != NULL)
		control_fd = open(s.control, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	/* Tells ctrun the container started: a failure from here on is ours or
	 * the workers', not the runtime's. */
	if (events_fd >= 0 && agentproto_send(events_fd, &started) < 0)
		perror("ctrun: agent: events");
	child = fork();
	if (child < 0) {
		perror("ctrun: agent: fork");
		return EXIT_CTRUN;
	}
	if (child == 0) {
		const struct agent_msg ended = { .kind = AGENT_MSG_ENDED };

		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != self)
			_exit(EXIT_CTRUN);
		if (control_fd >= 0)
			close(control_fd);
		sigloop_close(&loop);
		/* The caller's identity before anything of the image runs (its
		 * env scripts, the workers): asuser.h. */
		if (s.as_user) {
			if (asuser_enter((uid_t)s.uid, (gid_t)s.gid, &e) < 0) {
				fail("agent", &e);
				_exit(EXIT_CTRUN);
			}
			if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != self)
				_exit(EXIT_CTRUN);
		}
		/* After the identity (whose set*id calls must be real). */
		rootemu_apply(s.quiet);
		status = supervisor(&s);
		/* The workers' end, reported: a container that ends without this
		 * line lost its agent (killed, out of memory), and ctrun says so. */
		if (events_fd >= 0 && agentproto_send(events_fd, &ended) < 0)
			perror("ctrun: agent: events");
		_exit(status);
	}
	status = shim(&loop, child, control_fd);
	agentspec_free(&s);
	return status;
}
