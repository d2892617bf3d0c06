/* cdiname.h - CDI device names: `vendor.com/class=name`, the fully
 * qualified form `--device` takes (the CDI specification's parser rules,
 * github:cncf-tags/container-device-interface pkg/parser).
 *
 * Folder devices/: the Container Device Interface: device names, spec
 * files (JSON and YAML, cdispec.h) and the spec directories with their
 * precedence and trust rule (cdireg.h).  Pure parsers and one reader of
 * the directories; how a container gets what a spec asks for is
 * runner/container/rt/edits.h's.  May use: core/ (the GNUmakefile's
 * include paths enforce it).
 */
#ifndef CTRUN_CDINAME_H
#define CTRUN_CDINAME_H

#include <stddef.h>

#include "err.h"

/* The longest name part kept (a kind's prefix may be 253 bytes). */
#define CDI_NAME_MAX 512

struct cdi_name {
	char vendor[CDI_NAME_MAX]; /* "vendor.com" */
	char class[CDI_NAME_MAX];  /* "class" */
	char name[CDI_NAME_MAX];   /* "name" */
};

/* Pure: "vendor.com/class=name" into n; -1 with e (EXIT_USAGE) naming what
 * is wrong and the form expected. */
int cdi_name_parse(const char *s, struct cdi_name *n, struct err *e);

/* Pure: the spec's `kind` ("vendor.com/class") into vendor and class;
 * -1 with e (why, no prefix). */
int cdi_kind_parse(const char *kind, char *vendor, char *class, size_t size, struct err *e);

/* Pure: a vendor or class (letter first, letter or digit last, letters,
 * digits, '_', '-', '.' between) / a device name (the same, but a digit
 * may come first and ':' between); NULL when valid, else why. */
const char *cdi_vendor_class_invalid(const char *s);
const char *cdi_device_name_invalid(const char *s);

#endif
