/* sif.c - the SIF reader (see sif.h): header and descriptor table only.
 *
 * Every number read from the file is untrusted: offsets and sizes are signed
 * 64-bit on disk, so each is checked for sign, for overflow when added, and
 * against the file size before anything uses it. */
#include "sif.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Field offsets of the packed on-disk structures (sylabs/sif v2). */
enum {
	H_MAGIC = 32, H_VERSION = 42, H_ARCH = 45, H_CTIME = 64, H_MTIME = 72,
	H_DFREE = 80, H_DTOTAL = 88, H_DOFF = 96, H_DSIZE = 104, H_DATAOFF = 112, H_DATASIZE = 120,
	D_TYPE = 0, D_USED = 4, D_ID = 5, D_OFF = 17, D_SIZE = 25, D_NAME = 73, D_EXTRA = 201,
};
/* Real files have 48 descriptors; a table beyond this is hostile, not big. */
#define SIF_DESCR_MAX 65536

static int64_t le64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return (int64_t)v;
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* [off, off+size) lies within [0, file_size), with no overflow. */
static int in_file(int64_t off, int64_t size, uint64_t file_size)
{
	if (off < 0 || size < 0)
		return 0;
	return (uint64_t)off <= file_size && (uint64_t)size <= file_size - (uint64_t)off;
}

int sif_parse_header(const unsigned char *buf, size_t len, uint64_t file_size,
		     struct sif_header *h, struct err *e)
{
	memset(h, 0, sizeof(*h));
	if (len < SIF_HDR_SIZE || file_size < SIF_HDR_SIZE)
		return err_set(e, EXIT_CTRUN, "SIF: file too short for a header (%zu bytes)", len);
	if (memcmp(buf + H_MAGIC, SIF_MAGIC, sizeof(SIF_MAGIC)) != 0)
		return err_set(e, EXIT_CTRUN, "SIF: no SIF_MAGIC at byte %d", H_MAGIC);
	memcpy(h->version, buf + H_VERSION, 3);
	memcpy(h->arch, buf + H_ARCH, 3);
	h->created = le64(buf + H_CTIME);
	h->modified = le64(buf + H_MTIME);
	h->descr_free = le64(buf + H_DFREE);
	h->descr_total = le64(buf + H_DTOTAL);
	h->descr_off = le64(buf + H_DOFF);
	h->descr_size = le64(buf + H_DSIZE);
	h->data_off = le64(buf + H_DATAOFF);
	h->data_size = le64(buf + H_DATASIZE);
	/* The format has had one version since 2018; a new one may move fields. */
	if (strcmp(h->version, "01") != 0)
		return err_set(e, EXIT_CTRUN, "SIF: unsupported version '%.3s'", h->version);
	if (h->descr_total < 0 || h->descr_total > SIF_DESCR_MAX)
		return err_set(e, EXIT_CTRUN, "SIF: bad descriptor count %lld",
			       (long long)h->descr_total);
	if (h->descr_size < h->descr_total * SIF_DESCR_SIZE)
		return err_set(e, EXIT_CTRUN, "SIF: descriptor table of %lld bytes cannot hold "
			       "%lld descriptors", (long long)h->descr_size, (long long)h->descr_total);
	if (!in_file(h->descr_off, h->descr_total * SIF_DESCR_SIZE, file_size))
		return err_set(e, EXIT_CTRUN, "SIF: descriptor table at %lld (+%lld) is past the "
			       "end of the file (%llu bytes)", (long long)h->descr_off,
			       (long long)h->descr_size, (unsigned long long)file_size);
	return 0;
}

int sif_find_primary(const struct sif_header *h, const unsigned char *tab, size_t tab_len,
		     uint64_t file_size, struct sif_partition *p, struct err *e)
{
	size_t n = (size_t)h->descr_total;
	int found = 0;

	memset(p, 0, sizeof(*p));
	if (tab_len / SIF_DESCR_SIZE < n)
		return err_set(e, EXIT_CTRUN, "SIF: descriptor table truncated");
	for (size_t i = 0; i < n; i++) {
		const unsigned char *d = tab + i * SIF_DESCR_SIZE;
		const unsigned char *x = d + D_EXTRA;
		int64_t off = le64(d + D_OFF), size = le64(d + D_SIZE);

		if (d[D_USED] == 0 || le32(d + D_TYPE) != SIF_DATA_PARTITION)
			continue;
		if ((int32_t)le32(x + 4) != SIF_PART_PRIMSYS)
			continue;
		if (found)
			return err_set(e, EXIT_CTRUN, "SIF: more than one primary system partition");
		if (!in_file(off, size, file_size) || size == 0)
			return err_set(e, EXIT_CTRUN, "SIF: primary partition at %lld (+%lld bytes) "
				       "is outside the file (%llu bytes)", (long long)off,
				       (long long)size, (unsigned long long)file_size);
		p->offset = (uint64_t)off;
		p->size = (uint64_t)size;
		p->fstype = (int32_t)le32(x);
		p->parttype = (int32_t)le32(x + 4);
		memcpy(p->arch, x + 8, 3);
		p->arch[3] = '\0';
		p->id = le32(d + D_ID);
		found = 1;
	}
	if (!found)
		return err_set(e, EXIT_CTRUN, "SIF: no primary system partition");
	return 0;
}

int sif_parse_buffer(const unsigned char *buf, size_t len, struct sif_partition *p,
		     struct err *e)
{
	struct sif_header h;

	if (sif_parse_header(buf, len, len, &h, e) < 0)
		return -1;
	/* sif_parse_header checked the table lies within len. */
	return sif_find_primary(&h, buf + h.descr_off, len - (size_t)h.descr_off, len, p, e);
}

static int pread_all(int fd, unsigned char *buf, size_t len, off_t off)
{
	while (len > 0) {
		ssize_t r = pread(fd, buf, len, off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r == 0)
				errno = EIO;
			return -1;
		}
		buf += r;
		len -= (size_t)r;
		off += r;
	}
	return 0;
}

int sif_read_fd(int fd, struct sif_partition *p, struct err *e)
{
	unsigned char hdr[SIF_HDR_SIZE], *tab = NULL;
	struct sif_header h;
	struct stat st;
	size_t tab_len;
	int rv = -1;

	if (fstat(fd, &st) < 0)
		return err_sys(e, EXIT_CTRUN, "SIF: stat");
	if (st.st_size < SIF_HDR_SIZE)
		return err_set(e, EXIT_CTRUN, "SIF: file too short for a header (%lld bytes)",
			       (long long)st.st_size);
	if (pread_all(fd, hdr, sizeof(hdr), 0) < 0)
		return err_sys(e, EXIT_CTRUN, "SIF: reading the header");
	if (sif_parse_header(hdr, sizeof(hdr), (uint64_t)st.st_size, &h, e) < 0)
		return -1;
	tab_len = (size_t)h.descr_total * SIF_DESCR_SIZE;
	tab = malloc(tab_len ? tab_len : 1);
	if (tab == NULL)
		return err_sys(e, EXIT_CTRUN, "SIF: descriptor table");
	if (pread_all(fd, tab, tab_len, (off_t)h.descr_off) < 0) {
		err_sys(e, EXIT_CTRUN, "SIF: reading the descriptor table");
		goto out;
	}
	rv = sif_find_primary(&h, tab, tab_len, (uint64_t)st.st_size, p, e);
out:
	free(tab);
	return rv;
}
