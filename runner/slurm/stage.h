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
 * one else can enter; else it says so and reads the original.  A node whose
 * prepare finds the job's directory made already (by another node: they
 * share the stage directory) says so on its stdout, and then nothing is
 * staged: every node sees the image where it is. */
#ifndef CTRUN_STAGE_H
#define CTRUN_STAGE_H

#include <stdbool.h>
#include <stddef.h>

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
 * an image on a network file system, more than one node, a stage directory
 * on none), sets the two variables in env.  Nothing staged is not an error
 * in auto (a line says why); with stage = sbcast it is (EXIT_CTRUN), but
 * for a stage directory the nodes share: the prepare step finds out (a node
 * finds the job's directory that another made), and nothing is staged, in
 * either mode (one line says so): every node reads the image where it is. */
int stage_image(const struct options *o, const struct topo *t, struct strv *env,
		struct stage *s, struct err *e);
/* Whether to stage: --stage sbcast (must) always tries; auto stages an
 * image on a network file system for more than one node, never onto a
 * stage directory on a network file system (every node sees it).  Pure. */
enum stage_choice { STAGE_NOT, STAGE_NOT_SHARED, STAGE_TRY };
enum stage_choice stage_choose(bool must, long nnodes, bool image_on_network,
			       bool dir_on_network);
/* The number of nodes whose `ctrun __stage prepare` said that another node
 * had made the job's directory, from their output on fd (read to its end;
 * lines of another kind are not counted). */
size_t stage_count_shared(int fd);
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
