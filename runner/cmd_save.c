/* cmd_save.c - `ctrun save NAME -o FILE.sqsh`: a named container (--name,
 * images/cache/named.h) written as a new image: the image it was made from plus
 * its kept changes, as --save does at the end of a run (container/save.c),
 * e.g. after an interactive `ctrun shell --name dev`.  Run it on the node
 * that holds the container (named containers are node-local). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "container.h"
#include "util.h"

extern char **environ;

static const char save_usage[] =
	"usage: ctrun [--runtime RT] save NAME -o FILE.sqsh   (NAME: a container kept with "
	"--name on this node; ctrun cache list shows them)";

static int set(char **field, const char *value, struct err *e)
{
	free(*field);
	*field = strdup(value);
	return *field == NULL ? err_sys(e, EXIT_CTRUN, "save") : 0;
}

int cmd_save(struct options *o, struct err *e)
{
	char dir[4096], image[4096], host[256] = "localhost";
	const char *name = NULL, *out = NULL;
	struct cache_cfg cfg;
	struct ctr_setup c;
	struct topo t;
	int rv = -1;

	for (size_t i = 0; i < o->command.n; i++) {
		const char *a = o->command.v[i];

		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			printf("%s\n", save_usage);
			return 0;
		}
		if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
			if (++i == o->command.n)
				return err_set(e, EXIT_USAGE, "%s needs a file (%s)", a, save_usage);
			out = o->command.v[i];
		} else if (a[0] == '-') {
			return err_set(e, EXIT_USAGE, "save: unknown option '%s' (%s)", a, save_usage);
		} else if (name != NULL) {
			return err_set(e, EXIT_USAGE, "save: one container at a time (%s)", save_usage);
		} else {
			name = a;
		}
	}
	if (name == NULL || out == NULL)
		return err_set(e, EXIT_USAGE, "save: %s (%s)", name == NULL ? "no NAME" : "no -o FILE",
			       save_usage);
	if (ctr_save_check(out, e) < 0 || ctr_cache_cfg(o, &cfg, dir, sizeof(dir), e) < 0)
		return -1;
	cfg.lookup = NULL;
	if (named_image(&cfg, name, image, sizeof(image), e) < 0)
		return -1;
	if (set(&o->image, image, e) < 0 || set(&o->name, name, e) < 0 || set(&o->save, out, e) < 0 ||
	    set(&o->nv, "false", e) < 0)
		return -1;
	o->name_reset = false;
	o->dry_run = false;
	o->mode = MODE_STANDALONE;
	if (gethostname(host, sizeof(host) - 1) == 0)
		host[strcspn(host, ".")] = '\0';
	if (topo_detect(o, environ, host, 0, &t, e) < 0)
		return -1;
	if (ctr_setup_init(&c, o, &t, environ, false, e) == 0) {
		rv = ctr_save(&c, out, o->cache_compression, o->quiet, e) < 0 ? -1 : 0;
		ctr_setup_free(&c);
	}
	topo_free(&t);
	return rv;
}
