/* cdispec.h - one CDI spec file, parsed and checked (the CDI
 * specification's SPEC.md and its Go library's validation, strictly: an
 * unknown field, a wrong type, a field newer than the file's cdiVersion
 * says, a device without edits are refused, as the library refuses them).
 *
 * JSON through json-c, YAML through libyaml (turned into the same json-c
 * tree, so one checker reads both); a file that does not parse is named
 * with its line.  Pure: bytes in, struct or error out. */
#ifndef CTRUN_CDISPEC_H
#define CTRUN_CDISPEC_H

#include <stdbool.h>
#include <stddef.h>

#include "cdiname.h"
#include "err.h"
#include "strv.h"

/* A device node (containerEdits.deviceNodes[]). */
struct cdi_node {
	char *path;       /* in the container */
	char *host_path;  /* on the host; NULL = path */
	char type;        /* 'b', 'c', 'u', 'p'; 0 = not given */
	long long major, minor;   /* 0 = not given (the library's rule) */
	bool has_mode, has_uid, has_gid;
	unsigned mode, uid, gid;
	char perms[8];    /* "" = rwm (the default); "none" = no access */
};

/* A mount (containerEdits.mounts[]). */
struct cdi_mount {
	char *host_path, *container_path;
	char *type;       /* NULL = not given */
	struct strv options;
};

/* The OCI stages a hook may name. */
enum cdi_stage { CDI_PRESTART, CDI_CREATE_RUNTIME, CDI_CREATE_CONTAINER,
		 CDI_START_CONTAINER, CDI_POSTSTART, CDI_POSTSTOP, CDI_STAGES };
extern const char *const cdi_stage_names[CDI_STAGES];

struct cdi_hook {
	enum cdi_stage stage;
	char *path;
	struct strv args, env;
	long timeout;     /* seconds; 0 = none */
};

struct cdi_edits {
	struct strv env;  /* K=V */
	struct cdi_node *nodes;
	size_t nnodes;
	struct cdi_mount *mounts;
	size_t nmounts;
	struct cdi_hook *hooks;
	size_t nhooks;
	unsigned *gids;   /* additionalGids, 0s dropped */
	size_t ngids;
	/* Parsed and checked, never applied by ctrun (refused where used). */
	bool intel_rdt, net_devices;
};

struct cdi_device {
	char *name;
	struct cdi_edits edits;
};

struct cdi_spec {
	char *version;    /* cdiVersion, without a leading 'v' */
	char vendor[CDI_NAME_MAX], class[CDI_NAME_MAX];
	struct cdi_device *devs;
	size_t ndevs;
	struct cdi_edits edits; /* spec-wide: with any of its devices */
};

/* The cdiVersions the specification lists, oldest first, NULL-ended. */
extern const char *const cdi_versions[];

/* Parses data (len bytes; yaml: libyaml, else json-c) of the file `path`
 * (for the messages) into *out.  -1 with e (EXIT_USAGE): one line naming
 * the file, the line where it does not parse, or the field that is wrong
 * ("devices[1].containerEdits.hooks[0].hookName: ..."). */
int cdi_spec_parse(const char *data, size_t len, bool yaml, const char *path,
		   struct cdi_spec *out, struct err *e);
void cdi_spec_free(struct cdi_spec *s);
void cdi_edits_free(struct cdi_edits *d);

/* Turns YAML text into the json-c tree JSON would give (cdiyaml.c):
 * scalars typed as YAML 1.1 resolves them (null, true/false, integers
 * decimal, 0x hex and 0-led octal, else strings; quoted ones stay
 * strings).  Aliases, tags, duplicate keys, more than one document and
 * nesting past 64 levels are refused.  NULL with e naming path:line. */
struct json_object;
struct json_object *cdi_yaml_tree(const char *data, size_t len, const char *path,
				  struct err *e);

#endif
