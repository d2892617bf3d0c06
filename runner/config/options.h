/* options.h - every ctrun setting, and the layers that fill it.
 *
 * One table of keys serves the ini files, the CTRUN_* environment and the
 * command line, so a setting has one name, one parser and one error text
 * wherever it comes from.  Later layers win:
 *   /etc/ctrun/ctrun.ini < ~/.config/ctrun/ctrun.ini < $CTRUN_CONFIG
 *   < CTRUN_* environment < command line.
 *
 * Folder runner/config/: the key table: ini files (inih), CTRUN_* variables,
 * getopt.  May use: core/ (the GNUmakefile's include paths enforce it).
 */
#ifndef CTRUN_OPTIONS_H
#define CTRUN_OPTIONS_H

#include <stdbool.h>

#include "err.h"
#include "strv.h"

struct options;

/* One subcommand of ctrun: a row of runner/main.c's table, the one place a
 * command is added (docs/architecture.md "Adding a command"), as crun's
 * commands[].  The table ends with a row whose word is NULL. */
struct command {
	const char *word;     /* the word after ctrun's options ("bench"); the
			       * table's first row is also what no word means */
	int (*fn)(struct options *o, struct err *e); /* exit status, or -1 with e */
	unsigned flags;       /* CMD_* below */
	const char *usage;    /* ctrun [OPTIONS] WORD --help; NULL: ctrun --help's */
};
/* It parses its own flags from o->command (bench's -b and -e are not
 * ctrun's); ctrun's options go before the word. */
#define CMD_OWN_FLAGS 1u
/* --image is made a file on this node (a reference pulled, runner/deliver/)
 * before it runs. */
#define CMD_IMAGE 2u
/* Without --image it runs on the host: a container-only option given
 * without --image is refused rather than ignored. */
#define CMD_HOST 4u

enum launch_mode { MODE_AUTO, MODE_STANDALONE, MODE_NODE, MODE_TASK, MODE_BATCH };

struct options {
	const struct command *cmd; /* the subcommand's row; NULL before
				    * options_parse_argv: the default, run */
	/* launch */
	long mode;            /* enum launch_mode */
	char *nproc_per_node; /* "auto", "gpu" or a number */
	char *master_addr;    /* NULL = first node of the step */
	long master_port;     /* 0 = derived from job and step ids */
	long nnodes;          /* -1 = from Slurm (or elastic: nnodes_min < nnodes_max) */
	long nnodes_min;      /* --nnodes MIN:MAX (N: both N); -1 = not given */
	long nnodes_max;
	long node_rank;       /* -1 = from Slurm */
	long max_restarts;
	long spares;          /* batch mode: nodes of the job kept to replace lost ones */
	long hang_timeout;    /* seconds without progress that make a hang; 0 = off */
	long hang_first;      /* --hang-timeout SEC:FIRST: seconds a worker may take to make
			       * its first progress; 0 = the larger of SEC and HANG_FIRST_MIN */
	char *health_check;   /* batch mode: the site's node check, words split on blanks */
	long health_timeout;  /* batch mode: seconds a node's health check may take */
	long kill_timeout;    /* seconds between SIGTERM and SIGKILL */
	bool gpu_isolation;   /* each worker sees only its own GPU */
	char *python;         /* interpreter for COMMAND ending in .py */
	bool no_python;
	/* output */
	bool prefix;          /* resolved by cmd_run: [rankN]: on each line */
	char *prefix_mode;    /* "auto" (from two workers on), "true", "false"; NULL = auto */
	char *log_dir;
	long verbose;         /* -v count; -q sets quiet */
	bool quiet;
	bool timings;         /* print the start-up phases' times (phase.h) */
	bool dry_run;
	bool show_version;  /* --version: main prints it and exits */
	/* container */
	char *image;
	char *runtime;
	bool start_fast;      /* __hold: auto prefers crun to runc (rt.h ctr_pick) */
	bool home_env;        /* __hold: the home bound is $HOME's (enroot's rule), not the
			       * password database's (ctr_ident_init) */
	char *workdir;
	struct strv mounts;   /* SRC[:DST[:ro]] */
	char *nv;             /* GPU passthrough: "auto", "true", "false"; NULL = auto */
	char *imex_channels;  /* [gpu] imex_channels: core/imex.h; NULL = none */
	char *image_mode;     /* OCI: "auto", "mount", "unpack" a squashfs/SIF; NULL = auto */
	char *stage;          /* batch mode: "auto", "sbcast", "off" the image; NULL = auto */
	char *stage_dir;      /* node-local directory of staged images; NULL = /tmp */
	bool entrypoint;      /* run the image's entrypoint (enroot /etc/rc, apptainer run) */
	bool root;            /* --root: root inside (enroot --root, apptainer --fakeroot) */
	bool no_home;         /* --no-home: the home directory is not bound */
	struct strv env;      /* K=V (set) or K (the host's value) for the workers;
			       * after options_load the --env-file entries first */
	struct strv env_files; /* --env-file FILE, in order (envctl.h) */
	bool clean_env;       /* --clean-env: only SLURM_*, TERM and the identity of the host's */
	bool writable;        /* --writable: the root is writable for the run, then discarded */
	char *name;           /* --name: the writable layer kept on the node (images/cache/named.h) */
	bool name_reset;      /* --name-reset: start --name anew from --image */
	char *save;           /* --save PATH.sqsh: the container written as a squashfs */
	char *unshare;        /* --unshare net,ipc,uts: namespaces of the container's own */
	struct strv devices;  /* --device vendor.com/class=name: CDI devices, in order */
	char *cdi_spec_dirs;  /* CDI spec directories, ':'-separated; NULL = /etc/cdi:/var/run/cdi */
	/* GPUs ([gpu]) */
	char *gpu_source;     /* "auto", "cdi", "hook"; NULL = auto */
	/* [fabric] (docs/hooks.md "RDMA", "The network stack") */
	char *rdma;           /* "auto", "true", "false"; NULL = auto */
	struct strv fabric_libs;  /* libraries: host shared libraries, bound and checked */
	struct strv fabric_dirs;  /* lib_dirs: SRC[:DST] directories bound as they are */
	struct strv fabric_env;   /* net_env: K=V for the workers */
	struct strv fabric_devices; /* devices: CDI devices of the network stack, checked */
	char *fabric_conflict;    /* on_conflict: "refuse", "image"; NULL = refuse */
	/* node cache ([cache], see images/cache/cache.h) */
	char *cache_dir;      /* NULL = $CTRUN_CACHE_DIR, else /tmp/ctrun-cache-$UID */
	char *cache_shared;   /* the node's shared cache (root fills it, all read it); NULL = none */
	unsigned long long cache_budget; /* bytes for `ctrun cache gc`; 0 = unlimited */
	unsigned long long cache_max_unpacked; /* bound on an image's unpacked bytes; 0 = none */
	char *cache_progress; /* "auto" (on a tty), "true", "false"; NULL = auto */
	char *cache_compression; /* squashfs compressor of --save, ctrun save; NULL = default */
	/* registry ([registry], see registry/registry.h) */
	char *reg_store;      /* the image store; NULL = ~/.cache/ctrun/images */
	char *reg_ca_file;    /* a CA bundle for registries' TLS */
	char *reg_auth_file;  /* an auth.json looked in before the usual places */
	struct strv reg_plain_http;   /* hosts spoken to over http:// */
	struct strv reg_insecure_tls; /* hosts whose certificate is not verified */
	struct strv reg_mirrors;      /* HOST=MIRROR */
	long reg_parallel;    /* blob downloads at once */
	char *reg_store_shared; /* "auto" (a network file system), "true", "false"; NULL = auto */
	long reg_wait;        /* seconds a ctrun waits for another's pull */
	char *reg_compression; /* squashfs compressor of pulled images; NULL = default */
	char *reg_reuse;       /* "false": never build an image on a stored one; NULL = auto */
	unsigned long long reg_max_tree; /* bound on a pulled image's tree in memory; 0 = none */
	char *reg_feed;        /* "off": no image feed between a step's nodes; NULL = auto */
	/* check ([check]) */
	bool json;            /* `ctrun check --json` */
	long rdzv_timeout;    /* seconds ranks wait for each other in check and bench */
	/* what to run, and the raw words of the subcommand */
	struct strv command;
	struct strv args;     /* original argv after argv[0], for batch re-launch */
	const char *container_flag; /* the first container-only flag on the command
				     * line ("mount"), refused without an image */
};

/* Before its first line or heartbeat a worker is starting (imports, NCCL's
 * set-up, a checkpoint read): by default it is given at least this long. */
#define HANG_FIRST_MIN 300
/* The bound on a worker's first progress, in seconds (0: no hang watch). */
long options_hang_first(const struct options *o);

void options_init(struct options *o);
void options_free(struct options *o);

/* Sets one key ("master_port") from text; `where` names the source for
 * errors ("/etc/ctrun/ctrun.ini:12", "CTRUN_MASTER_PORT", "--master-port"). */
int options_set(struct options *o, const char *key, const char *value,
		const char *where, struct err *e);

/* Loads one ini file; a missing file is fine when `optional`. */
int options_load_file(struct options *o, const char *path, bool optional, struct err *e);

/* Applies CTRUN_<KEY> variables from envp. */
int options_load_env(struct options *o, char *const *envp, struct err *e);

/* Parses argv (argv[0] is the program) over the subcommands' table (o->cmd:
 * the row of the word given, else the first).  Returns 1 when --help or
 * --version was handled (caller exits 0), 0 to go on, -1 on error. */
int options_parse_argv(struct options *o, const struct command *commands, int argc,
		       char *const *argv, struct err *e);

/* All layers in order, as main uses them. */
int options_load(struct options *o, const struct command *commands, int argc,
		 char *const *argv, char *const *envp, struct err *e);

/* Whether the subcommand is the one of this word ("run", "env"). */
bool options_cmd_is(const struct options *o, const char *word);

const char *mode_name(long mode);

#endif
