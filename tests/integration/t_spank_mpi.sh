#!/bin/bash
# tag: every-slurm
# images: mpi
# MPI through the SPANK plugin, as pyxis runs it (pyxis's tests/mpi.bats):
# with --mpi=pmix the step's PMIx server directory (PMIX_SERVER_TMPDIR,
# under slurmd's spool) is bound into the node's container and every task
# has its PMIX_RANK; with --mpi=pmi2 PMI_FD is a socket in the task.  Then a
# real MPI program, an all-reduce in the mpi test image (tests/images/
# build.sh mpi): Debian's Open MPI, a PMIx client, 2 nodes x 2 tasks with
# --mpi=pmix through --container-image and through `ctrun --image` in task
# mode (a container per task); Debian's MPICH, a PMI2 client, with
# --mpi=pmi2 through --container-image on one node (why: below).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
. "$(dirname "$0")/spanklib.sh"
need_image BB busybox.sqsh
need_image MPI mpi.sqsh
spank_cluster_up
cd "$TMPD"

# Slurm builds mpi/pmix only where PMIx was found (Debian's slurm-wlm has it;
# a source build needs --with-pmix).
need_pmix() {
	as_user srun --mpi=list 2>&1 | grep -qw pmix ||
		skip "this Slurm has no mpi/pmix plugin (srun --mpi=list); build it --with-pmix"
}

pmix() {
	local out
	need_pmix
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

# check_allreduce OUT: the all-reduce's lines (mpi_allreduce.c: "allreduce
# rank R size N host H sum S", after ctrun's "[rankN]: " prefix in task mode)
# of a step of $RANKS tasks on $HOSTS nodes (a row may set them; 4 on 2, a
# 2 x 2 step, unless it does): ranks 0..RANKS-1 of one world, on that many
# nodes, each with the sum of rank+1 over the world (1+2+3+4 for 4).  A task
# that missed the step's PMI runs as a singleton (size 1, sum 1).
check_allreduce() {
	local lines got want="" r hosts n=${RANKS:-4}
	lines=$(sed -n 's/^\(\[rank[0-9]*\]: \)\{0,1\}\(allreduce .*\)/\2/p' <<<"$1")
	got=$(awk '{print $3, $5, $9}' <<<"$lines" | sort -n | tr '\n' ';')
	for ((r = 0; r < n; r++)); do want+="$r $n $((n * (n + 1) / 2));"; done
	assert_eq "$want" "$got" "rank, world size and all-reduced sum of every task"
	hosts=$(awk '{print $7}' <<<"$lines" | sort -u | wc -l)
	assert_eq "${HOSTS:-2}" "$hosts" "nodes the ranks ran on"
}

# allreduce CMD...: CMD (an srun of the all-reduce) as the test user exits 0
# and its output passes check_allreduce.
allreduce() {
	run_rc as_user "$@" >"$TMPD/out" 2>"$TMPD/err"
	[ "$rc" = 0 ] || { cat "$TMPD/out" "$TMPD/err" >&2; fail "$* exited $rc"; }
	check_allreduce "$(cat "$TMPD/out")"
}

openmpi_pmix() {
	need_pmix
	allreduce srun -N2 --ntasks-per-node=2 --mpi=pmix --container-image="$MPI" allreduce-openmpi
}
behaviour "--mpi=pmix: Open MPI's all-reduce across 2 nodes x 2 tasks in the container" openmpi_pmix

# MPICH (Debian's 4.0.2, ch4:ucx, a PMI2 client) with --mpi=pmi2, on one
# node (2 tasks, UCX's shared memory between them): across these test nodes
# UCX's only transport is TCP, and MPICH 4.0.2's MPI_Finalize hangs 1 run in
# 3 to 6 with 2 tasks per node and, on a busy machine, about 1 in 30 with
# one (it waits in the PMI2 barrier while a peer still needs it to
# acknowledge UCX's TCP flush; docs/slurm.md, MPI).  The timeout turns a
# hang into this row's failure.
mpich_pmi2() {
	local RANKS=2 HOSTS=1
	allreduce timeout -k 10 120 srun -N1 --ntasks-per-node=2 --mpi=pmi2 --container-image="$MPI" allreduce-mpich
}
behaviour "--mpi=pmi2: MPICH's all-reduce, 1 node x 2 tasks in the container" mpich_pmi2

# A container per task: ctrun turns Open MPI's shared-memory transport off
# (workerenv.c: OMPI_MCA_btl=^vader; with it every rank segfaults).
ctrun_task_pmix() {
	need_pmix
	allreduce srun -N2 --ntasks-per-node=2 --mpi=pmix "$CTRUN" -q --image "$MPI" allreduce-openmpi
}
behaviour "--mpi=pmix: Open MPI's all-reduce through ctrun --image in task mode" ctrun_task_pmix
behaviour "no run directory is left" assert_no_rundirs
