/* fuzz_cdi.c - libFuzzer target for CDI spec files and device names
 * (devices/cdispec.c, cdiyaml.c, cdiname.c).  The first byte picks: even,
 * the rest is a spec (byte 1's low bit: YAML, else JSON); odd, a device
 * name.  A refused input gets one line with the right exit code; an
 * accepted spec has a valid kind, devices with valid names and hook paths
 * that are absolute; an accepted name formats back to itself. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdispec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_edits(const struct cdi_edits *d)
{
	for (size_t i = 0; i < d->nhooks; i++)
		if (d->hooks[i].path[0] != '/' || d->hooks[i].stage >= CDI_STAGES)
			abort();
	for (size_t i = 0; i < d->env.n; i++)
		if (strchr(d->env.v[i], '=') == NULL || d->env.v[i][0] == '=')
			abort();
	for (size_t i = 0; i < d->nnodes; i++)
		if (d->nodes[i].path[0] == '\0')
			abort();
}

static void spec(const char *s, size_t len, bool yaml)
{
	struct cdi_spec sp;
	struct err e = { 0 };

	if (cdi_spec_parse(s, len, yaml, "f", &sp, &e) < 0) {
		if (strchr(e.msg, '\n') != NULL || (e.code != EXIT_USAGE && e.code != EXIT_CTRUN))
			abort();
		return;
	}
	if (cdi_vendor_class_invalid(sp.vendor) != NULL ||
	    cdi_vendor_class_invalid(sp.class) != NULL || sp.ndevs == 0)
		abort();
	check_edits(&sp.edits);
	for (size_t i = 0; i < sp.ndevs; i++) {
		if (cdi_device_name_invalid(sp.devs[i].name) != NULL)
			abort();
		check_edits(&sp.devs[i].edits);
	}
	cdi_spec_free(&sp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s, back[3 * CDI_NAME_MAX];
	struct cdi_name n;
	struct err e = { 0 };

	if (size < 2)
		return 0;
	s = malloc(size);
	memcpy(s, data + 2, size - 2);
	s[size - 2] = '\0';
	if (data[0] % 2 == 0) {
		spec(s, size - 2, data[1] & 1);
	} else if (cdi_name_parse(s, &n, &e) < 0) {
		if (strchr(e.msg, '\n') != NULL || e.code != EXIT_USAGE)
			abort();
	} else {
		snprintf(back, sizeof(back), "%s/%s=%s", n.vendor, n.class, n.name);
		if (strcmp(back, s) != 0)
			abort();
	}
	free(s);
	return 0;
}
