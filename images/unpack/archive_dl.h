/* archive_dl.h - libarchive, loaded at run time (dlopen) on first use.
 *
 * Linking libarchive maps its whole dependency chain (libxml2, libicu,
 * libstdc++, nettle, zstd, lzma...: ~2.5 MiB RSS) into every ctrun, the
 * supervisor of a plain run included, which never unpacks anything (issue 2:
 * the supervisor stays under 4 MiB).  So ctrun does not link it: archive.c
 * and layer.c include this header instead of <archive.h>, and call
 * archive_dl_load() at each entry point before any archive_* call.
 *
 * The call sites keep libarchive's own names (archive_read_new(a) ...), so
 * they read like libarchive's documentation: each name used is #defined
 * below to the pointer dlsym'd into the table (it includes <archive.h> and
 * <archive_entry.h> first, for the types, so their later includes are
 * no-ops and any include order works).  A function used but missing
 * here still compiles, and then fails to link build/ctrun (which has no
 * -larchive): add it to ARCHIVE_DL_FUNCS and to the #defines. */
#ifndef CTRUN_ARCHIVE_DL_H
#define CTRUN_ARCHIVE_DL_H

#include <archive.h>
#include <archive_entry.h>

#include "err.h"

/* Every libarchive function ctrun calls. */
#define ARCHIVE_DL_FUNCS(X)                                                               \
	X(archive_entry_filetype) X(archive_entry_hardlink) X(archive_entry_pathname)     \
	X(archive_entry_set_hardlink) X(archive_entry_set_pathname) X(archive_entry_size) \
	X(archive_entry_mode) X(archive_entry_mtime) X(archive_entry_symlink)             \
	X(archive_errno) X(archive_error_string) X(archive_set_error)                     \
	X(archive_read_new) X(archive_read_free) X(archive_read_open)                     \
	X(archive_read_open_filename) X(archive_read_open_fd)                             \
	X(archive_read_support_filter_gzip)                                               \
	X(archive_read_support_filter_bzip2) X(archive_read_support_filter_compress)      \
	X(archive_read_support_filter_zstd) X(archive_read_support_filter_lz4)            \
	X(archive_read_support_format_tar) X(archive_read_next_header)                    \
	X(archive_read_data) X(archive_read_data_block) X(archive_filter_count)           \
	X(archive_filter_name)                                                            \
	X(archive_read_support_format_raw)                                                \
	X(archive_write_disk_new) X(archive_write_disk_set_options)                       \
	X(archive_write_header) X(archive_write_data_block) X(archive_write_finish_entry) \
	X(archive_write_close) X(archive_write_free)

/* The pointers, typed from libarchive's own declarations. */
#define ARCHIVE_DL_FIELD(name) __typeof__(name) *name;
struct archive_dl {
	ARCHIVE_DL_FUNCS(ARCHIVE_DL_FIELD)
};
#undef ARCHIVE_DL_FIELD

extern struct archive_dl archive_dl;

/* Loads libarchive.so.13 (else libarchive.so) and every function above, once;
 * later calls return 0 at once.  -1 with e filled when it cannot. */
int archive_dl_load(struct err *e);

/* archive_dl.c names the table's fields, which these would rewrite. */
#ifndef ARCHIVE_DL_TABLE
#define archive_entry_filetype (archive_dl.archive_entry_filetype)
#define archive_entry_hardlink (archive_dl.archive_entry_hardlink)
#define archive_entry_pathname (archive_dl.archive_entry_pathname)
#define archive_entry_set_hardlink (archive_dl.archive_entry_set_hardlink)
#define archive_entry_set_pathname (archive_dl.archive_entry_set_pathname)
#define archive_entry_size (archive_dl.archive_entry_size)
#define archive_entry_mode (archive_dl.archive_entry_mode)
#define archive_entry_mtime (archive_dl.archive_entry_mtime)
#define archive_entry_symlink (archive_dl.archive_entry_symlink)
#define archive_errno (archive_dl.archive_errno)
#define archive_error_string (archive_dl.archive_error_string)
#define archive_set_error (archive_dl.archive_set_error)
#define archive_read_new (archive_dl.archive_read_new)
#define archive_read_free (archive_dl.archive_read_free)
#define archive_read_open (archive_dl.archive_read_open)
#define archive_read_open_filename (archive_dl.archive_read_open_filename)
#define archive_read_open_fd (archive_dl.archive_read_open_fd)
#define archive_read_support_filter_gzip (archive_dl.archive_read_support_filter_gzip)
#define archive_read_support_filter_bzip2 (archive_dl.archive_read_support_filter_bzip2)
#define archive_read_support_filter_compress (archive_dl.archive_read_support_filter_compress)
#define archive_read_support_filter_zstd (archive_dl.archive_read_support_filter_zstd)
#define archive_read_support_filter_lz4 (archive_dl.archive_read_support_filter_lz4)
#define archive_read_support_format_tar (archive_dl.archive_read_support_format_tar)
#define archive_read_next_header (archive_dl.archive_read_next_header)
#define archive_read_data (archive_dl.archive_read_data)
#define archive_read_data_block (archive_dl.archive_read_data_block)
#define archive_filter_count (archive_dl.archive_filter_count)
#define archive_filter_name (archive_dl.archive_filter_name)
#define archive_read_support_format_raw (archive_dl.archive_read_support_format_raw)
#define archive_write_disk_new (archive_dl.archive_write_disk_new)
#define archive_write_disk_set_options (archive_dl.archive_write_disk_set_options)
#define archive_write_header (archive_dl.archive_write_header)
#define archive_write_data_block (archive_dl.archive_write_data_block)
#define archive_write_finish_entry (archive_dl.archive_write_finish_entry)
#define archive_write_close (archive_dl.archive_write_close)
#define archive_write_free (archive_dl.archive_write_free)
#endif

#endif
