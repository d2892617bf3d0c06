/* holdmsg.h - the hold message: what `ctrun-agent --hold` (the container
 * of `ctrun __hold`, started for the SPANK plugin) tells the plugin, and
 * how the plugin ends its stay.
 *
 * The plugin runs ctrun with descriptors 0 and 1 on one end of a unix
 * stream socket.  Every runtime carries them into the container, as they
 * are (enroot, apptainer, ch-run) or through pipes it copies (runc, crun),
 * so the agent writes text to its stdout and reads its stdin:
 *
 *   "ctrun-hold 1 PID\n"  PID: the agent's process id; the runtime keeps
 *                          the node's PID namespace (rt.h host_pid), so it
 *                          is the node's, and the plugin opens
 *                          /proc/PID/root and /proc/PID/ns/ (the process
 *                          is the job's user's and dumpable)
 *   CWD "\0"               its working directory in the container
 *   KEY=VALUE "\0" ...     its environment: what a shell in the container
 *                          gets (docs/containers.md's table, every layer
 *                          but the torchrun contract)
 *   "\0"                   the end (an empty entry)
 *
 * Bytes before the first line are the image's entrypoint's output (it runs
 * first, with --entrypoint): the plugin keeps them as the log.  Then the
 * agent holds the container: it ignores every signal it can, and ends
 * (exit 0) at end of file on its stdin, when the plugin closed its end
 * after the node's last task.  The text after the first line is at most
 * HOLD_TEXT_MAX bytes.  Both sides use these names; the plugin (spank/,
 * libc only) decodes the bytes itself. */
#ifndef CTRUN_HOLDMSG_H
#define CTRUN_HOLDMSG_H

#include <stdbool.h>
#include <sys/types.h>

#define HOLD_ARG "--hold"
/* After HOLD_ARG: the hold starts in the image's working directory
 * (core/imagerc.h: its /etc/rc's, "/" without one), pyxis's rule, rather
 * than in the runtime's (the plugin's default_workdir=image). */
#define HOLD_WORKDIR_ARG "--image-workdir"
#define HOLD_MAGIC "ctrun-hold 1 "
#define HOLD_TEXT_MAX (4u << 20)

/* What the plugin opens of /proc/PID. */
enum hold_fd {
	HOLD_FD_ROOT,   /* /proc/PID/root: "/" of the container, O_PATH */
	HOLD_FD_USER,   /* /proc/PID/ns/user: whose identity the tasks take */
	HOLD_FD_MNT,
	HOLD_FD_IPC,
	HOLD_FD_UTS,
	HOLD_FD_NET,
	HOLD_FD_CGROUP,
	HOLD_NFDS
};

/* The /proc/PID/ns/ name of each namespace descriptor (NULL for ROOT). */
#define HOLD_NS_NAMES { NULL, "user", "mnt", "ipc", "uts", "net", "cgroup" }

/* ctrun-agent --hold: writes the message to stdout, holds until the end
 * of its stdin; returns the agent's exit status. */
int hold_main(bool image_workdir);

/* The hold's entrypoint (--entrypoint), as pyxis runs enroot's: it starts
 * from the container's own environment and --container-env's, not the
 * job's, and what it exports or unsets is laid over the hold's environment.
 * hold_entry_env turns env (the hold's, every layer) into the entrypoint's
 * (every layer but the host's inherited one, agentspec.h I) plus
 * HOLD_BASE_ENV, the number of an inherited memfd holding both (each a
 * list of KEY=VALUE "\0", ended by an empty entry); hold_main lays the
 * entrypoint's changes over the hold's environment before its message. */
#define HOLD_BASE_ENV "CTRUN_HOLD_BASE"
struct agent_spec;
struct strv;
struct err;
int hold_entry_env(struct agent_spec *s, char *const *own, struct strv *env, struct err *e);

/* `srun` in a batch script that runs in the container (sbatch
 * --container-image): the container has no Slurm of its own, so ctrun
 * __hold of the batch step serves the host's srun on a unix socket in the
 * run directory, and the agent, run as `srun` (a link in /.ctrun/bin, put
 * first on the hold's PATH), hands it over:
 *
 *   client -> ctrun   one sendmsg carrying SCM_RIGHTS of its descriptors
 *                     0, 1, 2 and the bytes SRUN_MAGIC "\n", then ARG "\0"
 *                     ... "\0" (argv after "srun", ended by an empty entry),
 *                     KEY=VALUE "\0" ... "\0" (its environment), CWD "\0"
 *   ctrun -> client   "status N\n" once that srun ended (N as a shell's $?)
 *
 * The step that srun starts gets the batch job's --container-* options
 * (Slurm passes sbatch's SPANK options on in the environment): it runs in
 * the same image, one container per node. */
#define SRUN_SOCK "srun.sock"   /* in the run directory, /.ctrun inside */
#define SRUN_BIN_DIR "bin"      /* RUN/bin/srun -> /.ctrun/agent */
#define SRUN_MAGIC "ctrun-srun 1"
#define SRUN_TEXT_MAX (4u << 20)
/* The two halves of the exchange:
 *   holdsrun_server.c  on the host, a child of ctrun __hold: serves
 *                      RUN/SRUN_SOCK and runs the host's srun; stopped
 *                      with the hold;
 *   holdsrun_client.c  in the container, the agent as `srun`: hands its
 *                      command over and ends with srun's status. */
struct err;
pid_t hold_srun_start(const char *rundir, struct err *e);
void hold_srun_stop(pid_t pid);
int hold_srun_client(int argc, char **argv);

#endif
