/* stage.c - the image staged with sbcast by the batch step (see stage.h). */
#include "stage.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "phase.h"
#include "stagedir.h"
#include "util.h"

#define STAGE_DEFAULT_DIR "/tmp"

bool stage_on_network_fs(const char *path)
{
	static const unsigned long network[] = {
		0x6969,     /* NFS */
		0x0BD00BD0, /* Lustre */
		0x47504653, /* GPFS */
		0x19830326, /* BeeGFS */
		0x00C36400, /* CephFS */
		0xFF534D42, /* CIFS */
		0xFE534D42, /* SMB2 */
		0xAAD7AAEA, /* PanFS */
		0x65735546, /* FUSE (WekaFS, sshfs, ...) */
	};
	struct statfs sf;

	if (statfs(path, &sf) < 0)
		return false;
	for (size_t i = 0; i < sizeof(network) / sizeof(*network); i++)
		if ((unsigned long)sf.f_type == network[i])
			return true;
	return false;
}

/* What `ctrun __stage prepare` prints on a node that found the job's
 * directory there already (stagedir.h): another node made it. */
#define STAGE_SHARED_LINE "ctrun-stage: the job's directory was there already"

/* Starts argv (PATH lookup, no shell) with the caller's stderr; its
 * stdout is out (-1: the caller's), closed here.  Its pid, or -1. */
static pid_t start_tool(char *const argv[], char *const *envp, int out)
{
	pid_t pid = fork();

	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		sigset_t none;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (null >= 0)
			dup2(null, STDIN_FILENO);
		if (out >= 0)
			dup2(out, STDOUT_FILENO);
		signal(SIGPIPE, SIG_DFL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execvpe(argv[0], argv, envp);
		fprintf(stderr, "ctrun: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (out >= 0)
		close(out);
	return pid;
}

/* Its exit status, -1 when it could not run. */
static int wait_tool(pid_t pid)
{
	int status;

	if (pid < 0)
		return -1;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

size_t stage_count_shared(int fd)
{
	char buf[4096], line[128];
	size_t len = 0, count = 0, want = strlen(STAGE_SHARED_LINE);
	bool overlong = false;
	ssize_t n;

	while ((n = read(fd, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] != '\n') {
				if (len < sizeof(line))
					line[len++] = buf[i];
				else
					overlong = true;
				continue;
			}
			/* The line, or its end: srun's --label (SLURM_LABELIO)
			 * puts "N: " before it. */
			if (!overlong && len >= want &&
			    memcmp(line + len - want, STAGE_SHARED_LINE, want) == 0 &&
			    (len == want || (len > want + 1 && line[len - want - 2] == ':' &&
					     line[len - want - 1] == ' ')))
				count++;
			len = 0;
			overlong = false;
		}
	}
	return count;
}

const char *stage_dir_of(const struct options *o)
{
	return o->stage_dir != NULL ? o->stage_dir : STAGE_DEFAULT_DIR;
}

/* One task on every node of the job: `ctrun __stage WHAT DIR NAME`.
 * *shared: how many nodes said that another had made the job's directory
 * (their stdout, read through a pipe while srun runs). */
static int on_every_node(const struct topo *t, char *const *env, const char *what,
			 const struct stage *s, size_t *shared)
{
	char nodes[32], tasks[32], self[PATH_MAX];
	/* --ntasks too: a job's own SLURM_NTASKS (sbatch -n) would otherwise
	 * put more than one task on a node. */
	char *argv[] = { "srun", nodes, tasks, "--ntasks-per-node=1", "--kill-on-bad-exit=0",
			 self, "__stage", (char *)what, (char *)s->dir, (char *)s->name, NULL };
	int fds[2];
	pid_t pid;

	*shared = 0;
	if (realpath("/proc/self/exe", self) == NULL || pipe2(fds, O_CLOEXEC) < 0)
		return -1;
	snprintf(nodes, sizeof(nodes), "--nodes=%ld", t->nnodes);
	snprintf(tasks, sizeof(tasks), "--ntasks=%ld", t->nnodes);
	pid = start_tool(argv, env, fds[1]);
	*shared = pid > 0 ? stage_count_shared(fds[0]) : 0;
	close(fds[0]);
	return wait_tool(pid);
}

enum stage_choice stage_choose(bool must, long nnodes, bool image_on_network,
			       bool dir_on_network)
{
	if (must)
		return STAGE_TRY; /* the nodes' prepare tells whether they share it */
	if (nnodes < 2 || !image_on_network)
		return STAGE_NOT;
	return dir_on_network ? STAGE_NOT_SHARED : STAGE_TRY;
}

int stage_image(const struct options *o, const struct topo *t, struct strv *env,
		struct stage *s, struct err *e)
{
	const char *mode = o->stage != NULL ? o->stage : "auto", *base, *failed;
	char *argv[] = { "sbcast", s->from, s->to, NULL };
	bool must = strcmp(mode, "sbcast") == 0;
	size_t shared;
	struct stat st;
	int rc;

	s->from[0] = s->to[0] = s->name[0] = '\0';
	s->dir = stage_dir_of(o);
	if (o->image == NULL || strcmp(mode, "off") == 0)
		return 0;
	if (realpath(o->image, s->from) == NULL || stat(s->from, &st) < 0) {
		s->from[0] = '\0';
		return 0; /* the step's ctrun says what is wrong with the image */
	}
	if (!S_ISREG(st.st_mode)) {
		s->from[0] = '\0';
		if (must)
			return err_set(e, EXIT_USAGE, "--stage sbcast: %s is not a file (a directory "
				       "image is not staged)", o->image);
		return 0;
	}
	switch (stage_choose(must, t->nnodes, stage_on_network_fs(s->from),
			     stage_on_network_fs(s->dir))) {
	case STAGE_NOT:
		s->from[0] = '\0';
		return 0;
	case STAGE_NOT_SHARED:
		if (!o->quiet)
			fprintf(stderr, "ctrun: not staged: the stage directory %s is on a network "
				"file system, which every node sees: every node reads %s where it "
				"is (set [cache] stage_dir to a node-local directory)\n", s->dir,
				s->from);
		s->from[0] = '\0';
		return 0;
	case STAGE_TRY:
		break;
	}
	base = strrchr(s->from, '/') + 1;
	if (stagedir_name(s->name, sizeof(s->name), geteuid(), t->job_id, e) < 0) {
		s->from[0] = s->name[0] = '\0';
		return -1;
	}
	if (s->dir[0] != '/' ||
	    xsnprintf(s->to, sizeof(s->to), "%s/%s/%s", s->dir, s->name, base) < 0) {
		s->from[0] = s->to[0] = s->name[0] = '\0';
		return err_set(e, EXIT_USAGE, "[cache] stage_dir %s: must be an absolute path, and "
			       "short enough", s->dir);
	}
	if (o->verbose > 0)
		fprintf(stderr, "ctrun: staging %s to %s on %ld nodes (sbcast)\n", s->from, s->to,
			t->nnodes);
	/* The private directory first, on every node: sbcast follows a
	 * symlink and truncates what it names (stagedir.h). */
	failed = "making the job's private directory";
	rc = on_every_node(t, env->v, "prepare", s, &shared);
	/* Both steps are part of staging's time (--timings). */
	phase_mark("stage (prepare)");
	if (rc == 0 && shared > 0) {
		/* A node found the directory another had made: they share the
		 * stage directory (stagedir.h), and so see the image where it
		 * is; sbcast would find the first node's copy on the others. */
		if (!o->quiet)
			fprintf(stderr, "ctrun: %snot staged: the nodes share the stage directory %s "
				"(%zu of %ld found the job's directory there that another had "
				"made): every node reads %s where it is (set [cache] stage_dir to "
				"a node-local directory)\n", must ? "--stage sbcast: " : "", s->dir,
				shared, t->nnodes, s->from);
		stage_remove(t, env->v, s);
		s->from[0] = s->to[0] = s->name[0] = '\0';
		return 0;
	}
	if (rc == 0) {
		failed = "sbcast";
		rc = wait_tool(start_tool(argv, env->v, -1));
		phase_mark("stage (sbcast)");
	}
	if (rc != 0) {
		stage_remove(t, env->v, s); /* what the nodes that did not fail made */
		if (must)
			err_set(e, EXIT_CTRUN, "--stage sbcast: %s for %s in %s failed (status %d, "
				"its message above); check that %s exists on every node, or set "
				"[cache] stage_dir", failed, s->from, s->dir, rc, s->dir);
		else if (!o->quiet)
			fprintf(stderr, "ctrun: not staged: %s for %s failed (status %d); every node "
				"reads it from the shared file system\n", failed, s->from, rc);
		s->from[0] = s->to[0] = s->name[0] = '\0';
		return must ? -1 : 0;
	}
	if (strv_setenv(env, "CTRUN_STAGED_FROM", s->from, 1) < 0 ||
	    strv_setenv(env, "CTRUN_STAGED_TO", s->to, 1) < 0)
		return err_sys(e, EXIT_CTRUN, "srun environment");
	return 0;
}

void stage_remove(const struct topo *t, char *const *env, const struct stage *s)
{
	size_t shared;

	if (s->name[0] == '\0')
		return;
	if (on_every_node(t, env, "remove", s, &shared) != 0)
		fprintf(stderr, "ctrun: could not remove the staged copies %s/%s on every node "
			"(the next staging there, or ctrun cache gc there, will)\n", s->dir,
			s->name);
}

/* Whether path's directory is one of the caller's that no one else can
 * enter: then nobody else can have put path there or swap it later. */
static bool in_private_dir(const char *path)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');
	struct stat st;

	if (slash == NULL || slash == path || (size_t)(slash - path) >= sizeof(dir))
		return false;
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
	       (st.st_mode & 077) == 0;
}

const char *stage_local(const char *image, char *const *envp, const char **note)
{
	const char *from = envp_get(envp, "CTRUN_STAGED_FROM");
	const char *to = envp_get(envp, "CTRUN_STAGED_TO");
	struct stat a, b;
	bool ok;
	int fd;

	*note = NULL;
	if (from == NULL || to == NULL || strcmp(from, image) != 0)
		return image;
	/* Ours, a plain file (never through a symlink), whole, in our private
	 * directory: anything else was not made by our sbcast. */
	fd = open(to, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	ok = fd >= 0 && fstat(fd, &b) == 0 && S_ISREG(b.st_mode) && b.st_uid == geteuid() &&
	     stat(image, &a) == 0 && a.st_size == b.st_size && in_private_dir(to);
	if (fd >= 0)
		close(fd);
	if (!ok) {
		*note = "the staged copy is missing, not yours, not whole or not in a directory "
			"of yours alone: reading the image from the shared file system";
		return image;
	}
	return to;
}

int stage_node_main(char *const *argv, size_t n, struct err *e)
{
	char job[32];
	uid_t uid;

	/* Only names of this user's stage directories: the removal never
	 * reaches anything else, whatever the arguments. */
	if (n != 3 || (strcmp(argv[0], "prepare") != 0 && strcmp(argv[0], "remove") != 0) ||
	    argv[1][0] != '/' || !stagedir_name_parse(argv[2], &uid, job, sizeof(job)) ||
	    uid != geteuid())
		return err_set(e, EXIT_USAGE, "usage (internal, run by ctrun's batch step): ctrun "
			       "__stage prepare|remove STAGE_DIR ctrun-stage.UID.JOB.HEX");
	if (strcmp(argv[0], "prepare") == 0) {
		bool found;

		if (stagedir_prepare(argv[1], argv[2], &found, e) < 0)
			return -1;
		/* Read by the batch step (stage_count_shared). */
		if (found && (printf("%s\n", STAGE_SHARED_LINE) < 0 || fflush(stdout) != 0))
			return err_sys(e, EXIT_CTRUN, "staging: telling the batch step");
		return 0;
	}
	if (stagedir_remove(argv[1], argv[2], e) < 0)
		return -1;
	{
		unsigned long long bytes;
		size_t removed;

		/* The copies of this user's jobs that ended without this step. */
		return stagedir_gc(argv[1], &removed, &bytes, e) < 0 ? -1 : 0;
	}
}
