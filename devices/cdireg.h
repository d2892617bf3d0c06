/* cdireg.h - the CDI spec directories of a node and the devices they
 * define: the registry a `--device vendor.com/class=name` is looked up in.
 *
 * As the CDI library's cache (pkg/cdi/cache.go, spec-dirs.go): the
 * directories in order (default /etc/cdi, then /var/run/cdi; the
 * `[container] cdi_spec_dirs` setting replaces the list), the *.json and
 * *.yaml files of each in name order, not recursing; a device defined in
 * two directories is the later directory's, in two specs of one
 * directory it is refused (the library drops it with an error).
 *
 * Trust (the image store's rule, docs/images.md): a spec says which host
 * files a container gets and which programs run as root before it
 * starts, so only a spec its caller trusts is read: every directory from
 * / down to the file and the file itself root's or the caller's and
 * writable by no one else (a sticky directory, /tmp, may be writable:
 * only an entry's owner can replace it), for root root's alone; a symlink
 * is not followed; a file is read bounded (4 MiB). */
#ifndef CTRUN_CDIREG_H
#define CTRUN_CDIREG_H

#include <stdbool.h>
#include <stddef.h>

#include "cdispec.h"
#include "err.h"
#include "strv.h"

/* The standard directories, lowest precedence first. */
#define CDI_DEFAULT_DIRS "/etc/cdi", "/var/run/cdi"

struct cdi_file {
	char *path;
	size_t dir;       /* index of its directory: the later wins */
	struct cdi_spec spec;
};

struct cdi_reg {
	struct cdi_file *files;
	size_t n;
};

/* Reads every spec of dirs (NULL or empty: the default list).  -1 with e:
 * a spec another user could have written (EXIT_CTRUN), one that does not
 * parse (EXIT_USAGE, its line), a directory that cannot be read. */
int cdi_reg_load(const struct strv *dirs, struct cdi_reg *r, struct err *e);
void cdi_reg_free(struct cdi_reg *r);

/* One device found: its spec (the first time the spec is named: with_spec,
 * its spec-wide edits come first, as the library applies them), and its
 * fully qualified name. */
struct cdi_pick {
	const struct cdi_file *file;
	const struct cdi_device *dev;
	bool with_spec;
	char qname[3 * CDI_NAME_MAX];
};

/* Pure over r: each name (fully qualified) to its device, in order, into
 * *out (n of them, caller frees).  -1 with e (EXIT_USAGE): a name that is
 * not a CDI name, an unknown one (listing the devices of its kind, or the
 * kinds there are), one that two specs of one directory define (naming
 * both). */
int cdi_reg_resolve(const struct cdi_reg *r, const struct strv *names, struct cdi_pick **out,
		    size_t *n, struct err *e);

/* Whether r has a device `vendor/class=name` (no error: a lookup). */
bool cdi_reg_has(const struct cdi_reg *r, const char *vendor, const char *class,
		 const char *name);
/* Whether r has a spec of kind vendor/class. */
bool cdi_reg_has_kind(const struct cdi_reg *r, const char *vendor, const char *class);

#endif
