/* sqcompress.c - a squashfs compressor named in a setting ("zstd:3", "lz4",
 * "none"), for the streamed writer and for mksquashfs (see sqimage.h). */
#include "sqimage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *name;
	enum sq_comp comp;
	int min, max; /* levels; 0, 0: none */
} comps[] = {
	{ "gzip", SQ_GZIP, 1, 9 },
	{ "lz4", SQ_LZ4, 0, 0 },
	{ "zstd", SQ_ZSTD, 1, 22 },
	{ "xz", SQ_XZ, 0, 9 },
};

int sqimage_comp_parse(const char *spec, const char *what, struct sqimage_opts *o,
		       struct err *e)
{
	const char *colon = strchr(spec, ':');
	size_t len = colon != NULL ? (size_t)(colon - spec) : strlen(spec);

	memset(o, 0, sizeof(*o));
	if (strcmp(spec, "none") == 0) {
		/* Data as it is; the tables (a few MB) still gzip'd, as mksquashfs -noD -noF. */
		o->comp = SQ_GZIP;
		o->level = 1;
		o->raw_data = true;
		return 0;
	}
	for (size_t i = 0; i < sizeof(comps) / sizeof(comps[0]); i++) {
		char *end;
		long v;

		if (strlen(comps[i].name) != len || strncmp(spec, comps[i].name, len) != 0)
			continue;
		o->comp = comps[i].comp;
		if (colon == NULL)
			return 0;
		if (comps[i].comp == SQ_LZ4) {
			if (strcmp(colon + 1, "hc") != 0)
				break;
			o->level = 1;
			return 0;
		}
		v = strtol(colon + 1, &end, 10);
		if (colon[1] == '\0' || *end != '\0' || v < comps[i].min || v > comps[i].max)
			return err_set(e, EXIT_USAGE, "%s '%s': %s levels are %d to %d", what, spec,
				       comps[i].name, comps[i].min, comps[i].max);
		/* xz's level 0 is a level; 0 stands for "the default" in opts. */
		o->level = comps[i].comp == SQ_XZ && v == 0 ? -1 : (int)v;
		return 0;
	}
	return err_set(e, EXIT_USAGE, "%s '%s': expected gzip[:1-9], lz4[:hc], zstd[:1-22], "
		       "xz[:0-9] or none", what, spec);
}

const char *sqimage_comp_name(const struct sqimage_opts *o, char *buf, size_t size)
{
	const char *name = "gzip";

	if (o->raw_data)
		return "none";
	for (size_t i = 0; i < sizeof(comps) / sizeof(comps[0]); i++)
		if (comps[i].comp == o->comp)
			name = comps[i].name;
	if (o->comp == SQ_LZ4 && o->level > 0)
		snprintf(buf, size, "lz4:hc");
	else if (o->level != 0)
		snprintf(buf, size, "%s:%d", name, o->level < 0 ? 0 : o->level);
	else
		snprintf(buf, size, "%s", name);
	return buf;
}

size_t sqimage_comp_args(const struct sqimage_opts *o, char *level, size_t size,
			 const char **argv)
{
	size_t n = 0;

	if (o->raw_data) {
		argv[n++] = "-noD";
		argv[n++] = "-noF";
		return n;
	}
	argv[n++] = "-comp";
	argv[n++] = o->comp == SQ_LZ4 ? "lz4" : o->comp == SQ_ZSTD ? "zstd"
						  : o->comp == SQ_XZ ? "xz" : "gzip";
	if (o->comp == SQ_LZ4 && o->level > 0) {
		argv[n++] = "-Xhc";
	} else if ((o->comp == SQ_GZIP || o->comp == SQ_ZSTD) && o->level > 0) {
		snprintf(level, size, "%d", o->level);
		argv[n++] = "-Xcompression-level";
		argv[n++] = level;
	}
	/* mksquashfs's xz has no level: its default (what xz:N means there). */
	return n;
}
