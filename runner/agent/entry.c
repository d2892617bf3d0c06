/* entry.c - the image's entrypoint inside the container (see entry.h). */
#include "entry.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

/* The first entrypoint candidate that is a regular file, NULL if none;
 * *via_sh when it is to run as `/bin/sh FILE` (enroot's /etc/rc is
 * sourced by a shell and has neither a #! line nor the execute bit). */
const char *entry_find(const struct agent_spec *s, bool *via_sh)
{
	for (size_t i = 0; i < s->entry.n; i++) {
		struct stat st;
		char head[2] = "";
		int fd;

		if (stat(s->entry.v[i], &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		fd = open(s->entry.v[i], O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (fd >= 0) {
			if (read(fd, head, 2) != 2)
				head[0] = '\0';
			close(fd);
		}
		*via_sh = access(s->entry.v[i], X_OK) < 0 || head[0] != '#' || head[1] != '!';
		return s->entry.v[i];
	}
	return NULL;
}

/* A worker's command line: through the entrypoint when there is one, or
 * the entrypoint alone when it is the image's default command (F). */
int entry_argv(const struct agent_spec *s, const char *entry, bool via_sh, char *const *argv,
	       struct strv *out)
{
	if (entry != NULL && ((via_sh && strv_push(out, "/bin/sh") < 0) ||
			      strv_push(out, entry) < 0))
		return -1;
	return entry != NULL && s->entry_default ? 0 : strv_extend(out, argv);
}
