#!/bin/bash
# Pattern: an interactive shell inside the container on a compute node:
#   salloc -N1 examples/salloc-shell.sh            (or: ctrun shell --image ... from salloc)
#   examples/salloc-shell.sh python3 -c 'import torch; print(torch.__version__)'
# From the salloc shell ctrun runs itself with srun --pty on the allocation's
# first node; the working directory is mounted and entered, GPUs passed.
CTRUN=${CTRUN:-ctrun}
exec "$CTRUN" shell --image "${IMAGE:?set IMAGE to a .sqsh, .sif, archive or directory}" "$@"
