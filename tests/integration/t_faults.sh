#!/bin/bash
# nodes: 3
# The fault campaign: rounds of a job on the cluster with one fault
# injected at a random moment, then the checks every fault must pass: the
# job ends with a status and a one-line message that name the cause, no
# process of the job is left on any node, no cache entry is published
# incomplete, and the next run succeeds.  CTRUN_FAULTS rounds (11 in make
# check: node, each other kind once, node again; `make faults` runs more),
# seeded by CTRUN_FAULT_SEED, each fault kind in turn:
#   node     every process of node 2 killed, slurmd too (a node crash): Slurm
#            ends the job as a node failure, nothing is left on node 1, and
#            node 2 comes back; it must come back every time, not only
#            after its first crash
#   worker   kill -9 of one worker on node 2
#   ctrun    SIGKILL of ctrun on node 2 (its guardian ends the workers and
#            cancels the step: node 1 stops too)
#   agent    SIGKILL of the agent inside a container (busybox image)
#   scancel  scancel of the job (every worker gets SIGTERM first)
#   create   kill -9 of ctrun while it unpacks the torch image into a cache
#   full     the cache's file system full (a 1 MiB tmpfs, in a private mount
#            namespace): exit 125, no half entry
#   replace  the image replaced while a container job runs: that job is
#            intact, the next one gets the new image
#   stranger a silent connection to MASTER_PORT while `ctrun check` meets
#   spare    node 2 crashed (as node) under a batch-mode ctrun with a spare
#            (sbatch --no-kill -N3, --spares 1): the step restarts at once
#            on nodes 1 and 3, node 3 in node 2's ranks, and ends well; node
#            2 comes back
# CTRUN_FAULT_KINDS="ctrun stranger" narrows the campaign to some kinds
# (the same kind twice, "node node", crashes a node twice in a row).
# Counts go to the log's last line: "faults: N injected (KIND N, ...), 0 left
# behind".
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
need_image BB busybox.sqsh
need_image TORCH torch.sqsh
cd "$TMPD"
rounds=${CTRUN_FAULTS:-11}
RANDOM=${CTRUN_FAULT_SEED:-4242}
# node first: 11 rounds crash node 2 twice (rounds 0 and 10), the second
# time after a restart from outside, which is where it once broke.
all_kinds="node worker ctrun agent scancel create full replace stranger spare"
read -r -a kinds <<<"${CTRUN_FAULT_KINDS:-$all_kinds}"
injected=0
declare -A per_kind=()

# delay: a random moment, 0.1 .. 1.0 s after the job is up.  The moment is
# drawn at the top level before each round (pause): bash reseeds RANDOM in
# a subshell, and a behaviour is one, so a draw there would not follow
# CTRUN_FAULT_SEED.  The kinds that call delay call it once a round, so the
# draws follow the seed as they did before.
delay_kinds=" worker ctrun agent scancel create node spare "
pause=""
delay() {
	[ -n "$pause" ] || fail "$kind: delay called, but no moment was drawn for it"
	sleep "$pause"
}
on2() { "$CLUSTER" exec "${NODES[1]}" "$@"; }
job_gone() { job_gone_within "$1" 30; }
job_gone_within() { # JOB SECS
	wait_job_gone "$1" "$2" && return 0
	cat "job-$round.out"
	squeue --steps -j "$1"
	for n in "${NODES[@]}"; do "$CLUSTER" exec "$n" ps -eo pid,ppid,pgid,args; done
	fail "$kind: job $1 still in Slurm after $2 s"
}
clean() { # PATTERN: nothing matching left on any node
	assert_no_leftovers "$1" 15
}
descendants() { # PID: every process under it on this host
	local c
	for c in $(pgrep -P "$1" || true); do echo "$c"; descendants "$c"; done
	return 0
}
find_agent() { # PID: the agent process under it
	local p
	for p in $(descendants "$1"); do
		if grep -qa '^/.ctrun/agent' "/proc/$p/cmdline" 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	return 0
}
host_pid_gone() { # PID: gone (or a zombie nobody waits for) within 15 s
	local i
	for ((i = 0; i < 300; i++)); do
		[ -e "/proc/$1" ] || return 0
		[ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ] && return 0
		sleep 0.05
	done
	fail "$kind: process $1 left behind: $(tr '\0' ' ' < "/proc/$1/cmdline")"
}
host_gone() { # PATTERN: no process on this host matches
	local i
	for ((i = 0; i < 300; i++)); do
		pgrep -f -- "$1" > /dev/null || return 0
		sleep 0.05
	done
	fail "$kind: left behind: $(pgrep -af -- "$1")"
}

cat > worker.sh <<'W'
#!/bin/bash
trap 'echo "rank $RANK TERM" >> "$OUT/term"; exit 143' TERM
echo "$RANK $$" >> "$OUT/up"
while :; do sleep 0.05; done
W
chmod +x worker.sh
# spare: running until the restart; then each rank says where it runs.
cat > spare.sh <<'W'
#!/bin/bash
if [ "$TORCHELASTIC_RESTART_COUNT" = 0 ]; then
	echo "$RANK $$" >> "$OUT/up"
	while :; do sleep 0.05; done
fi
echo "rank $RANK $SLURMD_NODENAME" >> "$OUT/up1"
W
chmod +x spare.sh
start_job() { # a node-mode job of 2x2 workers; sets job, waits until all are up
	rm -f up term
	job=$(sbatch --parsable --no-requeue -N2 -o "$TMPD/job-$1.out" --wrap \
		"OUT=$TMPD srun --ntasks-per-node=1 $CTRUN --nproc-per-node 2 -- $TMPD/worker.sh")
	# Called in a round's behaviour only: this EXIT trap is its subshell's
	# (cancels the job should the round fail before the job ends).
	trap 'scancel "$job" 2>/dev/null || true' EXIT
	wait_lines up 4 30 || { cat "job-$1.out"; fail "$1: workers did not start"; }
}
status_of() { sacct -n -X -j "$1" -o ExitCode 2>/dev/null | head -1 | tr -d ' '; }

# One round: its fault injected and judged (a behaviour); what a round
# starts in the background is ended in its subshell's EXIT trap should it
# fail before it ends by itself, so the next rounds do not meet it.
round_fault() {
	case $kind in
	worker)
		start_job "$round"
		delay
		pid=$(awk '$1 == 3 {print $2}' up)
		on2 kill -9 "$pid"
		job_gone "$job"
		grep -q "rank 3 on host ${NODES[1]} failed first: killed by signal 9" "job-$round.out" ||
			fail "$kind: no root cause line: $(cat "job-$round.out")"
		;;
	ctrun)
		start_job "$round"
		delay
		# The oldest: ctrun itself, not its guardian (a fork of it), which
		# ends the workers and cancels the step so node 1 stops too.
		on2 pkill -o -KILL -f "^$CTRUN --nproc-per-node 2"
		job_gone "$job"
		grep -q "task 1: Killed" "job-$round.out" || fail "$kind: srun does not name the killed task"
		;;
	agent)
		"$CTRUN" --image "$BB" -- sh -c "echo ready; exec sleep 300$$" > agent.out 2>&1 &
		pid=$!
		trap 'kill "$pid" 2>/dev/null || true' EXIT
		wait_lines agent.out 1 30 || fail "$kind: the container did not start"
		agent=$(find_agent "$pid")
		[ -n "$agent" ] || fail "$kind: no agent under ctrun $pid: $(descendants "$pid")"
		delay
		kill -KILL "$agent"
		run_rc wait "$pid"
		trap - EXIT
		cat agent.out
		[ "$rc" -ne 0 ] || fail "$kind: ctrun exited 0 after its agent was killed"
		grep -q "ctrun: the container on host .* ended (killed by signal 9 (KILL)) before its agent reported" \
			agent.out || fail "$kind: the cause is not named"
		assert_eq 1 "$(grep -vc 'ready$' agent.out)" "$kind: lines of error"
		host_gone "sleep 300$$"
		;;
	scancel)
		start_job "$round"
		delay
		scancel "$job"
		job_gone "$job"
		[ "$(sort -u term | wc -l)" -ge 1 ] || fail "$kind: no worker got SIGTERM"
		;;
	create)
		export CTRUN_CACHE_DIR=$TMPD/cache-$round
		"$CTRUN" cache create "$TORCH" > /dev/null 2>&1 &
		pid=$!
		# The moment the unpack has begun: a temp directory in the cache.
		for ((i = 0; i < 600; i++)); do
			[ -n "$(find "$CTRUN_CACHE_DIR" -name '*.ctrun-tmp.*' 2>/dev/null)" ] && break
			sleep 0.05
		done
		delay
		kids=$(descendants "$pid")
		kill -9 "$pid"
		run_rc wait "$pid"
		for p in $kids; do host_pid_gone "$p"; done
		# Nothing published; the next creation starts over and finishes.
		[ -z "$(find "$CTRUN_CACHE_DIR/entries" -mindepth 1 -maxdepth 1 ! -name '*.ctrun-tmp.*')" ] ||
			fail "$kind: an entry was published by a killed creation"
		root=$("$CTRUN" cache create "$TORCH")
		[ -x "$root/usr/bin/python3" ] || fail "$kind: the next creation is incomplete"
		[ -z "$(find "$CTRUN_CACHE_DIR/entries" -maxdepth 1 -name '*.ctrun-tmp.*')" ] ||
			fail "$kind: the dead creation's temp was not cleaned"
		rm -rf "$CTRUN_CACHE_DIR"
		unset CTRUN_CACHE_DIR
		;;
	full)
		mkdir -p small
		run_rc unshare -m --propagation private sh -c '
			mount -t tmpfs -o size=1m ctrun-full "$1" &&
			CTRUN_CACHE_DIR="$1/cache" "$2" -q --image-mode unpack --image "$3" -- true 2> "$4/full.err"
			rc=$?; ls -A "$1/cache/entries" > "$4/full.ls" 2>&1; exit $rc' \
			sh "$TMPD/small" "$CTRUN" "$TORCH" "$TMPD"
		cat full.err
		assert_eq 125 "$rc" "$kind: exit status"
		assert_eq 1 "$(wc -l < full.err)" "$kind: lines of error"
		grep -q "the cache file system is full" full.err || fail "$kind: the cause is not named"
		[ ! -s full.ls ] || fail "$kind: the full cache kept: $(cat full.ls)"
		;;
	replace)
		cp "$BB" mine.sqsh
		export CTRUN_CACHE_DIR=$TMPD/cache-$round
		"$CTRUN" -q --no-prefix --image mine.sqsh -- sh -c "echo ready;
			while [ ! -e $TMPD/go ]; do sleep 0.05; done; cat /etc/fault-marker 2>/dev/null || echo old" \
			> replace.out 2>&1 &
		pid=$!
		trap 'kill "$pid" 2>/dev/null || true' EXIT
		wait_lines replace.out 1 30 || fail "$kind: the container did not start"
		# A new image at the same path (a new inode), with a marker file.
		unsquashfs -q -d new mine.sqsh > /dev/null
		echo new > new/etc/fault-marker
		mksquashfs new mine.new -quiet -no-progress > /dev/null
		mv mine.new mine.sqsh
		touch go
		run_rc wait "$pid"
		trap - EXIT
		cat replace.out
		assert_eq 0 "$rc" "$kind: the running job"
		assert_eq "old" "$(tail -1 replace.out)" "$kind: the running job's own image"
		assert_eq "new" "$("$CTRUN" -q --no-prefix --image mine.sqsh -- cat /etc/fault-marker)" \
			"$kind: the next job's image"
		rm -rf new go mine.sqsh "$CTRUN_CACHE_DIR"
		unset CTRUN_CACHE_DIR
		;;
	stranger)
		port=$((CTRUN_CLUSTER_PORT_BASE + 470 + round))
		srun -N2 --ntasks-per-node=1 "$CTRUN" check --master-port "$port" --nproc-per-node 1 \
			> check.out 2>&1 &
		pid=$!
		# Connect and say nothing, as a port scanner would.
		"$CLUSTER" exec "${NODES[1]}" "$PY" -c "
import socket, time
for _ in range(300):
    try:
        s = socket.create_connection(('${NODES[0]}', $port)); break
    except OSError: time.sleep(0.02)
time.sleep(8)" &
		idle=$!
		trap 'kill "$pid" "$idle" 2>/dev/null || true' EXIT
		run_rc timeout 120 tail --pid="$pid" -f /dev/null
		[ "$rc" = 0 ] || { squeue; fail "$kind: ctrun check still running after 120 s"; }
		run_rc wait "$pid"
		kill "$idle" 2>/dev/null || true
		wait "$idle" 2>/dev/null || true
		trap - EXIT
		cat check.out
		assert_eq 0 "$rc" "$kind: ctrun check with a stranger on the port"
		grep -qx "check: ok" check.out || fail "$kind: no verdict"
		;;
	spare)
		rm -f up up1
		job=$(sbatch --parsable --no-kill -N3 -o "$TMPD/job-$round.out" --wrap \
			"OUT=$TMPD $CTRUN --spares 1 --max-restarts 1 --nproc-per-node 2 -- $TMPD/spare.sh; echo ctrun exit \$?")
		trap 'scancel "$job" 2>/dev/null || true' EXIT
		wait_lines up 4 30 || { cat "job-$round.out"; fail "$kind: workers did not start"; }
		delay
		on2 bash -c 'kill -9 -1' || true
		for ((i = 0; i < 1200; i++)); do
			grep -q '^ctrun exit' "job-$round.out" 2>/dev/null && break
			sleep 0.1
		done
		cat "job-$round.out"
		grep -qx 'ctrun exit 0' "job-$round.out" || fail "$kind: the job did not end well"
		grep -q "^ctrun: node ${NODES[1]} left out: lost during the step" "job-$round.out" ||
			fail "$kind: the lost node is not named"
		grep -q "restarting (1/1) on ${NODES[0]},${NODES[2]}: ${NODES[2]} in ${NODES[1]}'s place" \
			"job-$round.out" || fail "$kind: the spare did not take the lost node's place"
		assert_eq 4 "$(sort -u up1 | wc -l)" "$kind: ranks of the restart"
		grep -q "rank 2 ${NODES[2]}" up1 || fail "$kind: rank 2 is not on the spare"
		clean "$TMPD/spare.sh"
		"$CLUSTER" slurmd "${NODES[1]}"
		job_gone_within "$job" 120
		for ((i = 0; i < 1200; i++)); do
			[ "$(sinfo -h -n "${NODES[1]}" -o %t)" = idle ] && break
			sleep 0.1
		done
		assert_eq idle "$(sinfo -h -n "${NODES[1]}" -o %t)" "$kind: node 2 back"
		;;
	node)
		start_job "$round"
		delay
		on2 bash -c 'kill -9 -1' || true
		# Slurm notices (SlurmdTimeout) and cancels the job; it leaves the
		# queue once node 2's slurmd is back and has said so.
		for ((i = 0; i < 3000; i++)); do
			grep -q "DUE TO NODE FAILURE" "job-$round.out" 2>/dev/null && break
			sleep 0.1
		done
		grep -q "Node failure on ${NODES[1]}" "job-$round.out" ||
			fail "$kind: the node failure is not named: $(cat "job-$round.out")"
		clean "$TMPD/worker.sh"
		# Not from this shell: a slurmd in the test's session is a leftover
		# of the test, and the runner's clean-up would kill it.
		"$CLUSTER" slurmd "${NODES[1]}"
		job_gone_within "$job" 120
		for ((i = 0; i < 1200; i++)); do
			[ "$(sinfo -h -n "${NODES[1]}" -o %t)" = idle ] && break
			sleep 0.1
		done
		assert_eq idle "$(sinfo -h -n "${NODES[1]}" -o %t)" "$kind: node 2 back"
		;;
	esac
}
# Nothing of the round left on any node, whether it passed or not.
round_clean() {
	clean "$TMPD/worker.sh"
	clean "$TMPD/spare.sh"
	clean "/.ctrun/agent"
}

for ((round = 0; round < rounds; round++)); do
	kind=${kinds[round % ${#kinds[@]}]}
	pause=""
	case $delay_kinds in *" $kind "*) pause="0.$((RANDOM % 10))1" ;; esac
	behaviour "round $round: $kind" round_fault
	injected=$((injected + 1))
	per_kind[$kind]=$((${per_kind[$kind]:-0} + 1))
	behaviour "round $round: $kind: nothing left on any node" round_clean
done
# The next run after all of them succeeds.
after_campaign() {
	run_rc srun -N2 --ntasks-per-node=1 "$CTRUN" --nproc-per-node 2 -- true
	assert_eq 0 "$rc" "a run after the campaign"
}
behaviour "a run after the campaign succeeds" after_campaign
counts=""
for k in "${kinds[@]}"; do # in campaign order, each kind once
	[ -n "${per_kind[$k]:-}" ] || continue
	counts+="${counts:+, }$k ${per_kind[$k]}"
	unset "per_kind[$k]"
done
# "0 left behind" only when every round and its leftover check passed.
left="0 left behind"
[ "$BEHAVIOURS_FAILED" -eq 0 ] || left="$BEHAVIOURS_FAILED behaviour(s) failed: $BEHAVIOURS_FAILED_NAMES"
echo "faults: $injected injected ($counts), $left"
