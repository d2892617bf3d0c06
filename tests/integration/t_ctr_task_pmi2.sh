#!/bin/bash
# tag: every-slurm
# images: mpi
# srun --mpi=pmi2 through `ctrun --image` in task mode (a container per
# task): slurmstepd gives each task its PMI2 socket as PMI_FD, and ctrun
# passes it into the task's container as descriptor 3 (PMI_FD=3), which
# runc and crun keep only when --preserve-fds names it.  Each worker opens
# a real PMI exchange with slurmstepd on it: a PMI-1 style init, which
# Slurm's pmi2 agent answers "cmd=response_to_init rc=0 pmi_version=2
# pmi_subversion=0" (src/plugins/mpi/pmi2/agent.c, _handle_pmi1_init).
# Under every runtime installed here, as the unprivileged test user.  The
# test machine's enroot is built without INHERIT_FDS (its switchroot closes
# every descriptor past stderr; NVIDIA's packages define it): there the
# agent says so in one line and descriptor 3 is /dev/null, so PMI's first
# read ends (an MPI program fails at its start, not as a singleton) and a
# program that does not use PMI runs (a site's MpiDefault=pmi2).
# Then a real MPI program: MPICH's all-reduce (tests/images/mpi_allreduce.c
# in the mpi test image) between 2 tasks of one node, each in its own
# container.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
need_image BBDIR busybox-rootfs
need_image MPI mpi.sqsh
user=$("$CTRUN_REPO/tests/cluster/ensure-user.sh")
cd "$TMPD"
rt_rows_setup "$user"
# gzip and no device nodes: Singularity 3.4 reads no other compression and
# cannot unpack a device node as a user.
mksquashfs "$BBDIR" u/bb.sqsh -comp gzip -noappend -quiet -no-progress -e dev > /dev/null
chmod 644 u/bb.sqsh

exchange='test -S "/proc/self/fd/$PMI_FD" || echo "PMI_FD=$PMI_FD: no socket" >&2
printf "cmd=init pmi_version=2 pmi_subversion=0\n" >&"$PMI_FD"
read -r l <&"$PMI_FD" || l="no answer from $(readlink "/proc/self/fd/$PMI_FD")"
echo "$PMI_FD $PMI_RANK $PMI_SIZE $l"'

pmi2_step() { # RUNTIME [CTRUN OPTION...]: 2 nodes x 2 tasks, each in a container of its own
	local rt=$1
	shift
	as_user srun -N2 --ntasks-per-node=2 --mpi=pmi2 "$CTRUN" "$@" --no-prefix --runtime "$rt" \
		--image "$TMPD/u/bb.sqsh" sh -c "$exchange"
}

passes() { # RUNTIME
	local out want=""
	out=$(pmi2_step "$1" -q)
	for r in 0 1 2 3; do want+="3 $r 4 cmd=response_to_init rc=0 pmi_version=2 pmi_subversion=0;"; done
	assert_eq "$want" "$(sort -k2n <<<"$out" | tr '\n' ';')" \
		"PMI_FD, PMI_RANK, PMI_SIZE and slurmstepd's answer on PMI_FD in every task's container"
}

lost() { # RUNTIME: a runtime that closes inherited descriptors
	local n want=""
	run_rc pmi2_step "$1" > out 2> err
	cat out err
	assert_eq 0 "$rc" "srun's exit status (the command runs)"
	n=$(grep -c "^ctrun: PMI_FD: the step's PMI2 socket did not reach the container" err)
	assert_eq 4 "$n" "tasks that said the PMI2 socket did not reach their container"
	for r in 0 1 2 3; do want+="3 $r 4 no answer from /dev/null;"; done
	assert_eq "$want" "$(sort -k2n out | tr '\n' ';')" "what PMI_FD is in each task's container"
}

for rt in oci crun charliecloud singularity; do
	behaviour "$rt: each task's container has slurmstepd's PMI2 socket as PMI_FD" with_rt "$rt" passes
done
behaviour "enroot: one line says the socket is lost where it closes the descriptor" with_rt enroot lost

# On one node: across the test nodes MPICH 4.0.2 talks TCP (UCX), and its
# MPI_Finalize can hang there (a known MPICH bug, fixed in 4.2; t_spank_mpi
# and docs/slurm.md, MPI).  A task that missed the step's PMI would run as a
# singleton (size 1, sum 1).
mpich() {
	local out lines
	out=$(as_user timeout -k 10 120 srun -N1 --ntasks-per-node=2 --mpi=pmi2 "$CTRUN" -q \
		--no-prefix --image "$MPI" allreduce-mpich)
	echo "$out"
	lines=$(grep '^allreduce ' <<<"$out" | awk '{print $3, $5, $9}' | sort -n | tr '\n' ';')
	assert_eq "0 2 3;1 2 3;" "$lines" "rank, world size and all-reduced sum (1+2) of both tasks"
}
behaviour "MPICH's all-reduce under --mpi=pmi2 through ctrun --image, 2 tasks in containers of their own" mpich
behaviour "no container left" assert_no_containers
