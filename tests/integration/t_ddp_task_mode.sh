#!/bin/bash
# tag: every-slurm
# srun with one task per worker (2 per node): ctrun runs exactly one worker
# per task, RANK = SLURM_PROCID, LOCAL_RANK = SLURM_LOCALID.
. "$(dirname "$0")/lib.sh"
cd "$TMPD"
task_mode() {
	run_rc srun -N2 --ntasks-per-node=2 "$CTRUN" --python "$PY" \
		"$CTRUN_REPO/examples/train_ddp.py" --epochs 2 --out "$TMPD"
	assert_eq 0 "$rc" "srun exit status"
	check_ddp "$TMPD" 2 2
}
behaviour "srun -N2 --ntasks-per-node=2: one worker per task, every rank once, identical weights" task_mode
