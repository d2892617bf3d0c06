#!/bin/bash
# tag: every-slurm
# srun with one task per node: ctrun starts 2 DDP workers on each of 2 nodes.
. "$(dirname "$0")/lib.sh"
cd "$TMPD"
node_mode() {
	run_rc srun -N2 --ntasks-per-node=1 "$CTRUN" --nproc-per-node 2 --python "$PY" \
		"$CTRUN_REPO/examples/train_ddp.py" --epochs 2 --out "$TMPD"
	assert_eq 0 "$rc" "srun exit status"
	check_ddp "$TMPD" 2 2
}
behaviour "srun, one task per node: DDP training, 2 nodes x 2 workers" node_mode
