#!/bin/bash
# GPU pinning through ctrun itself: `ctrun --image DIR --runtime oci` on a
# 4-GPU node whose GPUs 0,1 another job holds.  ctrun's OCI adapter puts
# ctrun-hook into config.json; real runc runs the container.
#  node mode (srun --gpus-per-node=2, one task): the container has exactly
#    /dev/nvidia2, /dev/nvidia3 (+ nvidiactl) and CUDA_VISIBLE_DEVICES=0,1;
#  task mode (srun -n2 --gpus-per-node=2): each task's container has
#    exactly its GPU (task 0: 2, task 1: 3) and CUDA_VISIBLE_DEVICES=0.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/hooklib.sh"
hook_requirements
ngpus=${CTRUN_CLUSTER_GPUS:-4}
((ngpus >= 4)) || fail "the test cluster has $ngpus GPUs per node; run.sh gives it 4 (CTRUN_CLUSTER_GPUS)"
hold_gpus 2
image=/var/cache/ctrun-tests/images/busybox-rootfs
[ -d "$image" ] || { make_rootfs "$TMPD/image"; image=$TMPD/image; }
cd "$TMPD"

# ranks RANK: the nodes and variables rank RANK's container printed.
ranks() {
	sed -n "s/^\[rank$1\]: //p" "$TMPD/out"
}

# expect RANK GPUS CUDA: rank RANK's container has exactly GPUS.
expect() {
	local want="" g
	for g in $2; do want+="node /dev/nvidia$g c3 $(printf %x "$g");"; done
	want+="node /dev/nvidiactl c3 ff;"
	assert_eq "$want" "$(ranks "$1" | grep '^node /dev/nvidia[0-9c]' | sort -V | tr '\n' ';')" \
		"device nodes in rank $1's container"
	assert_eq "CUDA_VISIBLE_DEVICES=$3" "$(ranks "$1" | grep '^CUDA_VISIBLE_DEVICES=')" \
		"CUDA_VISIBLE_DEVICES in rank $1's container"
}

node_mode() {
	run_rc srun -N1 -w "${NODES[0]}" --gpus-per-node=2 "$CTRUN" --prefix --image "$image" --runtime oci \
		--nproc-per-node 1 --no-python -- sh -c "$REPORT" >"$TMPD/out" 2>&1
	cat "$TMPD/out"
	assert_eq 0 "$rc" "ctrun --image in node mode"
	expect 0 "2 3" "0,1"
}

task_mode() {
	run_rc srun -N1 -w "${NODES[0]}" -n2 --gpus-per-node=2 "$CTRUN" --prefix --image "$image" --runtime oci \
		--no-python -- sh -c "$REPORT" >"$TMPD/out" 2>&1
	cat "$TMPD/out"
	assert_eq 0 "$rc" "ctrun --image in task mode"
	expect 0 2 0
	expect 1 3 0
}

behaviour "node mode: the container has exactly GPUs 2,3, CUDA_VISIBLE_DEVICES=0,1" node_mode
behaviour "task mode: each task's container has exactly its GPU, CUDA_VISIBLE_DEVICES=0" task_mode
