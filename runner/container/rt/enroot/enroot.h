/* enroot.h - the enroot driver (enroot.c): its own state in a run. */
#ifndef CTRUN_ENROOT_H
#define CTRUN_ENROOT_H

#include "rt.h"

/* spec.own of an enroot run. */
struct enroot_own {
	/* The root (enrootroot.c, enrootkeep.c): ENROOT_DATA_PATH, the
	 * container's name there (or the squashfs's real path, which enroot
	 * starts itself), and the container's directory. */
	char data[4096];
	char name[4096];
	char path[4096];
	char save_dir[4096]; /* a --save run's own data directory, RUNDIR/save */
	/* With GPUs and no ctrun hook installed (enroothook.c): ctrun-hook is
	 * added for this run through a per-run ENROOT_CONFIG_PATH holding
	 * links to every entry of the user's own (config, NULL = none; its
	 * entries, hooks.d's as "hooks.d/NAME") and the hook script ("" =
	 * none). */
	char hook[4096];
	/* No nvidia-container-cli on enroot's PATH (nor /usr/sbin, /sbin):
	 * enroot's 98-nvidia.sh would fail the start, so it is told "void"
	 * and the per-run hook, named the GPUs (--gpus), does its work. */
	bool no_nvcli;
	const char *config;
	char config_dir[4096];
	struct strv config_entries;
};

/* The root decision (pure): enroot's own start of the squashfs file
 * (file), else its container in the data directory (unpacked, made once;
 * why_unpacked: what -v says when the file could not be started). */
struct enroot_root_facts {
	enum image_kind kind;
	enum ctr_image_mode mode;
	bool writable;       /* --writable or --save: never the node's shared container */
	bool cached;         /* the container is in the data directory already */
	const char *no_file; /* why enroot cannot start the file here, NULL = it can */
	const char *image;   /* for the messages only */
};
struct enroot_root_choice {
	bool file;
	const char *why_unpacked;
};
int enroot_root_decide(const struct enroot_root_facts *f, struct enroot_root_choice *c,
		       struct err *e);

/* The phases (drivers.h): root (enrootroot.c), keep and kept (enrootkeep.c). */
int enroot_root(struct ctr_spec *s, const struct ctr_ask *a, struct err *e);
int enroot_keep(struct ctr_spec *s, const struct ctr_ask *a, const struct ctr_keep *k,
		struct err *e);
bool enroot_kept(const char *dir);

/* `enroot create` of image into data (ENROOT_DATA_PATH) as tmp's last
 * component: cache_create_once_e's callback (images/cache/cache.h), arg a
 * struct enroot_create. */
struct enroot_create {
	const char *bin, *image, *data;
	char *const *envp;
};
int enroot_create(const char *tmp, void *arg, struct err *e);
/* `enroot create --name NAME IMAGE` into DATA, under a temporary name
 * renamed to NAME at the end (enroot's create is not atomic); the caller
 * holds the lock that makes it the only creator. */
int enroot_create_named(const char *bin, const char *image, const char *data, const char *name,
			char *const *envp, struct err *e);

int rt_enroot_plan(const struct ctr_spec *s, struct ctr_plan *p, struct err *e);
/* enroot create --name NAME IMAGE, into ENROOT_DATA_PATH. */
int rt_enroot_create_argv(const char *bin, const char *image, const char *name,
			  struct strv *argv, struct err *e);
/* enroothook.c: the GPU phase (drivers.h gpus). */
int enroot_gpus(struct ctr_spec *s, const struct ctr_ask *a, struct err *e);
/* The hook script that execs `HOOK_PATH enroot [--gpus GPUS] [--imex
 * IMEX]` (an executable *.sh enroot runs from hooks.d), and gives way
 * quietly when HOOK_PATH is gone; `why` says who wrote it; GPUS and IMEX
 * (NULL: none) are ctrun's choice, as the OCI annotations are.  NULL when
 * HOOK_PATH, GPUS or IMEX would need quoting (HOOK_PATH: only
 * [A-Za-z0-9/._+@-], absolute, no /../; GPUS and IMEX: [A-Za-z0-9,-], not
 * starting with -) or on ENOMEM. */
char *enroot_hook_script(const char *hook_path, const char *why, const char *gpus,
			 const char *imex);
/* The install phase (drivers.h hookfile, hooks_install.h): the script
 * `ctrun hooks install enroot` writes, ENROOT_HOOK_FILE in enroot's
 * hooks.d, after enroot's 98-nvidia.sh (it may bind every GPU; ours then
 * removes the others). */
#define ENROOT_HOOK_FILE "99-ctrun-gpus.sh"
extern const struct ctr_hookfile enroot_hookfile;
/* enrootcfg.c: --runtime auto's question (drivers.h adds): whether enroot
 * (binary bin), as configured on this node, adds to a container something
 * ctrun's own start does not (why: what). */
bool enroot_adds(const struct ctr_driver *d, const char *bin, char *const *envp, char *why,
		 size_t size);

#endif
