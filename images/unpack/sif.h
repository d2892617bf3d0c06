/* sif.h - a pure parser of the Singularity Image Format (SIF) container file.
 *
 * Format (sylabs/sif pkg/sif): a 128-byte global header, a table of fixed-size
 * descriptors, then the data objects.  We need one thing from it: where the
 * primary system partition (the root file system, normally a squashfs) lies.
 * Every offset and size is checked against the file size; no I/O here except
 * sif_read_fd, which only reads the header and descriptor table. */
#ifndef CTRUN_SIF_H
#define CTRUN_SIF_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define SIF_MAGIC "SIF_MAGIC"          /* at byte 32, NUL-padded to 10 bytes */
#define SIF_HDR_SIZE 128
#define SIF_DESCR_SIZE 585             /* sylabs/sif v2 rawDescriptor, packed */

enum sif_datatype {
	SIF_DATA_DEFFILE = 0x4001, SIF_DATA_ENVVAR, SIF_DATA_LABELS, SIF_DATA_PARTITION,
	SIF_DATA_SIGNATURE, SIF_DATA_GENERICJSON, SIF_DATA_GENERIC, SIF_DATA_CRYPTOMESSAGE,
	SIF_DATA_SBOM, SIF_DATA_OCIROOTINDEX, SIF_DATA_OCIBLOB,
};
enum sif_fstype { SIF_FS_SQUASH = 1, SIF_FS_EXT3, SIF_FS_IMMUOBJECTS, SIF_FS_RAW, SIF_FS_ENCRYPTED_SQUASHFS };
enum sif_parttype { SIF_PART_SYSTEM = 1, SIF_PART_PRIMSYS, SIF_PART_DATA, SIF_PART_OVERLAY };

struct sif_header {
	char version[4];                  /* "01" (3 bytes on disk, NUL-terminated here) */
	char arch[4];                     /* "02" = amd64 (3 bytes on disk) */
	int64_t created, modified;
	int64_t descr_free, descr_total;  /* descriptors in use / slots */
	int64_t descr_off, descr_size;    /* the descriptor table */
	int64_t data_off, data_size;      /* the data section */
};

struct sif_partition {
	uint64_t offset, size;            /* absolute, within the file, bounds-checked */
	int32_t fstype, parttype;
	char arch[4];                     /* SIF arch code, "02" = amd64 (3 bytes on disk) */
	uint32_t id;
};

/* Parses the global header; `file_size` bounds every offset. */
int sif_parse_header(const unsigned char *buf, size_t len, uint64_t file_size,
		     struct sif_header *h, struct err *e);
/* Finds the primary system partition in the descriptor table `tab` (bytes at h->descr_off,
 * `tab_len` of them).  No primary system partition: -1, EXIT_CTRUN. */
int sif_find_primary(const struct sif_header *h, const unsigned char *tab, size_t tab_len,
		     uint64_t file_size, struct sif_partition *p, struct err *e);
/* Both, over a whole in-memory file (for tests and the fuzzer). */
int sif_parse_buffer(const unsigned char *buf, size_t len, struct sif_partition *p, struct err *e);
/* Both, reading only the header and table from an fd. */
int sif_read_fd(int fd, struct sif_partition *p, struct err *e);

#endif
