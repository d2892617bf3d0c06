#!/bin/bash
# tag: every-slurm
# --max-restarts: after a failure every worker starts again with
# TORCHELASTIC_RESTART_COUNT incremented; from a batch script the whole
# srun step is restarted.
. "$(dirname "$0")/lib.sh"
cd "$TMPD"
cat > worker.sh <<'W'
#!/bin/sh
echo "rank $RANK restart $TORCHELASTIC_RESTART_COUNT" >> "$OUT/runs"
[ "$TORCHELASTIC_RESTART_COUNT" -ge 1 ] || [ "$RANK" != 1 ] || exit 4
sleep 0.5
W
chmod +x worker.sh
printf '#!/bin/bash\nexport OUT=%s\n"%s" --nproc-per-node 2 --max-restarts 1 -- "%s/worker.sh"\n' "$TMPD" "$CTRUN" "$TMPD" > job.sh

standalone() {
	rm -f runs
	run_rc env OUT="$TMPD" "$CTRUN" --nproc-per-node 2 --max-restarts 2 -- "$TMPD/worker.sh"
	assert_eq 0 "$rc" "standalone exit status after one restart"
	assert_eq 2 "$(grep -c 'restart 1' runs)" "workers started at restart 1"
	if grep -q 'restart 2' runs; then fail "restarted more than needed"; fi
}

batch() {
	rm -f runs
	run_rc sbatch --wait --quiet -N2 -o "$TMPD/job.out" job.sh
	cat job.out runs
	assert_eq 0 "$rc" "batch exit status after one restart"
	assert_eq 4 "$(grep -c 'restart 1' runs)" "workers started at restart 1 on both nodes"
}

# Out of restarts: the failure's status is the job's.
no_restarts_left() {
	run_rc env OUT="$TMPD" "$CTRUN" --nproc-per-node 2 --max-restarts 0 -- sh -c 'exit 4'
	assert_eq 4 "$rc" "status with no restarts left"
}

behaviour "standalone: every worker restarts once with TORCHELASTIC_RESTART_COUNT=1" standalone
behaviour "batch script: the whole srun step restarts on both nodes" batch
behaviour "out of restarts: the failure's status is the job's" no_restarts_left
