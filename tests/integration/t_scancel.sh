#!/bin/bash
# tag: every-slurm
# scancel of a running job: every worker receives SIGTERM (and logs it),
# and nothing is left running on any node.
. "$(dirname "$0")/lib.sh"
cd "$TMPD"
cat > worker.sh <<'W'
#!/bin/bash
trap 'echo "rank $RANK got SIGTERM" >> "$OUT/term.log"; exit 143' TERM
echo "$RANK" >> "$OUT/started"
while :; do sleep 0.1; done
W
chmod +x worker.sh
printf '#!/bin/bash\nexport OUT=%s\n"%s" --nproc-per-node 2 -- "%s/worker.sh"\n' "$TMPD" "$CTRUN" "$TMPD" > job.sh
scancel_job() {
	local job i
	job=$(sbatch --parsable -N2 -o "$TMPD/job.out" job.sh)
	for ((i = 0; i < 300; i++)); do
		[ "$(wc -l < started 2>/dev/null || echo 0)" -ge 4 ] && break
		sleep 0.1
	done
	[ "$(wc -l < started)" -ge 4 ] || { cat job.out; fail "workers did not start"; }
	scancel "$job"
	for ((i = 0; i < 200; i++)); do
		[ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && break
		sleep 0.1
	done
	cat job.out term.log || true
	assert_eq 4 "$(sort -u term.log | wc -l)" "workers that logged SIGTERM"
}
behaviour "scancel: every worker on both nodes gets SIGTERM" scancel_job
# After the behaviour, pass or fail: nothing of the job may be left running.
nothing_left() { assert_no_leftovers "$TMPD/worker.sh" 10; }
behaviour "scancel: nothing left running on any node" nothing_left
