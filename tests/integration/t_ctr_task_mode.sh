#!/bin/bash
# Task mode in containers: srun with 2 tasks per node, one container per
# task (each with one worker), DDP across 2 nodes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
need_image TORCH torch.sqsh
cd "$TMPD"
cp "$CTRUN_REPO/examples/train_ddp.py" .
ddp() {
	run_rc srun -N2 --ntasks-per-node=2 "$CTRUN" --image "$TORCH" train_ddp.py --epochs 1 --out "$TMPD"
	assert_eq 0 "$rc" "srun exit status"
	check_ddp "$TMPD" 2 2
}
behaviour "DDP training, one container per task, 2 nodes x 2 tasks" ddp
behaviour "no container is left" assert_no_containers
