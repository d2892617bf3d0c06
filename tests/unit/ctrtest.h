/* ctrtest.h - the one helper header of the unit tests (and of the hostlist
 * fuzz target's oracle).  Header-only: the unit build compiles each
 * test_*.c alone, with its own folder's include path and -Itests/unit.
 *
 * Always: cmocka and the libc headers the tests use, show() (a string with
 * its unprintable bytes escaped, for messages), core's mono_ms(), and the scratch
 * directory fixture (tmpdir_setup / tmpdir_teardown, tmpdir_path).
 * A test file asks for more by defining, before the include:
 *   CTRTEST_HOSTLIST      comparing hostlist expansions (runner/slurm)
 *   CTRTEST_LENIENT       what libslurm 22.05 accepts that the builtin
 *                         hostlist parser refuses (no cmocka, no libraries:
 *                         the fuzz target defines CTRTEST_NO_CMOCKA too)
 *   CTRTEST_ARCHIVES      image archives built in memory (libarchive)
 *   CTRTEST_ARCHIVE_FIXTURE  the archive tests' fixture (images; implies
 *                         CTRTEST_ARCHIVES)
 *   CTRTEST_STREAM        layers streamed into a squashfs as a registry pull
 *                         does, unpacked by unsquashfs (images; implies
 *                         CTRTEST_ARCHIVE_FIXTURE; libarchive's names are
 *                         the dlopen table's after it: archive_dl.h)
 *   CTRTEST_CACHE_FIXTURE the node cache tests' fixture (images)
 *   CTRTEST_SUPERVISE     the supervisor's harness (runner/supervise)
 *   CTRTEST_APPTAINER     the apptainer adapter's golden-test fixture
 *                         (runner/container/rt: test_apptainer*.c)
 *   CTRTEST_RDZV          ranks of the rendezvous as processes, the job's
 *                         key and another's (runner/net)
 * Each part needs its folder's headers, and several name their fixture
 * setup/teardown: one file asks for one fixture part. */
#ifndef CTRUN_CTRTEST_H
#define CTRUN_CTRTEST_H

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef CTRTEST_NO_CMOCKA
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "util.h" /* mono_ms */

/* ---- every test --------------------------------------------------------- */

/* s with unprintable bytes as \xNN, for failure messages. */
static __attribute__((unused)) const char *show(const char *s)
{
	static char buf[4][512];
	static int k;
	char *b = buf[k++ % 4];
	size_t len = 0;

	for (; *s != '\0' && len + 8 < sizeof(buf[0]); s++) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x20 || c >= 0x7f)
			len += (size_t)snprintf(b + len, sizeof(buf[0]) - len, "\\x%02x", c);
		else
			b[len++] = (char)c;
	}
	b[len] = '\0';
	return b;
}

/* In a forked child: its address space limited to `bytes`, so that an
 * allocation the code under test should never make fails there (not under
 * ASan, whose shadow memory is address space already).  Exits 10 when the
 * limit cannot be set. */
static inline void child_limit_as(unsigned long long bytes)
{
#ifndef __SANITIZE_ADDRESS__
	struct rlimit as = { (rlim_t)bytes, (rlim_t)bytes };

	if (setrlimit(RLIMIT_AS, &as) < 0)
		_exit(10);
#else
	(void)bytes;
#endif
}

/* The scratch directory fixture: a fresh directory per test (or per group),
 * removed with everything in it afterwards, passed or not.  state points at
 * a struct tmpdir; tmpdir_path(td, "a/b") names a path in it. */
struct tmpdir {
	char dir[64];
	char path[4][PATH_MAX]; /* tmpdir_path's results, four alive at once */
	int next;
};

static inline int tmpdir_setup(void **state)
{
	struct tmpdir *td = calloc(1, sizeof(*td));

	if (td == NULL)
		return -1;
	strcpy(td->dir, "/tmp/ctrun-test-XXXXXX");
	if (mkdtemp(td->dir) == NULL) {
		free(td);
		return -1;
	}
	*state = td;
	return 0;
}

static inline int tmpdir_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static inline int tmpdir_teardown(void **state)
{
	struct tmpdir *td = *state;
	int rv;

	if (td == NULL)
		return 0;
	rv = nftw(td->dir, tmpdir_rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(td);
	*state = NULL;
	return rv == 0 ? 0 : -1;
}

static inline const char *tmpdir_path(struct tmpdir *td, const char *rel)
{
	char *p = td->path[td->next++ % 4], buf[PATH_MAX];
	int n = snprintf(buf, sizeof(buf), "%s/%s", td->dir, rel);

	assert_true(n > 0 && (size_t)n < sizeof(buf));
	memcpy(p, buf, (size_t)n + 1);
	return p;
}
#endif /* CTRTEST_NO_CMOCKA */

#ifdef CTRTEST_HOSTLIST
/* ---- hostlist expansions (was hosttest.h) -------------------------------- */
#include "hostlist.h"
#include "slurmlib.h"

/* The names joined with ','. */
static __attribute__((unused)) char *joined(const struct strv *v)
{
	size_t len = 1;
	char *s, *p;

	for (size_t i = 0; i < v->n; i++)
		len += strlen(v->v[i]) + 1;
	s = p = malloc(len);
	assert_non_null(s);
	*p = '\0';
	for (size_t i = 0; i < v->n; i++)
		p += sprintf(p, "%s%s", i ? "," : "", v->v[i]);
	return s;
}

static __attribute__((unused)) void expect_hosts(const char *in, const char *want)
{
	struct strv out = { 0 };
	struct err e = { 0 };
	char *got;

	if (hostlist_expand(in, &out, &e) != 0)
		fail_msg("hostlist_expand(\"%s\") failed: %s", show(in), e.msg);
	got = joined(&out);
	if (strcmp(got, want) != 0)
		fail_msg("hostlist_expand(\"%s\")\n  got:  %s\n  want: %s", show(in), got, want);
	free(got);
	strv_free(&out);
}

static __attribute__((unused)) void expect_refused(const char *in, const char *msg_part)
{
	struct strv out = { 0 };
	struct err e = { 0 };

	if (hostlist_expand(in, &out, &e) != -1) {
		char *got = joined(&out);

		fail_msg("hostlist_expand(\"%s\") accepted it: %s", show(in), got);
	}
	assert_int_equal(e.code, EXIT_CTRUN);
	assert_int_equal(out.n, 0);
	assert_null(out.v);
	assert_null(strchr(e.msg, '\n'));
	if (strstr(e.msg, msg_part) == NULL)
		fail_msg("hostlist_expand(\"%s\"): message \"%s\" lacks \"%s\"", show(in), e.msg,
			 msg_part);
}

struct accept_case {
	const char *in, *want;
};

struct refuse_case {
	const char *in, *msg;
};

#define EXPECT_HOSTS(table)                                          \
	for (size_t i_ = 0; i_ < sizeof(table) / sizeof(table[0]); i_++) \
		expect_hosts(table[i_].in, table[i_].want)
#define EXPECT_REFUSED(table)                                        \
	for (size_t i_ = 0; i_ < sizeof(table) / sizeof(table[0]); i_++) \
		expect_refused(table[i_].in, table[i_].msg)
#endif

#ifdef CTRTEST_LENIENT
/* ---- libslurm's leniency (was slurm_lenient.h) ----------------------------
 * The inputs libslurm 22.05 accepts (or mangles) that the builtin hostlist
 * parser refuses on purpose, and the suffixes it refuses that the builtin
 * takes as newer releases do (see hostlist.h).  Shared by the differential
 * unit test and the fuzz target, so both judge a disagreement by the same
 * rules. */

/* Where libslurm 22.05 answers but the builtin refuses on purpose
 * (hostlist.h): brackets that do not pair up flat, control characters,
 * anything but "N" or "N-M" between the commas of a bracket, three or more
 * brackets in one name (libslurm silently drops the names whose inner
 * brackets are bad), or a number libslurm cannot hold (a bracket number, or
 * the trailing digits of a name without brackets, of ULONG_MAX or more). */
static inline bool libslurm_lenient(const char *s)
{
	size_t groups = 0;
	bool inside = false;

	for (size_t i = 0; s[i] != '\0'; i++) {
		unsigned char c = (unsigned char)s[i];

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return true;
		if (c == '[') {
			if (inside || ++groups >= 3)
				return true;
			inside = true;
		} else if (c == ']') {
			if (!inside)
				return true;
			inside = false;
		} else if (!inside && (c == ',' || c == ' ' || c == '\t')) {
			groups = 0;
		}
		if (c >= '0' && c <= '9' && (i == 0 || s[i - 1] < '0' || s[i - 1] > '9')) {
			/* A number: too large, where libslurm reads it? */
			unsigned long v = 0;
			bool big = false;
			size_t j = i;

			for (; s[j] >= '0' && s[j] <= '9'; j++) {
				if (v > (ULONG_MAX - (unsigned)(s[j] - '0')) / 10)
					big = true;
				else
					v = v * 10 + (unsigned)(s[j] - '0');
			}
			if ((big || v == ULONG_MAX) &&
			    (inside || s[j] == '\0' || s[j] == ',' || s[j] == ' ' || s[j] == '\t'))
				return true;
		}
		if (inside && c != '[') {
			/* Each element must be N or N-M. */
			bool start = s[i - 1] == '[' || s[i - 1] == ',';

			if (c != ',' && c != ']' && c != '-' && (c < '0' || c > '9'))
				return true;
			if (start && (c == '-' || c == ',' || c == ']'))
				return true;
			if (c == '-' && (s[i + 1] < '0' || s[i + 1] > '9'))
				return true;
			if (c == '-') {
				size_t j = i + 1;

				while (s[j] >= '0' && s[j] <= '9')
					j++;
				if (s[j] == '-')
					return true;
			}
		}
	}
	return inside;
}

/* Whether some expression of s has text after its last ']' (Slurm 23.11
 * and later take it as a suffix of every name; earlier releases refuse). */
static inline bool hostlist_has_suffix(const char *s)
{
	bool after = false;

	for (size_t i = 0; s[i] != '\0'; i++) {
		char c = s[i];

		if (c == ']')
			after = true;
		else if (c == '[' || c == ',' || c == ' ' || c == '\t' || c == '\n')
			after = false;
		else if (after)
			return true;
	}
	return false;
}
#endif

#if defined(CTRTEST_STREAM) && !defined(CTRTEST_ARCHIVE_FIXTURE)
#define CTRTEST_ARCHIVE_FIXTURE
#endif
#if defined(CTRTEST_ARCHIVE_FIXTURE) && !defined(CTRTEST_ARCHIVES)
#define CTRTEST_ARCHIVES
#endif

#ifdef CTRTEST_ARCHIVES
/* ---- image archives in memory (was imgtest.h) -----------------------------
 * Layers and outer archives are written with libarchive's writer, so the
 * bytes are what `docker save` and OCI tools produce: ustar/pax members,
 * optional gzip. */
#include <archive.h>
#include <archive_entry.h>
#include <sys/stat.h>

/* Members name their owner only where a test is about owners. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

/* One member: 'f' file (data, len), 'd' directory, 'l' symlink (data = target),
 * 'h' hard link (data = target path), 'p' FIFO. len 0 with data = strlen(data).
 * raw_tar only: 'H' a hard link (data = target path) carrying `body`. */
struct member {
	const char *name;
	char type;
	const char *data;
	size_t len;
	unsigned uid;  /* owner (and group) in the archive; 0 = root */
	unsigned mode; /* permission bits; 0 = the type's usual (0644, 0755, 0777) */
	const char *body;
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
		case 'p':
			archive_entry_set_filetype(e, AE_IFIFO);
			archive_entry_set_perm(e, 0644);
			break;
		default:
			archive_entry_set_filetype(e, AE_IFREG);
			archive_entry_set_perm(e, 0644);
			archive_entry_set_size(e, (la_int64_t)len);
		}
		if (m[i].mode != 0)
			archive_entry_set_perm(e, m[i].mode);
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

/* raw_tar's output, grown as it is written. */
static inline void raw_put(struct blob *b, size_t *cap, const void *p, size_t n)
{
	size_t pad = (512 - n % 512) % 512;

	if (b->len + n + pad > *cap) {
		*cap = (b->len + n + pad) * 2;
		b->data = realloc(b->data, *cap);
		if (b->data == NULL)
			abort();
	}
	memcpy(b->data + b->len, p, n);
	memset(b->data + b->len + n, 0, pad);
	b->len += n + pad;
}

/* One ustar header (name and link under 100 bytes), its checksum made. */
static inline void raw_header(struct blob *b, size_t *cap, const char *name, char type,
			      const char *link, size_t size)
{
	unsigned char h[512] = { 0 };
	unsigned sum = 0;

	snprintf((char *)h, 100, "%s", name);
	snprintf((char *)h + 100, 8, "%07o", type == '5' ? 0755u : 0644u);
	snprintf((char *)h + 108, 8, "%07o", 0u);
	snprintf((char *)h + 116, 8, "%07o", 0u);
	snprintf((char *)h + 124, 12, "%011zo", size);
	snprintf((char *)h + 136, 12, "%011o", 1700000000u);
	h[156] = (unsigned char)type;
	if (link != NULL)
		snprintf((char *)h + 157, 100, "%s", link);
	memcpy(h + 257, "ustar\0" "00", 8);
	memset(h + 148, ' ', 8);
	for (size_t i = 0; i < sizeof(h); i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
	raw_put(b, cap, h, sizeof(h));
}

static inline void pax_record(FILE *f, const char *key, const char *value)
{
	size_t k = strlen(key) + strlen(value) + 3, digits = 1; /* ' ', '=', '\n' */

	while (snprintf(NULL, 0, "%zu", k + digits) > (int)digits)
		digits++;
	fprintf(f, "%zu %s=%s\n", k + digits, key, value);
}

/* A tar written byte by byte, for what libarchive's writer will not write:
 * a hard link carrying data ('H'; libarchive reads that data only after a
 * pax header, so each member has one) and names and link targets of any
 * length (the pax header's path and linkpath).  Types 'f', 'd', 'l', 'h', 'H' (no FIFO); no gzip. */
static inline struct blob raw_tar(const struct member *m, size_t n)
{
	struct blob b = { NULL, 0 };
	size_t cap = 0;

	for (size_t i = 0; i < n; i++) {
		const char *link = m[i].type == 'f' || m[i].type == 'd' ? NULL : m[i].data;
		const char *body = m[i].type == 'H' ? m[i].body : m[i].type == 'f' ? m[i].data : NULL;
		size_t len = body == NULL ? 0 : m[i].len ? m[i].len : strlen(body);
		char *rec = NULL;
		size_t rlen = 0;
		FILE *f = open_memstream(&rec, &rlen);

		/* A pax record counts its own length: "LEN path=...\n". */
		if (link != NULL)
			pax_record(f, "linkpath", link);
		if (strlen(m[i].name) >= 100)
			pax_record(f, "path", m[i].name);
		if (link == NULL && strlen(m[i].name) < 100)
			fprintf(f, "13 comment=x\n");
		fclose(f);
		raw_header(&b, &cap, "PaxHeader", 'x', NULL, rlen);
		raw_put(&b, &cap, rec, rlen);
		free(rec);
		raw_header(&b, &cap, m[i].name,
			   m[i].type == 'd' ? '5' : m[i].type == 'l' ? '2' :
			   m[i].type == 'f' ? '0' : '1', link != NULL ? "x" : NULL, len);
		if (len > 0)
			raw_put(&b, &cap, body, len);
	}
	raw_put(&b, &cap, (char[1024]){ 0 }, 1024);
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

#ifdef CTRTEST_ARCHIVE_FIXTURE
/* ---- the archive tests' fixture (was images/archtest.h) -------------------
 * A scratch directory with an empty unpack target, a host directory layers
 * try to reach, and the image file's path; helpers to look into the target. */
#include <dirent.h>
#include <fcntl.h>
#include <sys/inotify.h>

#include "imgconfig.h"
#include "image.h"
#include "inroot.h"
#include "rootpath.h"
#include "strv.h"
#include "util.h"

struct fx {
	char dir[64];       /* scratch, removed after each test */
	char dest[128];     /* the (empty) unpack target */
	char outside[128];  /* a host directory layers try to reach */
	char image[128];
};

static inline int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	strcpy(f->dir, "/tmp/ctrun-test-archive-XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->dest, sizeof(f->dest), "%s/dest", f->dir);
	snprintf(f->outside, sizeof(f->outside), "%s/outside", f->dir);
	snprintf(f->image, sizeof(f->image), "%s/image.tar", f->dir);
	assert_int_equal(mkdir(f->dest, 0755), 0);
	assert_int_equal(mkdir(f->outside, 0755), 0);
	*state = f;
	return 0;
}

static inline int teardown(void **state)
{
	struct fx *f = *state;

	remove_tree(f->dir);
	free(f);
	return 0;
}

static inline char *in(const struct fx *f, const char *rel)
{
	static char buf[8][256];
	static int i;

	i = (i + 1) % 8;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", f->dest, rel);
	return buf[i];
}

static inline int present(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static inline void assert_content(const char *path, const char *want)
{
	char got[256] = "";
	FILE *fp = fopen(path, "r");

	assert_non_null(fp);
	assert_non_null(fgets(got, sizeof(got), fp));
	fclose(fp);
	assert_string_equal(got, want);
}
#endif

#ifdef CTRTEST_STREAM
/* ---- layers streamed into a squashfs (a registry pull's path) ------------- */
#include <ftw.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "squash/layerfile.h"

/* The trees compared (test_stream*.c): one line per name. */

struct listing {
	char *text;
	size_t len, cap;
	const char *root;
	dev_t dev[4096];
	ino_t ino[4096];
	char first[4096][128];
	size_t ninodes;
};

static __attribute__((unused)) struct listing *cur;

static __attribute__((unused)) void say(struct listing *l, const char *line)
{
	size_t n = strlen(line);

	if (l->len + n + 2 > l->cap) {
		l->cap = (l->len + n + 2) * 2;
		l->text = realloc(l->text, l->cap);
		assert_non_null(l->text);
	}
	memcpy(l->text + l->len, line, n);
	l->len += n;
	l->text[l->len++] = '\n';
	l->text[l->len] = '\0';
}

/* One line per inode seen, in nftw's order (sorted afterwards by the caller). */
static __attribute__((unused)) int one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	const char *rel = path + strlen(cur->root);
	char line[1024], extra[512] = "";
	size_t i;

	(void)flag;
	(void)ftw;
	if (*rel == '\0')
		return 0;
	if (S_ISLNK(st->st_mode)) {
		ssize_t n = readlink(path, extra, sizeof(extra) - 1);

		extra[n > 0 ? n : 0] = '\0';
	} else if (S_ISREG(st->st_mode)) {
		FILE *fp = fopen(path, "r");
		size_t n;

		assert_non_null(fp);
		n = fread(extra, 1, sizeof(extra) - 1, fp);
		extra[n] = '\0';
		fclose(fp);
		for (i = 0; i < n; i++)
			if (extra[i] == '\n')
				extra[i] = '|';
	}
	/* Hard links: the first name met stands for the inode. */
	for (i = 0; i < cur->ninodes; i++)
		if (cur->dev[i] == st->st_dev && cur->ino[i] == st->st_ino)
			break;
	if (i == cur->ninodes && !S_ISDIR(st->st_mode) && st->st_nlink > 1) {
		cur->dev[i] = st->st_dev;
		cur->ino[i] = st->st_ino;
		snprintf(cur->first[i], sizeof(cur->first[i]), "%s", rel);
		cur->ninodes++;
	}
	snprintf(line, sizeof(line), "%s %o %s%s%s", rel, (unsigned)st->st_mode,
		 i < cur->ninodes ? "=" : "", i < cur->ninodes ? cur->first[i] : "", extra);
	say(cur, line);
	return 0;
}

static __attribute__((unused)) int cmp_lines(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The tree under dir as sorted lines: path, mode, hard link group, content. */
static __attribute__((unused)) char *list_tree(const char *dir)
{
	struct listing *l = calloc(1, sizeof(*l));
	char *lines[8192], *p, *out;
	size_t n = 0, len = 0;

	assert_non_null(l);
	l->root = dir;
	cur = l;
	say(l, "");
	l->len = 0;
	assert_int_equal(nftw(dir, one, 16, FTW_PHYS), 0);
	for (p = strtok(l->text, "\n"); p != NULL && n < 8192; p = strtok(NULL, "\n"))
		lines[n++] = p;
	qsort(lines, n, sizeof(*lines), cmp_lines);
	out = malloc(l->len + 1);
	assert_non_null(out);
	out[0] = '\0';
	for (size_t i = 0; i < n; i++)
		len += (size_t)sprintf(out + len, "%s\n", lines[i]);
	free(l->text);
	free(l);
	return out;
}

/* Random layers (test_stream*.c). */

static __attribute__((unused)) uint64_t rng;

static __attribute__((unused)) unsigned pick(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

static const char *const rand_names[] = { "a", "b", "c", "d" };
static const char *const rand_targets[] = { "a", "b", "../c", "/d", "a/b", "/", "..", "d/../a",
				       "../../../../..", "/a/b/c", "nowhere/x", "c/" };

/* A path of 1 to 3 components, into buf. */
static __attribute__((unused)) const char *rand_path(char *buf, size_t size)
{
	unsigned depth = 1 + pick(3) * pick(2);

	buf[0] = '\0';
	for (unsigned i = 0; i < depth; i++)
		snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", i ? "/" : "",
			 rand_names[pick(4)]);
	return buf;
}

/* The regular files named so far in a case: most hard links point at one. */
static __attribute__((unused)) char files[64][64];
static __attribute__((unused)) unsigned nfiles;

struct layerspec {
	struct member m[10];
	char name[10][64], data[10][64];
	size_t n;
};

static __attribute__((unused)) void rand_layer(struct layerspec *s)
{
	s->n = 1 + pick(6);
	for (size_t i = 0; i < s->n; i++) {
		char dir[64];
		unsigned kind = pick(10);

		rand_path(s->name[i], sizeof(s->name[i]));
		s->m[i] = (struct member){ s->name[i], 'f', s->data[i], 0 };
		snprintf(s->data[i], sizeof(s->data[i]), "content %zu.%u\n", i, pick(1000));
		switch (kind) {
		case 0:
		case 1:
			s->m[i].type = 'd';
			s->m[i].data = NULL;
			break;
		case 2:
		case 3:
			s->m[i].type = 'l';
			snprintf(s->data[i], sizeof(s->data[i]), "%s", rand_targets[pick(12)]);
			break;
		case 4:
			s->m[i].type = 'h';
			if (nfiles > 0 && pick(4) != 0)
				snprintf(s->data[i], sizeof(s->data[i]), "%s",
					 files[nfiles - 1 - pick(nfiles < 2 ? 1 : 2)]);
			else
				rand_path(s->data[i], sizeof(s->data[i]));
			break;
		case 5:
		case 6: /* a whiteout or an opaque marker in a random directory */
			rand_path(dir, sizeof(dir));
			snprintf(s->name[i], sizeof(s->name[i]), "%s/.wh.%s", dir,
				 kind == 5 ? rand_names[pick(4)] : ".wh..opq");
			s->data[i][0] = '\0';
			break;
		case 7:
			s->m[i].mode = 04775; /* setuid and group-writable: sanitized */
			break;
		default:
			break;
		}
		if (s->m[i].type == 'f' && nfiles < 64)
			snprintf(files[nfiles++], sizeof(files[0]), "%s", s->name[i]);
	}
}

/* unsquashfs of image into dest (which exists). */
static inline void unsquash(const char *image, const char *dest)
{
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(null, 1);
		execlp("unsquashfs", "unsquashfs", "-no-progress", "-f", "-d", dest, image,
		       (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* The layers (bottom first) and the config (NULL: "{}") streamed into
 * dir/image.sqsh by layerfile.c, as registry/assemble.c calls it, with options
 * o (NULL: gzip level 1, 2 threads).  0, or -1 with e. */
static inline int stream_layers(const char *dir, const struct blob *l, size_t n,
				const char *config, const struct sqimage_opts *o, struct err *e)
{
	struct sqimage_opts def = { .comp = SQ_GZIP, .level = 1, .threads = 2 };
	char path[256], sqsh[256];
	struct sqimage *s = NULL;
	int out, fd, rv = -1;

	snprintf(sqsh, sizeof(sqsh), "%s/image.sqsh", dir);
	out = open(sqsh, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(out >= 0);
	if (sqimage_open(&s, out, o != NULL ? o : &def, e) < 0)
		goto done;
	for (size_t i = 0; i <= n; i++) {
		const char *cfg = config != NULL ? config : "{}";

		snprintf(path, sizeof(path), "%s/blob%zu", dir, i);
		write_blob(path, i < n ? l[i] : (struct blob){ (char *)cfg, strlen(cfg) });
		fd = open(path, O_RDONLY);
		assert_true(fd >= 0);
		rv = i < n ? layerfile_apply(fd, i, "sha256:x", s, NULL, e) : layerfile_config(fd, s, e);
		close(fd);
		unlink(path);
		if (rv < 0)
			goto done;
	}
	rv = sqimage_finish(s, e);
done:
	sqimage_free(s);
	close(out);
	return rv;
}
#endif

#ifdef CTRTEST_CACHE_FIXTURE
/* ---- the node cache tests' fixture (was images/cachetest.h) ---------------
 * A scratch directory per test, paths in it, image ids. */
#include "cache/cache.h"
#include "rootpath.h"

static char dir[64];
static char path_buf[4][256];

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/ctrun-test-cache-XXXXXX");
	return mkdtemp(dir) == NULL ? -1 : 0;
}

static int teardown(void **state)
{
	(void)state;
	remove_tree(dir);
	return 0;
}

static const char *p(int slot, const char *rel)
{
	snprintf(path_buf[slot], sizeof(path_buf[slot]), "%s/%s", dir, rel);
	return path_buf[slot];
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void id_of(const char *path, char *id)
{
	struct err e = { 0 };

	if (cache_identity(path, id, CACHE_ID_MAX, &e) < 0)
		fail_msg("%s", e.msg);
}

static struct cache_cfg cfg(void)
{
	return (struct cache_cfg){ .dir = p(3, "cache"), .quiet = true };
}
#endif

#ifdef CTRTEST_SUPERVISE
/* ---- the supervisor's harness (was runner/supervise/suptest.h) ------------
 * A forked child plays ctrun and calls supervise_run with real worker
 * processes (sh scripts), its stdout/stderr in a temp dir, the result sent
 * back on a pipe, so that signals can be aimed at it and its state stays
 * out of the runner. */
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "command.h"
#include "guardian.h"
#include "supervise.h"
#include "util.h"

#define MAXW 4

struct run {
	pid_t pid;  /* the child playing ctrun */
	int res;    /* read end: struct msg */
	char dir[64];
	struct worker w[MAXW];
	char *argv[MAXW][5];
	char *env[MAXW][512];
	char vars[MAXW][2][PATH_MAX];
	cpu_set_t cpus;
	struct supervise_opts o;
	rlim_t nofile; /* descriptor limit for ctrun, 0 = unchanged */
};

static struct run rn; /* large: not on the stack */

struct msg {
	int rv;
	struct supervise_result r;
	struct err e;
};

/* The workers of these tests sleep 30 s: a run that ends before this did
 * not wait for them.  Only a guard against a hang, never a timing goal
 * (those are in `make bench`). */
#define HANG_GUARD_MS 15000

/* n workers running `sh -c script` with RANK and TDIR (the temp dir) set. */
static inline void prepare(struct run *r, size_t n, const char *script)
{
	extern char **environ;

	memset(r, 0, sizeof(*r));
	strcpy(r->dir, "/tmp/ctrun-sup-XXXXXX");
	assert_non_null(mkdtemp(r->dir));
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;

		r->argv[i][0] = "/bin/sh";
		r->argv[i][1] = "-c";
		r->argv[i][2] = (char *)script;
		r->argv[i][3] = "sh";
		for (char **p = environ; *p != NULL && k < 500; p++)
			r->env[i][k++] = *p;
		snprintf(r->vars[i][0], PATH_MAX, "RANK=%zu", i);
		snprintf(r->vars[i][1], PATH_MAX, "TDIR=%s", r->dir);
		r->env[i][k++] = r->vars[i][0];
		r->env[i][k++] = r->vars[i][1];
		r->w[i] = (struct worker){ .rank = (long)i, .local_rank = (long)i,
					    .argv = r->argv[i], .envp = r->env[i] };
	}
	r->o = (struct supervise_opts){ .host = "testhost", .prefix = true, .grace_ms = 1000 };
}

static inline char *path_in(const struct run *r, const char *name)
{
	static char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", r->dir, name);
	return path;
}

static inline void start(struct run *r, size_t n)
{
	int p[2];

	assert_int_equal(pipe(p), 0);
	r->pid = fork();
	assert_true(r->pid >= 0);
	if (r->pid == 0) {
		struct msg m = { 0 };
		int out = open(path_in(r, "out"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int err = open(path_in(r, "err"), O_WRONLY | O_CREAT | O_TRUNC, 0644);

		close(p[0]);
		if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
			_exit(99);
		close(out);
		close(err);
		if (r->nofile > 0 &&
		    setrlimit(RLIMIT_NOFILE, &(struct rlimit){ r->nofile, r->nofile }) < 0)
			_exit(97);
		m.rv = supervise_run(r->w, n, &r->o, &m.r, &m.e);
		if (write(p[1], &m, sizeof(m)) != (ssize_t)sizeof(m))
			_exit(98);
		_exit(0);
	}
	close(p[1]);
	r->res = p[0];
}

/* The result as sent before the child exits: what is still running at
 * this point was left behind by supervise_run. */
static inline struct msg finish_result(struct run *r)
{
	struct msg m;

	memset(&m, 0, sizeof(m));
	assert_int_equal(read(r->res, &m, sizeof(m)), (ssize_t)sizeof(m));
	close(r->res);
	return m;
}

static inline void reap_child(struct run *r)
{
	int ws;

	assert_int_equal(waitpid(r->pid, &ws, 0), r->pid);
	r->pid = 0;
	assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
}

static inline struct msg run(struct run *r, size_t n)
{
	struct msg m;

	start(r, n);
	m = finish_result(r);
	reap_child(r);
	return m;
}

static inline void touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT, 0644);

	assert_true(fd >= 0);
	close(fd);
}

static inline char *slurp(struct run *r, const char *name)
{
	char *s = read_file(path_in(r, name), NULL);

	assert_non_null(s);
	return s;
}

/* Until the worker has written a whole line into the file (the event);
 * false after timeout_ms, a guard against a hang. */
static inline bool wait_file(struct run *r, const char *name, int timeout_ms)
{
	long long end = mono_ms() + timeout_ms;

	for (;;) {
		size_t len = 0;
		char *s = read_file(path_in(r, name), &len);
		bool done = s != NULL && len > 0 && s[len - 1] == '\n';

		free(s);
		if (done)
			return true;
		if (mono_ms() > end)
			return false;
		usleep(10000);
	}
}

static inline pid_t read_pid(struct run *r, const char *name)
{
	char *s;
	long v;

	assert_true(wait_file(r, name, 5000));
	s = slurp(r, name);
	s[strcspn(s, "\n")] = '\0';
	assert_int_equal(parse_long(s, 1, INT_MAX, &v), 0);
	free(s);
	return (pid_t)v;
}

/* Gone for good: no such process, or a zombie nobody will run again. */
static inline bool gone(pid_t pid)
{
	char path[64], *s, *p;
	bool z = false;

	if (kill(pid, 0) < 0 && errno == ESRCH)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	s = read_file(path, NULL);
	if (s == NULL)
		return true;
	p = strrchr(s, ')');
	z = p != NULL && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
	free(s);
	return z;
}

/* Runs after every test, passed or not: no ctrun child, workers or temp
 * files outlive it (a SIGKILLed ctrun leaves its workers to the guardian). */
static inline int teardown(void **state)
{
	char cmd[PATH_MAX];

	(void)state;
	if (rn.pid > 0) {
		kill(rn.pid, SIGKILL);
		waitpid(rn.pid, NULL, 0);
		rn.pid = 0;
	}
	if (rn.dir[0] != '\0') {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", rn.dir);
		if (system(cmd) != 0)
			return -1;
		rn.dir[0] = '\0';
	}
	return 0;
}
#endif

#ifdef CTRTEST_RDZV
/* ---- the rendezvous's ranks as processes (runner/net) -------------------
 * Real sockets on 127.0.0.1: each rank is a forked child that calls
 * rdzv_open and exits with its rdzv fail kind. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "netinfo.h"
#include "rendezvous.h"

/* The job's key, and another user's. */
static const uint8_t key[JOBKEY_LEN] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
static const uint8_t other_key[JOBKEY_LEN] = { 1, 2, 3, 4, 5, 6, 7, 8, 10 };

static inline long free_port(void)
{
	struct err e = { 0 };
	long port = 0;

	assert_int_equal(net_free_port(&port, &e), 0);
	return port;
}

static inline struct rdzv_opts opts(long port, long rank, long world, const char *job, int ms)
{
	return (struct rdzv_opts){ .addr = "127.0.0.1", .port = port, .rank = rank, .world = world,
				   .job = job, .key = key, .host = "testhost", .timeout_ms = ms };
}

/* A child that joins as (rank, world, job) with a key and exits with its
 * rdzv fail kind. */
static inline pid_t join_with(long port, long rank, long world, const char *job, int ms,
			      const uint8_t *k)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct rdzv r;
		struct err e = { 0 };
		struct rdzv_opts o = opts(port, rank, world, job, ms);

		o.key = k;
		rdzv_open(&r, &o, &e);
		if (e.msg[0] != '\0' && getenv("TEST_RDZV_VERBOSE") != NULL)
			fprintf(stderr, "rank %ld: %s\n", rank, e.msg);
		rdzv_close(&r);
		_exit((int)r.fail);
	}
	return pid;
}

/* The same with the job's key. */
static inline pid_t join(long port, long rank, long world, const char *job, int ms)
{
	return join_with(port, rank, world, job, ms, key);
}

static inline int reap(pid_t pid)
{
	int st = 0;

	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Connects to rank 0 at port (waiting until it listens). */
static inline int connect_rank0(long port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sa.sin_port = htons((uint16_t)port);
	for (int i = 0; connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && i < 500; i++)
		usleep(10000); /* until rank 0 listens */
	return fd;
}
#endif

#ifdef CTRTEST_APPTAINER
/* ---- the apptainer adapter's fixture (runner/container/rt) ----------------
 * A spec of a worker run of /images/pytorch.sif under apptainer 1.3.4 (the
 * releases the golden tests name below), and argv comparisons.  APP(s) is
 * the driver's own state (apptainer.h). */
#include "apptainer/apptainer.h"
#include "drivers.h"

#define APP(s) ((struct app_own *)(s)->own)

/* ctr_pick_runtime into the test's own rt, bin and e. */
#define PICK(want_, kind_, image_, have_)                                                     \
	ctr_pick_runtime(&(struct ctr_pick){ .want = want_, .kind = kind_, .image = image_,    \
					     .have = have_ },                                   \
			 &rt, bin, sizeof(bin), &e)

static const struct app_version apptainer134 __attribute__((unused)) = { APP_APPTAINER, 1, 3, 4 };
static const struct app_version sce41 __attribute__((unused)) = { APP_SINGULARITYCE, 4, 1, 0 };
static const struct app_version sce38 __attribute__((unused)) = { APP_SINGULARITYCE, 3, 8, 0 };
static const struct app_version sing342 __attribute__((unused)) = { APP_SINGULARITY, 3, 4, 2 };

static inline void spec_init(struct ctr_spec *s, const char *rt, const char *bin)
{
	memset(s, 0, sizeof(*s));
	s->rt = ctr_driver_named(rt);
	s->bin = bin;
	s->own = calloc(1, sizeof(struct app_own));
	assert_non_null(s->own);
	APP(s)->app = apptainer134;
	s->agent = true;
	s->image = "/images/pytorch.sif";
	s->kind = IMAGE_SIF;
	s->cwd = "/home/u/proj";
	s->rundir = "/tmp/ctrun-1000/run1";
	assert_int_equal(strv_push(&s->argv, "/.ctrun/agent"), 0);
	assert_int_equal(strv_push(&s->argv, "/.ctrun/spec"), 0);
}

static inline void add(struct ctr_spec *s, const char *src, const char *dst, bool ro)
{
	struct err e = { 0 };

	assert_int_equal(mounts_add(&s->mounts, src, dst, ro, false, &e), 0);
}

static inline void spec_free(struct ctr_spec *s)
{
	strv_free(&s->argv);
	mounts_free(&s->mounts);
	mounts_free(&APP(s)->driver);
	free(s->own);
	s->own = NULL;
}

static inline void assert_argv(const struct ctr_plan *p, const char *const *want)
{
	size_t n = 0;

	while (want[n] != NULL)
		n++;
	for (size_t i = 0; i < n && i < p->argv.n; i++)
		assert_string_equal(p->argv.v[i], want[i]);
	assert_int_equal(p->argv.n, n);
}

/* The position of ARG in the plan's argv (it must be there). */
static inline long at(const struct ctr_plan *p, const char *arg)
{
	long i = strv_find(&p->argv, arg);

	assert_true(i >= 0);
	return i;
}
#endif

#endif
