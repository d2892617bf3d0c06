/* pmifd.c - the step's PMI2 socket at descriptor 3 (see pmifd.h). */
#include "pmifd.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#define PMIFD 3

void pmifd_probe(struct pmifd *p)
{
	struct stat st;
	int fd;

	p->socket = fstat(PMIFD, &st) == 0 && S_ISSOCK(st.st_mode);
	p->reserved = false;
	if (fcntl(PMIFD, F_GETFD) >= 0)
		return;
	fd = open("/dev/null", O_RDWR);
	if (fd == PMIFD)
		p->reserved = true;
	else if (fd >= 0)
		close(fd); /* stdio closed: the number was not the first free one */
}

void pmifd_settle(const struct pmifd *p, bool want, bool quiet)
{
	int fd;

	if (!want || p->socket) {
		if (p->reserved)
			close(PMIFD);
		return;
	}
	if (!p->reserved) {
		fd = open("/dev/null", O_RDWR);
		if (fd >= 0 && fd != PMIFD) {
			dup2(fd, PMIFD);
			close(fd);
		}
	}
	if (!quiet)
		fprintf(stderr, "ctrun: PMI_FD: the step's PMI2 socket did not reach the container "
				"(the runtime closed descriptor 3): an MPI program here fails at its "
				"start; use --runtime oci or crun, srun --mpi=pmix, or "
				"srun --container-image (docs/slurm.md, MPI)\n");
}
