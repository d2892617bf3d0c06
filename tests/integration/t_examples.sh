#!/bin/bash
# Every example of examples/ runs as a user would run it (sbatch FILE, the
# salloc shell through a real pseudo-terminal), on the test cluster, with
# only what the file reads from the environment set (CTRUN, EXAMPLES, OUT,
# images; NV= since the nodes' GPUs are fakes), and gives the result the
# file promises: the same weights on every rank, the check table, the bus
# bandwidth table per node count, a preempted run resumed after requeue.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
need_image BB busybox.sqsh
need_image TORCH torch.sqsh
need_image TORCHSIF torch.sif
cd "$TMPD"
ex=$CTRUN_REPO/examples
export CTRUN EXAMPLES=$ex PYTHON=$PY CTRUN_CACHE_DIR=$CTRUN_CLUSTER_SCRATCH/cache-$$
run_job() { # name file [sbatch options...]: sbatch --wait, its output in name.out
	local name=$1 file=$2
	shift 2
	run_rc sbatch --wait --quiet -o "$TMPD/$name.out" "$@" "$ex/$file"
	cat "$TMPD/$name.out"
	assert_eq 0 "$rc" "sbatch $file"
}
same_weights() { # dir world: every rank's file, one digest
	assert_eq "$2" "$(ls "$1"/rank-*.json | wc -l)" "rank files in $1"
	assert_eq 1 "$(grep -ho '"weights": "[0-9a-f]*"' "$1"/rank-*.json | sort -u | wc -l)" "digests in $1"
}

task_per_gpu() {
	mkdir -p t1
	OUT=$TMPD/t1 run_job t1 task-per-gpu.sbatch
	check_ddp t1 2 2
}
behaviour "task-per-gpu: one Slurm task per worker" task_per_gpu

node_launcher() {
	mkdir -p t2
	OUT=$TMPD/t2 run_job t2 node-launcher.sbatch
	check_ddp t2 2 2
}
behaviour "node-launcher: one task per node, a worker per GPU of the task" node_launcher

mp_spawn() {
	mkdir -p t3
	OUT=$TMPD/t3 run_job t3 mp-spawn.sbatch
	same_weights t3 4
	grep -q '"world": 4, "node": 1, "nprocs": 2' t3/rank-3.json || fail "rank 3: $(cat t3/rank-3.json)"
}
behaviour "mp-spawn: the script spawns one process per GPU of the node" mp_spawn

enroot_sqsh() {
	local rt n
	mkdir -p t4 && chmod 777 t4
	rt=oci
	if [ -x /opt/enroot/bin/enroot ]; then rt=enroot; fi
	PATH=/opt/enroot/bin:$PATH CTRUN_NV=false RUNTIME=$rt IMAGE=$TORCH OUT=$TMPD/t4 run_job t4 enroot-sqsh.sbatch
	check_ddp t4 2 2
	for n in "${NODES[@]}"; do
		[ -n "$("$CLUSTER" exec "$n" sh -c "ls -A '$CTRUN_CACHE_DIR' 2>/dev/null")" ] ||
			fail "no node cache on $n after enroot-sqsh ($rt)"
	done
}
behaviour "enroot-sqsh: the node cache is created on first use" enroot_sqsh

apptainer_sif() {
	local rt
	mkdir -p t5 data
	rt=oci
	if [ -x /opt/singularity/bin/singularity ]; then rt=singularity; fi
	PATH=/opt/singularity/bin:$PATH NV= RUNTIME=$rt SIF=$TORCHSIF DATA=$TMPD/data OUT=$TMPD/t5 \
		run_job t5 apptainer.sbatch
	check_ddp t5 2 2
}
behaviour "apptainer: a SIF with binds of the data and the home directory" apptainer_sif

salloc_shell() {
	local type
	type='echo answer=$((6*7)); [ -t 0 ] && echo tty=yes; echo host=$(hostname); exit 3\n'
	IMAGE=$BB "$PY" "$CTRUN_REPO/tests/integration/ptyrun.py" "$type" salloc -N1 "$ex/salloc-shell.sh" > t6.out
	cat t6.out
	grep -q '^answer=42' t6.out || fail "salloc-shell: no output of the typed command"
	grep -q '^tty=yes' t6.out || fail "salloc-shell: no terminal in the container"
	grep -q '^status 3$' t6.out || fail "salloc-shell: exit status: $(tail -1 t6.out)"
}
behaviour "salloc-shell: an interactive shell in the container on the first node" salloc_shell

preflight() {
	mkdir -p t7
	OUT=$TMPD/t7 run_job t7 preflight.sbatch
	check_ddp t7 2 2
	grep -q '^rendezvous: 4 of 4 ranks met' t7.out && grep -qx 'check: ok' t7.out ||
		fail "preflight: no check verdict in the output"
}
behaviour "preflight: ctrun check, then the training" preflight

bench_sweep() {
	NPROC=1 MINBYTES=1M MAXBYTES=4M run_job t8 bench-sweep.sbatch
	grep -q '^# 1 node(s)' t8.out && grep -q '^# 2 node(s)' t8.out || fail "bench-sweep: node counts"
	assert_eq 2 "$(grep -cE '^ +4194304 ' t8.out)" "4 MiB rows, one per node count"
	# The #wrong columns (out of place, in place) of every row: 0.
	awk '$1 ~ /^[0-9]+$/ && NF == 13 && ($9 != 0 || $13 != 0) { bad = 1 } END { exit bad }' t8.out ||
		fail "bench-sweep: a row with wrong data"
}
behaviour "bench-sweep: a bandwidth table per node count" bench_sweep

preemptible() {
	local job k
	mkdir -p ck
	job=$(CKPT=$TMPD/ck EPOCHS=30 sbatch --parsable -o "$TMPD/t9.out" "$ex/preemptible.sbatch")
	wait_lines ck/log 3 120 || { cat t9.out; fail "preemptible: no epochs"; }
	scancel --batch --signal=USR1 "$job"
	wait_job_gone "$job" 300 || { cat t9.out; fail "preemptible: job $job did not finish"; }
	cat t9.out ck/log
	grep -q '^run 0 of job' t9.out && grep -q '^run 1 of job' t9.out || fail "preemptible: not run twice"
	k=$(sed -n 's/.*checkpoint at epoch \([0-9]*\).*/\1/p' t9.out | head -1)
	[ -n "$k" ] || fail "preemptible: no checkpoint"
	grep -q "resumed at epoch $k\$" t9.out || fail "preemptible: not resumed at epoch $k"
	grep -q 'done: 30 epochs' t9.out || fail "preemptible: the resumed run did not finish"
	assert_eq 30 "$(sort -u ck/log | wc -l)" "epochs run over both runs"
}
behaviour "preemptible: USR1, checkpoint, requeue, resume" preemptible

# After every example, pass or fail.
no_containers() { assert_no_containers; }
behaviour "no container left by the examples" no_containers
