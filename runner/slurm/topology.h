/* topology.h - where am I: launch mode, node rank, world size, ranks and
 * the rendezvous, worked out from Slurm's variables (or their absence).
 *
 * topo_detect is pure apart from hostlist expansion: the environment, the
 * host name and the number of GPU device files are passed in, so unit tests
 * set exactly the Slurm variables a real step would.
 *
 * Folder runner/slurm/: where a ctrun stands in Slurm: topology, hostlists
 * (builtin + libslurm), tasks per node, staging the image, a batch step's
 * stop notes, acting on steps (scancel, squeue).  May use: runner/config/, runner/node/, core/ (the GNUmakefile's
 * include paths enforce it).
 */
#ifndef CTRUN_TOPOLOGY_H
#define CTRUN_TOPOLOGY_H

#include <stdbool.h>

#include "err.h"
#include "options.h"
#include "strv.h"

struct topo {
	long mode;             /* MODE_STANDALONE, MODE_BATCH, MODE_NODE or MODE_TASK */
	long nnodes;
	long node_rank;
	long nproc;            /* workers this ctrun starts (task mode: 1) */
	long local_world_size; /* workers on this node */
	long local_rank_base;  /* LOCAL_RANK of this ctrun's first worker */
	long rank_base;        /* RANK of this ctrun's first worker */
	long world_size;
	long ntasks_on_node;   /* Slurm tasks of this step on this node */
	long master_port;      /* 0: standalone, pick a free port */
	char *master_addr;     /* a name until topo_resolve_master */
	char *host;            /* this node's name */
	char *job_id;          /* "none" outside Slurm */
	char *step_id;         /* NULL outside a step */
	struct strv nodes;     /* the step's (batch: job's) expanded nodelist */
	struct strv gpus;      /* GPU ids this task may use, in order */
	char ifname[16];       /* interface that routes to the master ("" = unknown);
				* an array so topo_free has nothing more to own */
};

/* Set by the batch-mode ctrun for its step: the step's nodes in node-rank
 * order ("n1,n4,n3"), when a spare took a lost node's rank. */
#define TOPO_BATCH_NODES_ENV "CTRUN_BATCH_NODES"

int topo_detect(const struct options *o, char *const *envp, const char *hostname,
		long ndevfiles, struct topo *t, struct err *e);
void topo_free(struct topo *t);

/* Whether a SLURM_STEP_ID names one of Slurm's special steps (batch script,
 * interactive, extern, pending: -6 .. -3, or the same as unsigned), where
 * ctrun is in batch mode rather than inside a step of its own. */
bool topo_special_step(const char *id);

/* MASTER_PORT for a job and step: stable on every node of the step,
 * distinct for neighbouring jobs, below the kernel's ephemeral range. */
long topo_derive_port(unsigned long job_id, unsigned long step_id);

#endif
