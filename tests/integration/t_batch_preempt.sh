#!/bin/bash
# tag: every-slurm
# Preemption of a batch-mode job: SIGUSR1 to the batch step (the warning
# `sbatch --signal=B:USR1@T` sends) reaches every worker, which goes on;
# then SIGTERM (what scancel and a preempting scheduler send) reaches
# every worker, and ctrun does not start the step again, even with
# --max-restarts left: the job is being stopped, not failing.  Then --max-restarts running out in batch mode ends the job with
# the failure's status, and a restart in a container starts the container
# again.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
cd "$TMPD"
cat > worker.sh <<'W'
#!/bin/bash
trap 'echo "rank $RANK got SIGTERM" >> "$OUT/term.log"; exit 143' TERM
trap 'echo "rank $RANK got SIGUSR1" >> "$OUT/usr1.log"' USR1
echo "rank $RANK restart $TORCHELASTIC_RESTART_COUNT" >> "$OUT/runs"
while :; do sleep 0.1; done
W
chmod +x worker.sh
printf '#!/bin/bash\nexport OUT=%s\nexec "%s" --nproc-per-node 2 --max-restarts 3 -- "%s/worker.sh"\n' \
	"$TMPD" "$CTRUN" "$TMPD" > job.sh
preempted() {
	rm -f runs term.log usr1.log
	job=$(sbatch --parsable -N2 -o "$TMPD/job.out" job.sh)
	wait_lines runs 4 30 || { scancel "$job" || true; cat job.out; fail "workers did not start"; }
	# The usual warning first (sbatch --signal=B:USR1@T sends the same): it
	# reaches every worker, which goes on.
	scancel --batch --signal=USR1 "$job"
	wait_distinct usr1.log 4 30 || { scancel "$job" || true; cat job.out usr1.log; fail "USR1 did not reach every worker"; }
	assert_eq 4 "$(sort -u usr1.log | wc -l)" "workers that got SIGUSR1"
	scancel --batch --signal=TERM "$job"
	wait_job_gone "$job" 30 || { scancel "$job" || true; cat job.out runs term.log; fail "job $job still there 30 s after SIGTERM"; }
	cat job.out runs term.log || true
	assert_eq 4 "$(sort -u term.log | grep -c 'got SIGTERM')" "workers that got SIGTERM"
	assert_eq 0 "$(grep -c 'restart 1' runs)" "workers started again after SIGTERM"
	if grep -q 'restarting' job.out; then fail "ctrun restarted a step it was told to stop"; fi
}

# --max-restarts 2 from a batch script, every run failing: three runs, the
# job ends with the workers' status.
# Each worker fails once the other node's has started too (or the first
# failure would cancel the other before it ran).
printf '#!/bin/bash\nexport OUT=%s\n"%s" --nproc-per-node 1 --max-restarts 2 -- sh -c %q\n' \
	"$TMPD" "$CTRUN" 'r=$TORCHELASTIC_RESTART_COUNT; echo "restart $r" >> "$OUT/runs"; i=0
	until [ "$(grep -c "restart $r" "$OUT/runs")" -ge 2 ] || [ $i -ge 1000 ]; do
		i=$((i+1)); sleep 0.01; done; exit 5' > fail.sh
restarts_run_out() {
	rm -f runs
	run_rc sbatch --wait --quiet -N2 -o "$TMPD/fail.out" fail.sh
	cat fail.out runs
	assert_eq 5 "$rc" "job status when the restarts ran out"
	assert_eq "2 2 2" "$(echo $(grep -c 'restart 0' runs) $(grep -c 'restart 1' runs) $(grep -c 'restart 2' runs))" \
		"runs per restart count on the two nodes"
	if grep -q 'restart 3' runs; then fail "restarted past --max-restarts"; fi
}

# A restart with --image: the first run fails on node 2, the step starts
# again, containers and all, and succeeds.
container_restart() {
	rm -f runs
	printf '#!/bin/bash\n"%s" --image %q --nproc-per-node 1 --max-restarts 1 -- sh -c %q\n' \
		"$CTRUN" "$BB" 'echo "rank $RANK restart $TORCHELASTIC_RESTART_COUNT" >> runs; \
	 [ "$TORCHELASTIC_RESTART_COUNT" = 1 ] || [ "$RANK" = 0 ] || exit 6' > ctr.sh
	run_rc sbatch --wait --quiet -N2 -o "$TMPD/ctr.out" ctr.sh
	cat ctr.out runs
	assert_eq 0 "$rc" "container job status after one restart"
	grep -q 'restarting (1/1)' ctr.out || fail "no restart of the container step"
	assert_eq 2 "$(grep -c 'restart 1' runs)" "containers started again on both nodes"
}

behaviour "USR1 then TERM to the batch step: every worker gets both, no restart" preempted
behaviour "no worker is left" assert_no_leftovers "$TMPD/worker.sh" 10
behaviour "--max-restarts running out in batch mode: three runs, the failure's status" restarts_run_out
need_image BB busybox.sqsh
behaviour "a restart in batch mode with --image starts the containers again" container_restart
behaviour "no container is left" assert_no_containers
