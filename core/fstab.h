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

/* enroot-mount reads its fstab with getmntent_r into a buffer of this
 * size (bin/enroot-mount.c FSTAB_LINE_MAX): a longer line is cut in two
 * (glibc) or ends the file there (musl), silently. */
#define FSTAB_LINE_MAX 4096

/* Appends the line "SRC DST none OPTS" (no newline) to lines, SRC and DST
 * escaped.  A newline in either fails with errno EINVAL: getmntent would
 * decode \012, but enroot's own checks and older C libraries read the file
 * line by line.  ENAMETOOLONG for a line that would not fit FSTAB_LINE_MAX
 * with its newline and terminator, ENOMEM. */
int fstab_line(struct strv *lines, const char *src, const char *dst, const char *opts);
/* The same with the file system type (fstab_line's is "none"). */
int fstab_line_fs(struct strv *lines, const char *src, const char *dst, const char *type,
		  const char *opts);

#endif
