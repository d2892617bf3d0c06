/* imgtest.h - building small image archives in memory for the image unit tests.
 *
 * Header-only (the unit test build compiles each test_*.c alone).  Layers and
 * outer archives are written with libarchive's writer, so the bytes are what
 * `docker save` and OCI tools produce: ustar/pax members, optional gzip. */
#ifndef CTRUN_IMGTEST_H
#define CTRUN_IMGTEST_H

#include <archive.h>
#include <archive_entry.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Members name their owner only where a test is about owners. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

/* One member: 'f' file (data, len), 'd' directory, 'l' symlink (data = target),
 * 'h' hard link (data = target path). len 0 with data = strlen(data). */
struct member {
	const char *name;
	char type;
	const char *data;
	size_t len;
	unsigned uid; /* owner (and group) in the archive; 0 = root */
};

struct blob {
	char *data;
	size_t len;
};

static inline void blob_free(struct blob *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
}

/* Writes members as a tar into memory; gzip when `gz`. */
static inline struct blob tar_blob(const struct member *m, size_t n, int gz)
{
	struct archive *a = archive_write_new();
	size_t cap = 1 << 22, used = 0;
	struct blob b;

	b.data = malloc(cap);
	archive_write_set_format_pax_restricted(a);
	if (gz)
		archive_write_add_filter_gzip(a);
	archive_write_set_bytes_in_last_block(a, 1);
	if (archive_write_open_memory(a, b.data, cap, &used) != ARCHIVE_OK)
		abort();
	for (size_t i = 0; i < n; i++) {
		struct archive_entry *e = archive_entry_new();
		size_t len = m[i].len ? m[i].len : (m[i].data ? strlen(m[i].data) : 0);

		archive_entry_set_pathname(e, m[i].name);
		archive_entry_set_mtime(e, 1700000000, 0);
		archive_entry_set_uid(e, m[i].uid);
		archive_entry_set_gid(e, m[i].uid);
		switch (m[i].type) {
		case 'd':
			archive_entry_set_filetype(e, AE_IFDIR);
			archive_entry_set_perm(e, 0755);
			break;
		case 'l':
			archive_entry_set_filetype(e, AE_IFLNK);
			archive_entry_set_perm(e, 0777);
			archive_entry_set_symlink(e, m[i].data);
			break;
		case 'h':
			archive_entry_set_filetype(e, AE_IFREG);
			archive_entry_set_perm(e, 0644);
			archive_entry_set_hardlink(e, m[i].data);
			break;
		default:
			archive_entry_set_filetype(e, AE_IFREG);
			archive_entry_set_perm(e, 0644);
			archive_entry_set_size(e, (la_int64_t)len);
		}
		if (archive_write_header(a, e) != ARCHIVE_OK)
			abort();
		if (m[i].type == 'f' && len > 0 &&
		    archive_write_data(a, m[i].data, len) != (la_ssize_t)len)
			abort();
		archive_entry_free(e);
	}
	if (archive_write_close(a) != ARCHIVE_OK)
		abort();
	archive_write_free(a);
	b.len = used;
	return b;
}

static inline void write_blob(const char *path, struct blob b)
{
	FILE *f = fopen(path, "w");

	if (f == NULL || fwrite(b.data, 1, b.len, f) != b.len || fclose(f) != 0)
		abort();
}

/* A `docker save` archive of the given layers (bottom first). */
static inline void make_docker_archive(const char *path, const struct blob *layers, size_t n, int gz)
{
	struct member m[16];
	char names[8][64], manifest[1024];
	size_t k = 0, off;

	off = (size_t)snprintf(manifest, sizeof(manifest),
			       "[{\"Config\":\"cfg.json\",\"RepoTags\":[\"t:latest\"],\"Layers\":[");
	for (size_t i = 0; i < n; i++) {
		snprintf(names[i], sizeof(names[i]), "%032zx/layer.tar", i + 1);
		m[k++] = (struct member){ names[i], 'f', layers[i].data, layers[i].len };
		off += (size_t)snprintf(manifest + off, sizeof(manifest) - off, "%s\"%s\"",
					i ? "," : "", names[i]);
	}
	snprintf(manifest + off, sizeof(manifest) - off, "]}]");
	m[k++] = (struct member){ "cfg.json", 'f', "{}", 0 };
	m[k++] = (struct member){ "manifest.json", 'f', manifest, 0 };
	struct blob outer = tar_blob(m, k, gz);
	write_blob(path, outer);
	blob_free(&outer);
}

/* An OCI image-layout archive (index.json -> manifest blob -> layer blobs). */
static inline void make_oci_archive(const char *path, const struct blob *layers, size_t n)
{
	struct member m[16];
	char names[8][96], man[2048], index[512];
	size_t k = 0, off;

	m[k++] = (struct member){ "oci-layout", 'f', "{\"imageLayoutVersion\":\"1.0.0\"}", 0 };
	off = (size_t)snprintf(man, sizeof(man), "{\"schemaVersion\":2,\"config\":{\"digest\":"
			       "\"sha256:%064x\"},\"layers\":[", 0xc0);
	for (size_t i = 0; i < n; i++) {
		snprintf(names[i], sizeof(names[i]), "blobs/sha256/%064zx", i + 1);
		m[k++] = (struct member){ names[i], 'f', layers[i].data, layers[i].len };
		off += (size_t)snprintf(man + off, sizeof(man) - off,
					"%s{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar+gzip\","
					"\"digest\":\"sha256:%064zx\"}", i ? "," : "", i + 1);
	}
	snprintf(man + off, sizeof(man) - off, "]}");
	m[k++] = (struct member){ "blobs/sha256/00000000000000000000000000000000000000000000000000000000000000c0",
				  'f', "{}", 0 };
	m[k++] = (struct member){ "blobs/sha256/00000000000000000000000000000000000000000000000000000000000000aa",
				  'f', man, 0 };
	snprintf(index, sizeof(index), "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":"
		 "\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"sha256:%064x\"}]}", 0xaa);
	m[k++] = (struct member){ "index.json", 'f', index, 0 };
	struct blob outer = tar_blob(m, k, 0);
	write_blob(path, outer);
	blob_free(&outer);
}

#endif
