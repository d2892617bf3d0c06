#!/bin/bash
# tag: every-slurm
# MPI's process-management interfaces reach the tasks in the container
# through the SPANK plugin (pyxis's tests/mpi.bats): with --mpi=pmix the
# step's PMIx server directory (PMIX_SERVER_TMPDIR, under slurmd's spool)
# is bound into the container and every task has its PMIX_RANK; with
# --mpi=pmi2 PMI_FD is a socket in the task and PMI_RANK/PMI_SIZE are set.
# (An MPI program's all-reduce needs an image with MPI: not here.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
. "$(dirname "$0")/spanklib.sh"
need_image BB busybox.sqsh
spank_cluster_up
cd "$TMPD"

pmix() {
	local out
	# Slurm builds mpi/pmix only where PMIx was found (Debian's slurm-wlm
	# has it; a source build needs --with-pmix).
	as_user srun --mpi=list 2>&1 | grep -qw pmix ||
		skip "this Slurm has no mpi/pmix plugin (srun --mpi=list); build it --with-pmix"
	out=$(as_user srun -N2 --ntasks-per-node=2 --mpi=pmix --container-image="$BB" sh -c \
		'd=${PMIX_SERVER_TMPDIR%/}; test -n "$d" && test -d "$d" && grep -q " $d " /proc/self/mounts && echo "$PMIX_RANK"')
	assert_eq "0;1;2;3;" "$(sort -n <<<"$out" | tr '\n' ';')" "PMIX_RANK of every task, its server directory bound"
}
behaviour "--mpi=pmix: the PMIx server directory is in the container" pmix

pmi2() {
	local out
	out=$(as_user srun -N2 --ntasks-per-node=2 --mpi=pmi2 --container-image="$BB" sh -c \
		'test -n "$PMI_FD" && readlink /proc/self/fd/$PMI_FD | grep -q socket && echo "$PMI_RANK $PMI_SIZE"')
	assert_eq "0 4;1 4;2 4;3 4;" "$(sort -n <<<"$out" | tr '\n' ';')" "PMI_RANK PMI_SIZE, PMI_FD a socket"
}
behaviour "--mpi=pmi2: PMI_FD is a socket in the container" pmi2
