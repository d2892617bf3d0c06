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

/* Runs argv (PATH lookup, no shell) with the caller's stderr, and waits.
 * Its exit status, -1 when it could not run. */
static int run_tool(char *const argv[], char *const *envp, bool quiet_stdout)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		sigset_t none;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (null >= 0) {
			dup2(null, STDIN_FILENO);
			if (quiet_stdout)
				dup2(null, STDOUT_FILENO);
		}
		signal(SIGPIPE, SIG_DFL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execvpe(argv[0], argv, envp);
		fprintf(stderr, "ctrun: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int stage_image(const struct options *o, const struct topo *t, struct strv *env,
		struct stage *s, struct err *e)
{
	const char *mode = o->stage != NULL ? o->stage : "auto", *base;
	const char *dir = o->stage_dir != NULL ? o->stage_dir : STAGE_DEFAULT_DIR;
	char *argv[] = { "sbcast", "--force", s->from, s->to, NULL };
	bool must = strcmp(mode, "sbcast") == 0;
	struct stat st;
	int rc;

	s->from[0] = s->to[0] = '\0';
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
	if (!must && (t->nnodes < 2 || !stage_on_network_fs(s->from))) {
		s->from[0] = '\0';
		return 0;
	}
	base = strrchr(s->from, '/') + 1;
	if (dir[0] != '/' ||
	    xsnprintf(s->to, sizeof(s->to), "%s/ctrun-stage.%u.%s.%s", dir, (unsigned)geteuid(),
		      t->job_id, base) < 0) {
		s->from[0] = s->to[0] = '\0';
		return err_set(e, EXIT_USAGE, "[cache] stage_dir %s: must be an absolute path, and "
			       "short enough", dir);
	}
	if (o->verbose > 0)
		fprintf(stderr, "ctrun: staging %s to %s on %ld nodes (sbcast)\n", s->from, s->to,
			t->nnodes);
	rc = run_tool(argv, env->v, false);
	if (rc != 0) {
		if (must) {
			err_set(e, EXIT_CTRUN, "--stage sbcast: sbcast of %s to %s failed (status %d, "
				"its message above); check that %s exists on every node, or set "
				"[cache] stage_dir", s->from, s->to, rc, dir);
			s->from[0] = s->to[0] = '\0';
			return -1;
		}
		if (!o->quiet)
			fprintf(stderr, "ctrun: not staged: sbcast of %s failed (status %d); every node "
				"reads it from the shared file system\n", s->from, rc);
		s->from[0] = s->to[0] = '\0';
		return 0;
	}
	if (strv_setenv(env, "CTRUN_STAGED_FROM", s->from, 1) < 0 ||
	    strv_setenv(env, "CTRUN_STAGED_TO", s->to, 1) < 0)
		return err_sys(e, EXIT_CTRUN, "srun environment");
	return 0;
}

void stage_remove(const struct topo *t, char *const *env, const struct stage *s)
{
	char nodes[32], *argv[] = { "srun", nodes, "--ntasks-per-node=1", "--kill-on-bad-exit=0",
				    "rm", "-f", "--", (char *)s->to, NULL };

	if (s->to[0] == '\0')
		return;
	snprintf(nodes, sizeof(nodes), "--nodes=%ld", t->nnodes);
	if (run_tool(argv, env, true) != 0)
		fprintf(stderr, "ctrun: could not remove the staged copies %s (Slurm's epilog or "
			"ctrun cache gc will)\n", s->to);
}

const char *stage_local(const char *image, char *const *envp, const char **note)
{
	const char *from = envp_get(envp, "CTRUN_STAGED_FROM");
	const char *to = envp_get(envp, "CTRUN_STAGED_TO");
	struct stat a, b;

	*note = NULL;
	if (from == NULL || to == NULL || strcmp(from, image) != 0)
		return image;
	/* Ours, a plain file, whole: anything else was not made by our sbcast. */
	if (lstat(to, &b) < 0 || !S_ISREG(b.st_mode) || b.st_uid != geteuid() ||
	    stat(image, &a) < 0 || a.st_size != b.st_size) {
		*note = "the staged copy is missing, not yours or not whole: reading the image "
			"from the shared file system";
		return image;
	}
	return to;
}
