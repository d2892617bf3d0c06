/* rootpath.h - the lexical forms of paths inside a root, and removal that
 * never follows links.
 *
 * Unpacking image layers writes into a directory that the image itself
 * fills with symlinks (lib -> usr/lib, and hostile ones: evil -> /etc,
 * x -> ../../..).  Paths are cleaned here, resolved by inroot.h, and
 * removed here without ever following a link, so nothing is read, written
 * or removed outside the root. */
#ifndef CTRUN_ROOTPATH_H
#define CTRUN_ROOTPATH_H

#include <stdbool.h>
#include <stddef.h>

/* Normalises an archive member name to a relative path: strips leading "/"
 * and "./", collapses "//" and "/./", drops a trailing "/".  A ".." component
 * anywhere fails (-1, errno EINVAL): layers never legitimately contain one.
 * "" and "." become "." (the root itself). */
int rootpath_clean(const char *name, char *out, size_t size);

/* Lexical normal form of an absolute path: "//a/./b/../c/" -> "/a/c"; ".."
 * stops at "/".  A relative path fails (-1, errno EINVAL). */
int rootpath_normalize(const char *path, char *out, size_t size);

/* Removes `rel` (a resolved path: inroot_resolve) under rootfd recursively,
 * never following a symlink.  A missing path is not an error. */
int rootpath_remove(int rootfd, const char *rel);

/* Removes every entry of directory `rel` under rootfd for which keep(path) is
 * false; `path` is "rel/name". */
int rootpath_clear_dir(int rootfd, const char *rel, bool (*keep)(const char *path, void *arg),
		       void *arg);

/* rm -rf of an absolute path, never following symlinks (cache cleanup). */
int remove_tree(const char *path);

#endif
