#!/bin/bash
# Pattern: fix the environment in an interactive shell, keep it, save it as an
# image, then train from that image in a batch job (docs/containers.md,
# "Writable runs, named containers, saving"):
#   salloc -N1
#   IMAGE=pytorch.sqsh NAME=dev examples/keep-and-save.sh shell      # pip install ...; exit
#   IMAGE=pytorch.sqsh NAME=dev examples/keep-and-save.sh save $HOME/pytorch-dev.sqsh
#   exit
#   IMAGE=$HOME/pytorch-dev.sqsh sbatch examples/ddp-container.sbatch
# `run CMD...` instead of `shell` makes the same changes without a terminal.
# The container NAME is kept on the allocation's first node (where `ctrun
# shell` runs), so `save` runs there too.
set -euo pipefail
CTRUN=${CTRUN:-ctrun}
: "${IMAGE:?set IMAGE to a .sqsh, .sif, archive or directory}" "${NAME:?set NAME, e.g. dev}"
first=$(scontrol show hostnames "${SLURM_JOB_NODELIST:?run it inside salloc}" | head -n1)
case ${1:-} in
shell) shift; exec "$CTRUN" shell --image "$IMAGE" --name "$NAME" "$@" ;;
run) shift; exec srun -N1 -n1 -w "$first" "$CTRUN" --image "$IMAGE" --name "$NAME" -- "$@" ;;
save) exec srun -N1 -n1 -w "$first" "$CTRUN" save "$NAME" -o "${2:?save FILE.sqsh}" ;;
*) echo "usage: $0 shell|run CMD...|save FILE.sqsh" >&2; exit 2 ;;
esac
