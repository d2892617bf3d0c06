/* gpu_pin.c - what the drivers share of GPU pinning (see gpu_pin.h). */
#include "gpu_pin.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "strv.h"
#include "util.h"

int gpu_pin_driver_binds(const char *hook_path, const char *libdir, struct ctr_mounts *out,
			 struct err *e)
{
	char line[8192];
	int pfd[2], status = 0, rv = -1;
	FILE *f;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return err_sys(e, EXIT_CTRUN, "pipe");
	pid = fork();
	if (pid == 0) {
		char *argv[] = { "ctrun-hook", "driver-files", (char *)libdir, NULL };

		dup2(pfd[1], STDOUT_FILENO);
		execv(hook_path, argv);
		_exit(127);
	}
	close(pfd[1]);
	if (pid < 0) {
		close(pfd[0]);
		return err_sys(e, EXIT_CTRUN, "fork");
	}
	f = fdopen(pfd[0], "r");
	while (f != NULL && fgets(line, sizeof(line), f) != NULL) {
		char *sp = strchr(line, ' ');

		line[strcspn(line, "\n")] = '\0';
		if (sp == NULL || strchr(sp + 1, ' ') != NULL)
			continue;
		*sp = '\0';
		if (line[0] != '/' || sp[1] != '/')
			continue;
		if (mounts_add(out, line, sp + 1, true, true, e) < 0)
			goto out;
	}
	rv = 0;
out:
	if (f != NULL)
		fclose(f);
	else
		close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (rv == 0 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
		rv = err_set(e, EXIT_CTRUN, "%s driver-files failed (status %d)", hook_path, status);
	return rv;
}

int gpu_pin_nodes(struct ctr_devices *out, bool *present, struct err *e)
{
	DIR *d = opendir("/dev");
	struct dirent *de;

	*present = false;
	if (d == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		char path[PATH_MAX];
		struct stat st;
		struct ctr_device *v;

		if (strncmp(de->d_name, "nvidia", 6) != 0 ||
		    xsnprintf(path, sizeof(path), "/dev/%s", de->d_name) < 0 ||
		    stat(path, &st) < 0 || !S_ISCHR(st.st_mode))
			continue;
		if (strcmp(de->d_name, "nvidiactl") == 0 ||
		    (de->d_name[6] >= '0' && de->d_name[6] <= '9'))
			*present = true;
		if (out == NULL)
			continue;
		v = realloc(out->v, (out->n + 1) * sizeof(*v));
		if (v == NULL) {
			closedir(d);
			return err_sys(e, EXIT_CTRUN, "devices");
		}
		out->v = v;
		v = &out->v[out->n];
		v->path = strdup(path);
		v->type = 'c';
		v->major = major(st.st_rdev);
		v->minor = minor(st.st_rdev);
		v->mode = st.st_mode & 07777;
		if (v->path == NULL) {
			closedir(d);
			return err_sys(e, EXIT_CTRUN, "devices");
		}
		out->n++;
	}
	closedir(d);
	return 0;
}

void gpu_pin_nodes_free(struct ctr_devices *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->v[i].path);
	free(d->v);
	d->v = NULL;
	d->n = 0;
}
