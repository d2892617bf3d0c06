#!/bin/bash
# `make demo`: ctrun's main job end to end.  Brings up a 2-node Slurm
# cluster on this machine, submits examples/ddp.sbatch (a DDP training
# through ctrun), prints the job's log and tears the cluster down.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
export CTRUN_CLUSTER_NAME=${CTRUN_CLUSTER_NAME:-ctdemo}
export CTRUN_CLUSTER_SUBNET=${CTRUN_CLUSTER_SUBNET:-10.233.0}
export CTRUN_CLUSTER_PORT_BASE=${CTRUN_CLUSTER_PORT_BASE:-18817}
cluster=$repo/tests/cluster/cluster.sh
work=$(mktemp -d /tmp/ctrun-demo.XXXXXX)
"$cluster" down >/dev/null 2>&1 || true
trap '"$cluster" down >/dev/null 2>&1; rm -rf "$work"' EXIT
echo "== bringing up a 2-node Slurm cluster"
"$cluster" up >/dev/null
eval "$("$cluster" env)"
sinfo
cd "$work"
echo "== sbatch examples/ddp.sbatch (ctrun --nproc-per-node 2 train_ddp.py)"
set +e
CTRUN=$repo/build/ctrun TRAIN=$repo/examples/train_ddp.py \
	sbatch --wait --export=ALL -o "$work/job.out" "$repo/examples/ddp.sbatch"
rc=$?
set -e
echo "== job log"
cat "$work/job.out"
echo "== job exit status: $rc"
exit "$rc"
