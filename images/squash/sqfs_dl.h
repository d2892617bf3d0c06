/* sqfs_dl.h - libsquashfs (squashfs-tools-ng), loaded at run time (dlopen)
 * on first use, as archive_dl.h does for libarchive: the library and its
 * compressors (zlib, lz4, zstd, xz) stay out of every ctrun that writes no
 * squashfs, the supervisor of a plain run included.  The call sites keep
 * libsquashfs's names; each one used is #defined below to the pointer in
 * the table (its headers are included first for the types).  A function
 * used but missing here still compiles and then fails to link build/ctrun
 * (no -lsquashfs): add it to SQFS_DL_FUNCS and to the #defines. */
#ifndef CTRUN_SQFS_DL_H
#define CTRUN_SQFS_DL_H

#include <sqfs/block.h>
#include <sqfs/block_processor.h>
#include <sqfs/block_writer.h>
#include <sqfs/compressor.h>
#include <sqfs/dir_reader.h>
#include <sqfs/dir_writer.h>
#include <sqfs/error.h>
#include <sqfs/frag_table.h>
#include <sqfs/id_table.h>
#include <sqfs/inode.h>
#include <sqfs/io.h>
#include <sqfs/meta_writer.h>
#include <sqfs/super.h>

#include "err.h"

#define SQFS_DL_FUNCS(X)                                                                    \
	X(sqfs_compressor_config_init) X(sqfs_compressor_create) X(sqfs_super_init)         \
	X(sqfs_super_write) X(sqfs_block_writer_create) X(sqfs_frag_table_create)           \
	X(sqfs_frag_table_write) X(sqfs_frag_table_lookup) X(sqfs_frag_table_set)           \
	X(sqfs_frag_table_get_size) X(sqfs_block_processor_create_ex)                       \
	X(sqfs_block_processor_begin_file) X(sqfs_block_processor_append)                   \
	X(sqfs_block_processor_end_file) X(sqfs_block_processor_finish)                     \
	X(sqfs_block_processor_get_stats) X(sqfs_id_table_create) X(sqfs_id_table_id_to_index) \
	X(sqfs_id_table_write) X(sqfs_meta_writer_create) X(sqfs_meta_writer_get_position)  \
	X(sqfs_meta_writer_write_inode) X(sqfs_meta_writer_flush)                           \
	X(sqfs_meta_write_write_to_file) X(sqfs_dir_writer_create) X(sqfs_dir_writer_begin) \
	X(sqfs_dir_writer_add_entry) X(sqfs_dir_writer_end) X(sqfs_dir_writer_create_inode) \
	X(sqfs_inode_make_extended) X(sqfs_inode_get_file_block_start)                      \
	X(sqfs_inode_set_file_block_start) X(sqfs_inode_get_frag_location)                  \
	X(sqfs_inode_get_file_size) X(sqfs_free) X(sqfs_super_read) X(sqfs_id_table_read)      \
	X(sqfs_dir_reader_create) X(sqfs_dir_reader_get_full_hierarchy)                    \
	X(sqfs_dir_tree_destroy) X(sqfs_frag_table_read) X(sqfs_inode_make_basic)

struct sqfs_dl {
#define SQFS_DL_FIELD(name) __typeof__(name) *name;
	SQFS_DL_FUNCS(SQFS_DL_FIELD)
#undef SQFS_DL_FIELD
};

extern struct sqfs_dl sqfs_dl;

/* Loads libsquashfs.so.1 and every function above, once; later calls return
 * 0 at once.  -1 with e filled (naming the package) when it cannot. */
int sqfs_dl_load(struct err *e);

#ifndef SQFS_DL_TABLE
#define sqfs_compressor_config_init (sqfs_dl.sqfs_compressor_config_init)
#define sqfs_compressor_create (sqfs_dl.sqfs_compressor_create)
#define sqfs_super_init (sqfs_dl.sqfs_super_init)
#define sqfs_super_write (sqfs_dl.sqfs_super_write)
#define sqfs_block_writer_create (sqfs_dl.sqfs_block_writer_create)
#define sqfs_frag_table_create (sqfs_dl.sqfs_frag_table_create)
#define sqfs_frag_table_write (sqfs_dl.sqfs_frag_table_write)
#define sqfs_frag_table_lookup (sqfs_dl.sqfs_frag_table_lookup)
#define sqfs_frag_table_set (sqfs_dl.sqfs_frag_table_set)
#define sqfs_frag_table_get_size (sqfs_dl.sqfs_frag_table_get_size)
#define sqfs_block_processor_create_ex (sqfs_dl.sqfs_block_processor_create_ex)
#define sqfs_block_processor_begin_file (sqfs_dl.sqfs_block_processor_begin_file)
#define sqfs_block_processor_append (sqfs_dl.sqfs_block_processor_append)
#define sqfs_block_processor_end_file (sqfs_dl.sqfs_block_processor_end_file)
#define sqfs_block_processor_finish (sqfs_dl.sqfs_block_processor_finish)
#define sqfs_block_processor_get_stats (sqfs_dl.sqfs_block_processor_get_stats)
#define sqfs_id_table_create (sqfs_dl.sqfs_id_table_create)
#define sqfs_id_table_id_to_index (sqfs_dl.sqfs_id_table_id_to_index)
#define sqfs_id_table_write (sqfs_dl.sqfs_id_table_write)
#define sqfs_meta_writer_create (sqfs_dl.sqfs_meta_writer_create)
#define sqfs_meta_writer_get_position (sqfs_dl.sqfs_meta_writer_get_position)
#define sqfs_meta_writer_write_inode (sqfs_dl.sqfs_meta_writer_write_inode)
#define sqfs_meta_writer_flush (sqfs_dl.sqfs_meta_writer_flush)
#define sqfs_meta_write_write_to_file (sqfs_dl.sqfs_meta_write_write_to_file)
#define sqfs_dir_writer_create (sqfs_dl.sqfs_dir_writer_create)
#define sqfs_dir_writer_begin (sqfs_dl.sqfs_dir_writer_begin)
#define sqfs_dir_writer_add_entry (sqfs_dl.sqfs_dir_writer_add_entry)
#define sqfs_dir_writer_end (sqfs_dl.sqfs_dir_writer_end)
#define sqfs_dir_writer_create_inode (sqfs_dl.sqfs_dir_writer_create_inode)
#define sqfs_inode_make_extended (sqfs_dl.sqfs_inode_make_extended)
#define sqfs_inode_get_file_block_start (sqfs_dl.sqfs_inode_get_file_block_start)
#define sqfs_inode_set_file_block_start (sqfs_dl.sqfs_inode_set_file_block_start)
#define sqfs_inode_get_frag_location (sqfs_dl.sqfs_inode_get_frag_location)
#define sqfs_inode_get_file_size (sqfs_dl.sqfs_inode_get_file_size)
#define sqfs_free (sqfs_dl.sqfs_free)
#define sqfs_super_read (sqfs_dl.sqfs_super_read)
#define sqfs_id_table_read (sqfs_dl.sqfs_id_table_read)
#define sqfs_dir_reader_create (sqfs_dl.sqfs_dir_reader_create)
#define sqfs_dir_reader_get_full_hierarchy (sqfs_dl.sqfs_dir_reader_get_full_hierarchy)
#define sqfs_dir_tree_destroy (sqfs_dl.sqfs_dir_tree_destroy)
#define sqfs_frag_table_read (sqfs_dl.sqfs_frag_table_read)
#define sqfs_inode_make_basic (sqfs_dl.sqfs_inode_make_basic)
#endif

#endif
