#!/bin/bash
# tag: every-slurm
# Task mode: one container per Slurm task, each with exactly its one GPU.
#  1. `srun -n2 --gpus-per-task=1` next to a job holding GPUs 0,1: Slurm
#     gives task 0 GPU 2 and task 1 GPU 3; `ctrun hooks configure` in each
#     task pins that GPU (as ctrun's OCI adapter does), runc runs it.
#  2. `srun -n2 --gpus-per-node=2`: both tasks see GPUs 2,3 and only the
#     hook decides, as under podman's hooks.d: the bundle carries the
#     org.ctrun.enabled annotation, the hook and the task's Slurm variables,
#     nothing else.  SLURM_LOCALID picks: task 0 gets 2, task 1 gets 3, and
#     the hook's own v1 device-cgroup rules let each open its node (the
#     bundle's runc-spec default denies every device).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/hooklib.sh"
hook_requirements
export HOOK TMPD CTRUN
ngpus=${CTRUN_CLUSTER_GPUS:-4}
((ngpus >= 4)) || fail "the test cluster has $ngpus GPUs per node; run.sh gives it 4 (CTRUN_CLUSTER_GPUS)"
hold_gpus 2

cat >"$TMPD/per-task.sh" <<'EOF'
set -euo pipefail
. "$CTRUN_REPO/tests/integration/hooklib.sh"
b=$TMPD/$1-$SLURM_PROCID
echo "$SLURM_STEP_GPUS" >"$b.gpus"
if [ "$1" = configure ]; then
	make_bundle "$b" "$REPORT"
	"$CTRUN" -q hooks configure "$b"
else
	make_bundle "$b" "$REPORT" "SLURM_LOCALID=$SLURM_LOCALID" "SLURM_STEP_GPUS=$SLURM_STEP_GPUS" \
		"CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES" "SLURM_STEP_NUM_TASKS=$SLURM_STEP_NUM_TASKS" \
		"SLURM_STEP_NUM_NODES=$SLURM_STEP_NUM_NODES"
	add_hook "$b"
fi
runc --root "$TMPD/runc" run --bundle "$b" "hk-$1-$SLURM_JOB_ID-$SLURM_PROCID" >"$b.out"
EOF

# check KIND TASK GPU: the container of TASK has exactly GPU and can open it.
check() {
	local out=$TMPD/$1-$2.out want
	sed "s/^/    task $2: /" "$out"
	want="node /dev/nvidia$3 c3 $(printf %x "$3");node /dev/nvidiactl c3 ff;"
	assert_eq "$want" "$(grep '^node /dev/nvidia[0-9c]' "$out" | sort -V | tr '\n' ';')" \
		"$1: device nodes in task $2's container"
	grep -q "^open /dev/nvidia$3:" "$out" || fail "$1: task $2 did not try its GPU"
	if grep "^open /dev/nvidia$3:" "$out" | grep -q 'not permitted'; then
		fail "$1: the device cgroup denies task $2 its GPU"
	fi
}

run_rc srun -N1 -w "${NODES[0]}" -n2 --gpus-per-task=1 bash "$TMPD/per-task.sh" configure
assert_eq 0 "$rc" "srun --gpus-per-task=1 of the containers"
for t in 0 1; do
	g=$(cat "$TMPD/configure-$t.gpus")
	assert_eq "$((t + 2))" "$g" "task $t's GPU from Slurm"
	check configure "$t" "$g"
	grep -qx "CUDA_VISIBLE_DEVICES=0" "$TMPD/configure-$t.out" || fail "task $t: not renumbered"
done

run_rc srun -N1 -w "${NODES[0]}" -n2 --gpus-per-node=2 bash "$TMPD/per-task.sh" hooksd
assert_eq 0 "$rc" "srun --gpus-per-node=2 of the hooks.d-style containers"
IFS=, read -r -a step <"$TMPD/hooksd-0.gpus"
((${#step[@]} == 2)) || fail "step GPUs: ${step[*]}"
check hooksd 0 "${step[0]}"
check hooksd 1 "${step[1]}"
