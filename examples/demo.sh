#!/bin/bash
# `make demo`: ctrun's main job end to end.  Builds (once; cached) a PyTorch
# container image from Debian packages, brings up a 2-node Slurm cluster on
# this machine, submits examples/ddp-container.sbatch (a DDP training run by
# ctrun inside the container on both nodes), prints the job's log and tears
# the cluster down.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
export CTRUN_CLUSTER_NAME=${CTRUN_CLUSTER_NAME:-ctdemo}
export CTRUN_CLUSTER_SUBNET=${CTRUN_CLUSTER_SUBNET:-10.233.0}
export CTRUN_CLUSTER_PORT_BASE=${CTRUN_CLUSTER_PORT_BASE:-18817}
cluster=$repo/tests/cluster/cluster.sh
echo "== container image: debootstrap minbase + python3-torch -> squashfs (cached after the first run)"
tests/images/build.sh torch >&2
image=$(tests/images/build.sh path torch.sqsh)
work=$(mktemp -d /tmp/ctrun-demo.XXXXXX)
"$cluster" down >/dev/null 2>&1 || true
trap '"$cluster" down >/dev/null 2>&1; rm -rf "$work"' EXIT
echo "== bringing up a 2-node Slurm cluster"
"$cluster" up >/dev/null
eval "$("$cluster" env)"
sinfo
cd "$work"
echo "== sbatch examples/ddp-container.sbatch (ctrun --image $(basename "$image") ... train_ddp.py)"
set +e
# Each node unpacks the image once into its own node-local scratch.
CTRUN=$repo/build/ctrun IMAGE=$image EXAMPLES=$repo/examples \
	CTRUN_CACHE_DIR=$CTRUN_CLUSTER_SCRATCH/ctrun-cache \
	sbatch --wait -o "$work/job.out" "$repo/examples/ddp-container.sbatch"
rc=$?
set -e
echo "== job log"
cat "$work/job.out"
echo "== job exit status: $rc"
exit "$rc"
