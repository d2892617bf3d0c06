#!/bin/bash
# tag: every-slurm
# ctrun called from the batch script itself: it re-launches itself with
# srun on every node of the job.
. "$(dirname "$0")/lib.sh"
cd "$TMPD"
cat > job.sh <<JOB
#!/bin/bash
#SBATCH --nodes=2
"$CTRUN" --nproc-per-node 2 --python "$PY" "$CTRUN_REPO/examples/train_ddp.py" --epochs 2 --out "$TMPD"
JOB
trained() {
	run_rc sbatch --wait --quiet -o "$TMPD/job.out" job.sh
	cat job.out
	assert_eq 0 "$rc" "sbatch --wait exit status"
	check_ddp "$TMPD" 2 2
}
prefixed() {
	grep -q '^\[rank0\]: epoch 1: mean loss' job.out || fail "rank-prefixed training log missing from job.out"
}
behaviour "the batch script's ctrun trains on both nodes, 2 workers each" trained
behaviour "the training log in job.out is rank-prefixed" prefixed
