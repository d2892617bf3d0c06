#!/bin/bash
# tag: every-slurm
# SIGKILL to ctrun itself (standalone, nothing else to clean up after it):
# its workers and their children die too.
. "$(dirname "$0")/lib.sh"
cd "$TMPD"
cat > worker.sh <<'W'
#!/bin/sh
sleep 986 &
echo "$$ $!" >> "$OUT/pids"
wait
W
chmod +x worker.sh
# ctrun is started, waited for and killed in the behaviour's own shell (a
# subshell cannot wait for a job of the file's shell).
sigkill() {
	local ctrun_pid i p alive=""
	env -u SLURM_CONF OUT="$TMPD" "$CTRUN" --nproc-per-node 3 -- "$TMPD/worker.sh" &
	ctrun_pid=$!
	for ((i = 0; i < 100; i++)); do
		[ "$(wc -l < pids 2>/dev/null || echo 0)" -ge 3 ] && break
		sleep 0.1
	done
	assert_eq 3 "$(wc -l < pids)" "workers started"
	kill -9 "$ctrun_pid"
	wait "$ctrun_pid" 2>/dev/null || true
	for ((i = 0; i < 30; i++)); do
		alive=""
		for p in $(cat pids); do kill -0 "$p" 2>/dev/null && alive+=" $p"; done
		[ -z "$alive" ] && break
		sleep 0.1
	done
	[ -z "$alive" ] || fail "still alive after ctrun was killed:$alive"
	if pgrep -f "sleep 986"; then fail "grandchild sleep survived"; fi
	echo ok
}
behaviour "kill -9 of ctrun: its workers and their children die too" sigkill
