#!/bin/bash
# Output through the supervisor on the cluster: every line prefixed with
# its global rank and intact; --log-dir writes DIR/JOBID/HOST/rank-N.log
# with each rank's own lines; --no-prefix passes lines through untouched.
. "$(dirname "$0")/lib.sh"
cd "$TMPD"
# A shared place as /tmp is (sticky): root's log directory is its own there
# (under a world-writable one without the sticky bit ctrun refuses it:
# t_log_dir_hostile).
chmod 1777 "$TMPD"
cat > talk.sh <<'W'
#!/bin/sh
i=0
while [ $i -lt 500 ]; do echo "line $i from rank $RANK of $WORLD_SIZE"; i=$((i + 1)); done
echo "stderr from rank $RANK" >&2
W
chmod +x talk.sh
prefixed_and_logs() {
	local job r host log
	job=$(sbatch --parsable --wait -N2 -o "$TMPD/out.txt" -e "$TMPD/err.txt" \
		--wrap "'$CTRUN' --nproc-per-node 2 --log-dir '$TMPD/logs' -- '$TMPD/talk.sh'")
	for r in 0 1 2 3; do
		assert_eq 500 "$(grep -c "^\[rank$r\]: line [0-9]* from rank $r of 4\$" out.txt)" "prefixed stdout lines of rank $r"
		assert_eq 1 "$(grep -c "^\[rank$r\]: stderr from rank $r\$" err.txt)" "prefixed stderr line of rank $r"
		host=${NODES[$((r / 2))]}
		log=logs/$job/$host/rank-$r.log
		[ -f "$log" ] || fail "missing $log (have: $(find logs -type f))"
		assert_eq 501 "$(wc -l < "$log")" "lines in $log"
		assert_eq 0 "$(grep -vc -e "^line [0-9]* from rank $r of 4\$" -e "^stderr from rank $r\$" "$log")" "foreign lines in $log"
	done
	assert_eq 2000 "$(grep -c '^\[rank' out.txt)" "total prefixed lines"
}

no_prefix() {
	srun -N1 -n1 "$CTRUN" --no-prefix -- "$TMPD/talk.sh" > plain.txt 2>/dev/null
	assert_eq 500 "$(grep -c '^line [0-9]* from rank 0 of 1$' plain.txt)" "--no-prefix lines"
}

# One worker in the whole job: lines as they are (srun without -l, docker
# run); --prefix puts [rank0]: back.
one_worker() {
	srun -N1 -n1 "$CTRUN" -- "$TMPD/talk.sh" > one.txt 2>/dev/null
	assert_eq 500 "$(grep -c '^line [0-9]* from rank 0 of 1$' one.txt)" "one worker's lines, unprefixed"
}
forced_prefix() {
	srun -N1 -n1 "$CTRUN" --prefix -- "$TMPD/talk.sh" > forced.txt 2>/dev/null
	assert_eq 500 "$(grep -c '^\[rank0\]: line [0-9]* from rank 0 of 1$' forced.txt)" "--prefix lines"
}

behaviour "every line prefixed with its rank and intact; --log-dir keeps each rank's own" prefixed_and_logs
behaviour "--no-prefix passes lines through untouched" no_prefix
behaviour "one worker in the whole job: lines unprefixed" one_worker
behaviour "--prefix puts [rank0]: back for one worker" forced_prefix
