#!/bin/bash
# tag: every-slurm
# A batch-mode job that Slurm stops is not restarted, whoever got the
# signal: here the steps' ctrun get SIGTERM and the batch ctrun does not
# (sbatch --wrap: ctrun is not the batch shell's exec, and scancel
# --signal without --batch/--full signals the steps only).  The batch
# ctrun says in one line why it does not restart, and the job ends then.
# A whole-job scancel restarts nothing either, and a container step is
# treated the same.  (A real worker failure still restarts:
# t_restarts.sh, t_batch_preempt.sh.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
cd "$TMPD"
cat > worker.sh <<'W'
#!/bin/sh
echo "rank $RANK restart $TORCHELASTIC_RESTART_COUNT" >> "$OUT/runs"
while :; do sleep 0.1; done
W
chmod +x worker.sh
# submit OUTFILE CTRUN-ARGS...: a --wrap job on two nodes, its id in $job.
submit() {
	local out=$1
	shift
	job=$(sbatch --parsable -N2 -o "$TMPD/$out" --export=ALL,OUT="$TMPD" \
		--wrap "$(printf '%q ' "$CTRUN" --max-restarts 3 "$@")")
}
# stopped OUTFILE: the job is gone within 30 s, no worker ran twice, the
# batch ctrun restarted nothing, and no node's ctrun took the stop for a
# worker's failure (a worker can die of Slurm's SIGTERM before its ctrun
# reads its own: ctrun waits for that, docs/slurm.md).
stopped() {
	wait_job_gone "$job" 30 || { scancel "$job"; cat "$1" runs; fail "job $job still there 30 s after the signal"; }
	cat "$1" runs
	assert_eq 0 "$(grep -c 'restart [1-9]' runs)" "workers started again"
	if grep -q 'restarting (' "$1"; then fail "ctrun restarted a step Slurm stopped"; fi
	if grep -q 'failed first' "$1"; then fail "a node's ctrun called the stop a failure"; fi
	rm -f runs
}

# The steps get SIGTERM, the batch shell does not.
steps_signalled() {
	rm -f runs
	submit steps.out --nproc-per-node 1 -- "$TMPD/worker.sh"
	wait_lines runs 2 30 || { scancel "$job" || true; cat steps.out; fail "workers did not start"; }
	scancel --signal=TERM "$job"
	stopped steps.out
	assert_eq 1 "$(grep -c 'ctrun: not restarting the step: ctrun on host .* received SIGTERM' steps.out)" \
		"lines saying why the step is not restarted"
}

# The whole job cancelled: every process of it gets SIGTERM.
job_cancelled() {
	rm -f runs
	submit job.out --nproc-per-node 1 -- "$TMPD/worker.sh"
	wait_lines runs 2 30 || { scancel "$job" || true; cat job.out; fail "workers did not start"; }
	scancel "$job"
	stopped job.out
	if grep -q 'expired' job.out; then fail "srun was started after the job ended"; fi
}

# A container step: the node's ctrun watches the container runtime, not
# the workers, and tells the batch ctrun the same.
container_step() {
	rm -f runs
	submit ctr.out --image "$BB" --nproc-per-node 1 -- sh -c \
		'echo "rank $RANK restart $TORCHELASTIC_RESTART_COUNT" >> runs; while :; do sleep 0.1; done'
	wait_lines runs 2 60 || { scancel "$job" || true; cat ctr.out; fail "containers did not start"; }
	scancel --signal=TERM "$job"
	stopped ctr.out
	assert_eq 1 "$(grep -c 'ctrun: not restarting the step: ctrun on host .* received SIGTERM' ctr.out)" \
		"lines saying why the container step is not restarted"
}

behaviour "SIGTERM to the steps only: no restart, one line says why, the job ends" steps_signalled
behaviour "the whole job cancelled: no restart, no srun after the job ended" job_cancelled
need_image BB busybox.sqsh
behaviour "a container step's SIGTERM: no restart, one line says why, the job ends" container_step
behaviour "no worker is left" assert_no_leftovers "$TMPD/worker.sh" 10
behaviour "no container is left" assert_no_containers
