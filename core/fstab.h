/* fstab.h - lines of an fstab as enroot reads them: its mounts files,
 * written by the enroot runtime adapter, and ENROOT_MOUNTS, appended to by
 * ctrun-hook's enroot mode.  enroot parses them with getmntent(3), which
 * decodes octal escapes in each field. */
#ifndef CTRUN_FSTAB_H
#define CTRUN_FSTAB_H

#include <stddef.h>

#include "strv.h"

/* Octal escapes of one field (space \040, tab \011, newline \012,
 * backslash \134), as getmntent(3) decodes them.  -1 when out is too small. */
int fstab_escape(const char *in, char *out, size_t size);

/* Appends the line "SRC DST none OPTS" (no newline) to lines, SRC and DST
 * escaped.  A newline in either fails with errno EINVAL: getmntent would
 * decode \012, but enroot's own checks and older C libraries read the file
 * line by line.  ENAMETOOLONG for a field over PATH_MAX, ENOMEM. */
int fstab_line(struct strv *lines, const char *src, const char *dst, const char *opts);

#endif
