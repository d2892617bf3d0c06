/* cmd_pull.c - `ctrun pull REF [-o FILE.sqsh]` (--image docker://REF is
 * runner/deliver/resolve.c's). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "deliver.h"
#include "registry.h"
#include "util.h"

static const char pull_usage[] =
	"usage: ctrun pull REF [-o FILE.sqsh]   REF: docker://[HOST[:PORT]/]REPO[:TAG|@sha256:DIGEST] "
	"or [USER@][HOST#]REPO[:TAG]";

/* FILE as a copy of the store's image (tmp + rename: never half a file). */
static int copy_out(const char *from, const char *to, struct err *e)
{
	char tmp[PATH_MAX], buf[1 << 16];
	int in, out, rv = -1;
	ssize_t n;

	if (xsnprintf(tmp, sizeof(tmp), "%s.ctrun-tmp.%ld", to, (long)getpid()) < 0)
		return err_set(e, EXIT_USAGE, "-o %s: path too long", to);
	in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return err_sys(e, EXIT_CTRUN, "%s", from);
	out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (out < 0) {
		err_sys(e, EXIT_CTRUN, "-o %s", to);
		close(in);
		return -1;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write_all(out, buf, (size_t)n) < 0)
			break;
	if (n != 0 || fsync(out) < 0)
		err_sys(e, EXIT_CTRUN, "-o %s", to);
	else if (rename(tmp, to) < 0)
		err_sys(e, EXIT_CTRUN, "-o %s", to);
	else
		rv = 0;
	close(in);
	close(out);
	if (rv < 0)
		unlink(tmp);
	return rv;
}

int cmd_pull(struct options *o, struct err *e)
{
	const char *ref = NULL, *out = NULL;
	struct registry_cfg c;
	struct pulled p;
	struct stat st;

	for (size_t i = 0; i < o->command.n; i++) {
		const char *a = o->command.v[i];

		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			printf("%s\n", pull_usage);
			return 0;
		}
		if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
			if (++i == o->command.n)
				return err_set(e, EXIT_USAGE, "%s needs a file (%s)", a, pull_usage);
			out = o->command.v[i];
		} else if (a[0] == '-' && a[1] != '\0') {
			return err_set(e, EXIT_USAGE, "pull: unknown option '%s' (%s)", a, pull_usage);
		} else if (ref == NULL) {
			ref = a;
		} else {
			return err_set(e, EXIT_USAGE, "pull: one reference at a time (%s)", pull_usage);
		}
	}
	if (ref == NULL)
		return err_set(e, EXIT_USAGE, "pull: no reference (%s)", pull_usage);
	if (out != NULL && lstat(out, &st) == 0)
		return err_set(e, EXIT_USAGE, "pull: -o %s exists already (remove it, or name "
			       "another file)", out);
	image_registry_cfg(o, &c);
	if (registry_pull(&c, ref, &p, e) < 0)
		return -1;
	if (out != NULL) {
		if (copy_out(p.sqsh, out, e) < 0)
			return -1;
		printf("%s\n", out);
	} else {
		printf("%s\n", p.sqsh);
	}
	if (!o->quiet)
		fprintf(stderr, "ctrun: %s: %s (%s)\n", p.ref, p.digest,
			p.fresh ? "pulled" : p.offline ? "from the store, offline" : "up to date");
	return 0;
}
