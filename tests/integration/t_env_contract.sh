#!/bin/bash
# tag: every-slurm
# `ctrun env` on the cluster: one block per local worker with the
# torchrun contract, in node mode and in task mode, GPUs from Slurm's GRES.
. "$(dirname "$0")/lib.sh"
cd "$TMPD"
node_mode() {
	srun -N2 --ntasks-per-node=1 -l "$CTRUN" env --nproc-per-node 2 > node.txt
	cat node.txt
	"$PY" - node.txt 2 2 "${NODES[@]}" <<'P'
import sys
lines = open(sys.argv[1]).read().split("\n")
nnodes, nproc, nodes = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
blocks = {}
for l in lines:
    if not l.strip():
        continue
    task, _, kv = l.partition(": ")
    if not kv:  # the blank separator line, labelled by srun -l
        blocks.setdefault(task, [{}]).append({})
        continue
    k, _, v = kv.partition("=")
    blocks.setdefault(task, [{}])[-1][k] = v
envs = [b for t in sorted(blocks) for b in blocks[t] if b]
assert len(envs) == nnodes * nproc, f"{len(envs)} blocks"
for e in envs:
    r = int(e["RANK"])
    assert e["LOCAL_RANK"] == str(r % nproc) and e["NODE_RANK"] == str(r // nproc), e
    assert e["WORLD_SIZE"] == "4" and e["GROUP_WORLD_SIZE"] == "2" and e["ROLE_NAME"] == "default", e
    assert e["OMP_NUM_THREADS"] == "1" and e["TORCH_NCCL_ASYNC_ERROR_HANDLING"] == "1", e
    assert e["TORCHELASTIC_RESTART_COUNT"] == "0" and e["TORCHELASTIC_RUN_ID"].isdigit(), e
    assert not e["MASTER_ADDR"].startswith("127."), e
assert sorted(int(e["RANK"]) for e in envs) == list(range(4))
assert len({(e["MASTER_ADDR"], e["MASTER_PORT"]) for e in envs}) == 1, "ranks disagree on the master"
print("node mode ok")
P
}

task_mode() {
	# Task mode: RANK is SLURM_PROCID; keys sorted within each block.
	srun -N2 --ntasks-per-node=2 bash -c 'echo "PROCID=$SLURM_PROCID LOCALID=$SLURM_LOCALID $("$0" env | grep -E "^(RANK|LOCAL_RANK|LOCAL_WORLD_SIZE|WORLD_SIZE)=" | tr "\n" " ")"' "$CTRUN" > task.txt
	cat task.txt
	assert_eq 4 "$(grep -c '^PROCID=[0-3] ' task.txt)" "task mode: lines of the 4 tasks"
	while read -r procid localid rank local lws ws; do
		assert_eq "${procid#PROCID=}" "${rank#RANK=}" "task mode RANK"
		assert_eq "${localid#LOCALID=}" "${local#LOCAL_RANK=}" "task mode LOCAL_RANK"
		assert_eq "LOCAL_WORLD_SIZE=2" "$lws" "task mode LOCAL_WORLD_SIZE"
		assert_eq "WORLD_SIZE=4" "$ws" "task mode WORLD_SIZE"
	done < <(awk '{print $1, $2, $5, $3, $4, $6}' task.txt)
}

gres() {
	local n
	# GPUs from GRES: --gpus-per-node=2 gives this task 2 GPUs, so auto = 2 workers.
	n=$(srun -N1 --gpus-per-node=2 "$CTRUN" env | grep -c '^RANK=')
	assert_eq 2 "$n" "workers for --gpus-per-node=2 with --nproc-per-node auto"
}

behaviour "node mode: one block per local worker with the torchrun contract" node_mode
behaviour "task mode: RANK is SLURM_PROCID, LOCAL_RANK SLURM_LOCALID" task_mode
behaviour "GPUs from Slurm's GRES set the number of workers" gres
