/* spcontainer.h - this step's container on the node, seen from
 * slurmstepd: in user_init, another step's running container of its
 * --container-name joined (sprunning.h), else `ctrun __hold` started
 * (sphold.h) and published among the node's running containers; after
 * the node's last task, unpublished and its hold stopped.
 *
 * struct sp_step is what the plugin knows of the step in one process
 * (srun's, sbatch's or slurmstepd's: plugin.c's callbacks fill it).
 * Errors of user_init do not reach srun (Slurm reports success): they are
 * kept in hold_err for the tasks to report (plugin.c task_init). */
#ifndef CTRUN_SPCONTAINER_H
#define CTRUN_SPCONTAINER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <slurm/spank.h>

#include "err.h"
#include "spconf.h"
#include "sphold.h"
#include "spoptions.h"
#include "strv.h"

/* Slurm's ids of its special steps (slurm.h, not in spank.h). */
#define STEP_BATCH 0xfffffffbU
#define STEP_INTERACTIVE 0xfffffffaU

struct sp_step {
	struct sp_conf conf;
	struct sp_args args;
	bool enabled;        /* remote: this step asked for a container */
	uid_t uid;
	gid_t gid;
	gid_t *gids;
	int ngids;
	uint32_t jobid, stepid, local_tasks, exited;
	struct strv given;   /* the environment ctrun __hold got */
	struct sp_hold hold;
	bool held;           /* the hold message came (or a running container was found) */
	bool attached;       /* the container is another step's (sprunning.h) */
	struct err hold_err; /* why not (reported by the tasks) */
	struct strv set, unset; /* the container's changes to the environment */
	bool records;        /* the node's running containers can be used (sprunning.h) */
	char recname[128];   /* this step's container's name there */
	int recfd;           /* its record, locked while it runs; -1 = none */
};

/* In user_init, with s->given the job's environment: joins the running
 * container of the step's name, or starts and publishes its own; sets
 * attached and held, or hold_err. */
void sp_container_open(struct sp_step *s, spank_t sp);

/* After the node's last task (and at the plugin's exit): unpublished,
 * the container's descriptors closed, the hold stopped and what it left
 * removed (task_exit's, and again exit's). */
void sp_container_stop(struct sp_step *s);

/* For sp_hold_log: ctrun's own lines ("ctrun: ..."), and every line
 * when *(bool *)all (the entrypoint's output). */
void sp_container_print(const char *line, void *all);

#endif
