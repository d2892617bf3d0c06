/* stage.h - the image staged to node-local storage with sbcast (Slurm's
 * tree broadcast) by the batch step, so that the shared file system is
 * read once per job instead of once per node.
 *
 * The batch step makes a private directory of the user's on every node
 * (stagedir.h: STAGE_DIR/ctrun-stage.UID.JOBID.RANDOM, 0700, by an srun of
 * `ctrun __stage prepare`), copies IMAGE into it with sbcast (never
 * --force: nothing there is overwritten) before it starts the step, tells
 * the step's ctruns through CTRUN_STAGED_FROM (the image's real path) and
 * CTRUN_STAGED_TO (the copy), and removes the directories when the step is
 * over (`ctrun __stage remove`).  Each node's ctrun uses the copy only if
 * it is a regular file of its own of the image's size in a directory no
 * one else can enter; else it says so and reads the original. */
#ifndef CTRUN_STAGE_H
#define CTRUN_STAGE_H

#include <stdbool.h>

#include "err.h"
#include "options.h"
#include "strv.h"
#include "topology.h"

struct stage {
	char from[4096]; /* the image's real path ("" = nothing staged) */
	char to[4096];   /* the node-local copy, the same path on every node */
	const char *dir; /* the stage directory ([cache] stage_dir) */
	char name[128];  /* the job's directory in it ("" = none made) */
};

/* Batch step: stages o->image when [container] stage says so (sbcast; auto:
 * an image on a network file system, more than one node), sets the two
 * variables in env.  Nothing staged is not an error in auto (a line says
 * why); with stage = sbcast it is (EXIT_CTRUN). */
int stage_image(const struct options *o, const struct topo *t, struct strv *env,
		struct stage *s, struct err *e);
/* Batch step, after the last step: removes the job's directory, and the
 * caller's of ended jobs, on every node (an srun of `ctrun __stage
 * remove`, best effort). */
void stage_remove(const struct topo *t, char *const *env, const struct stage *s);
/* A step's ctrun: the path to read image (its real path) from: the staged
 * copy when CTRUN_STAGED_FROM names it and the copy is whole and ours,
 * else image itself.  *note gets a line to print when the copy is refused. */
const char *stage_local(const char *image, char *const *envp, const char **note);
/* Whether path lies on a network file system (NFS, Lustre, GPFS, BeeGFS,
 * CephFS, CIFS/SMB, PanFS, FUSE). */
bool stage_on_network_fs(const char *path);
/* [cache] stage_dir, or its default /tmp. */
const char *stage_dir_of(const struct options *o);
/* `ctrun __stage prepare|remove DIR NAME`, the srun steps above, on one
 * node (argv: the words after __stage).  0, or -1 with e. */
int stage_node_main(char *const *argv, size_t n, struct err *e);

#endif
