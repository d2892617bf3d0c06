/* mpi_allreduce.c - the MPI program of the mpi test image (build.sh mpi),
 * compiled in the image against Debian's Open MPI and MPICH.
 *
 * Every rank adds rank + 1 with MPI_Allreduce; each prints one line
 *     allreduce rank R size N host H sum S
 * and exits 0 when S is N(N+1)/2 and N is what Slurm started
 * (SLURM_NTASKS, when set): a task that missed the job's process
 * management interface runs as a singleton of size 1 and fails here. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	int rank, size, len, mine, sum = 0, rc = 0;
	char host[MPI_MAX_PROCESSOR_NAME];
	const char *ntasks = getenv("SLURM_NTASKS");

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Get_processor_name(host, &len);
	mine = rank + 1;
	MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	printf("allreduce rank %d size %d host %s sum %d\n", rank, size, host, sum);
	fflush(stdout);
	if (sum != size * (size + 1) / 2) {
		fprintf(stderr, "allreduce: rank %d: sum %d, expected %d\n", rank, sum, size * (size + 1) / 2);
		rc = 1;
	}
	if (ntasks != NULL && atoi(ntasks) != size) {
		fprintf(stderr, "allreduce: rank %d: world of %d, Slurm started %s tasks\n", rank, size, ntasks);
		rc = 1;
	}
	MPI_Finalize();
	return rc;
}
