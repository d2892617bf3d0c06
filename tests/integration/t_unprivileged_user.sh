#!/bin/bash
# tag: every-slurm
# An HPC user, not root: the DDP run through srun as an unprivileged user.
. "$(dirname "$0")/lib.sh"
"$CTRUN_REPO/tests/cluster/ensure-user.sh" ctrunuser >/dev/null
cd "$TMPD"

ddp_as_user() {
	run_rc su ctrunuser -s /bin/bash -c "cd '$TMPD' && SLURM_CONF='$SLURM_CONF' srun -N2 --ntasks-per-node=1 \
	'$CTRUN' --nproc-per-node 2 --python '$PY' '$CTRUN_REPO/examples/train_ddp.py' --epochs 1 --out '$TMPD'"
	assert_eq 0 "$rc" "srun as ctrunuser"
	check_ddp "$TMPD" 2 2
	owner=$(stat -c %U "$TMPD/rank-0.json")
	assert_eq ctrunuser "$owner" "owner of the files the workers wrote"
}

behaviour "DDP 2x2 through srun as the unprivileged ctrunuser" ddp_as_user
