#!/bin/bash
# An HPC user (not root) submits a batch script that trains in a container:
# ctrun re-launches itself on both nodes, each runs rootless runc (a user
# namespace mapping the user to root inside), files belong to the user.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
need_image TORCH torch.sqsh
user=$("$CTRUN_REPO/tests/cluster/ensure-user.sh")
cd "$TMPD"
cp "$CTRUN_REPO/examples/train_ddp.py" .
cat > job.sh <<JOB
#!/bin/bash
#SBATCH --nodes=2
"$CTRUN" --image "$TORCH" --nproc-per-node 2 train_ddp.py --epochs 2 --out "$TMPD"
JOB
chmod 755 job.sh
run_rc su "$user" -s /bin/bash -c "cd '$TMPD' && SLURM_CONF='$SLURM_CONF' sbatch --wait --quiet -o '$TMPD/job.out' job.sh"
cat job.out
# The job ran once, at the top level; each behaviour checks one thing of it.
trained() {
	assert_eq 0 "$rc" "sbatch --wait as $user"
	check_ddp "$TMPD" 2 2
}
owned() { assert_eq "$user" "$(stat -c %U "$TMPD/rank-3.json")" "owner of the files the workers wrote"; }
prefixed() { grep -q '^\[rank0\]: epoch 1: mean loss' job.out || fail "rank-prefixed training log missing"; }
behaviour "the batch job of $user trains in containers on both nodes" trained
behaviour "the files the workers wrote belong to $user" owned
behaviour "the training log is rank-prefixed" prefixed
behaviour "no container is left" assert_no_containers
