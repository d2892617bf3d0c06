/* imex.c - an IMEX channel request (see imex.h). */
#include "imex.h"

#include <string.h>

#include "util.h"

int imex_parse(const char *spec, const char *source, struct imex_req *out, struct err *e)
{
	const char *p = spec;

	memset(out, 0, sizeof(*out));
	out->source = source;
	if (spec == NULL || *spec == '\0' || strcmp(spec, "none") == 0 || strcmp(spec, "void") == 0)
		return 0;
	if (strcmp(spec, "all") == 0) {
		out->all = true;
		return 0;
	}
	while (*p != '\0') {
		size_t len = strcspn(p, ",");
		char id[32];
		const char *num = id;
		long v;

		if (len == 0 || len >= sizeof(id))
			return err_set(e, EXIT_USAGE, "%s='%s': an empty or overlong IMEX channel",
				       source, spec);
		memcpy(id, p, len);
		id[len] = '\0';
		if (strncmp(id, "channel", 7) == 0)
			num += 7;
		if (strspn(num, "0123456789") != strlen(num) ||
		    parse_long(num, 0, IMEX_CHANNEL_MAX, &v) < 0)
			return err_set(e, EXIT_USAGE, "%s='%s': '%s' is not an IMEX channel (0 to "
				       "%ld, channelN, all or none)", source, spec, id, IMEX_CHANNEL_MAX);
		if (out->n == IMEX_REQ_MAX)
			return err_set(e, EXIT_USAGE, "%s='%s': more than %d IMEX channels (use all)",
				       source, spec, IMEX_REQ_MAX);
		out->ids[out->n++] = v;
		p += len;
		if (*p == ',' && *++p == '\0')
			return err_set(e, EXIT_USAGE, "%s='%s': trailing comma", source, spec);
	}
	return 0;
}
