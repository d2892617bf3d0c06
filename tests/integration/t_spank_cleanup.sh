#!/bin/bash
# tag: every-slurm
# Nothing is left after a containerised step ends other than by itself:
# scancel, its time limit, its srun killed with SIGKILL (the tasks end on
# their own later).  Nothing: no ctrun __hold, agent, runtime (runc, crun) or image
# mount process on a node, no run directory, no record of a running
# container.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
. "$(dirname "$0")/spanklib.sh"
need_image BB busybox.sqsh
spank_cluster_up
cd "$TMPD"
chmod 777 "$TMPD"

clean() { # what
	assert_no_leftovers "ctrun __hold" 20 || fail "$1"
	assert_no_leftovers "/.ctrun/agent" 5
	assert_no_leftovers "squashfuse" 5
	assert_no_leftovers "runc" 5
	assert_no_leftovers "crun" 5
	assert_no_rundirs
	for n in "${NODES[@]}"; do
		[ -z "$(ls "/run/ctrun-spank/$n/$(id -u "$SPANK_USER")" 2>/dev/null)" ] ||
			fail "$1: a record of a running container is left on $n"
	done
}
# Starts a 2-node step whose tasks write TAG.N once inside, then run CMD.
start_step() { # tag, cmd, then srun options
	local tag=$1 cmd=$2
	shift 2
	as_user srun -N2 --ntasks-per-node=2 --container-image="$BB" "$@" sh -c \
		"echo \$SLURM_JOB_ID >> $TMPD/$tag.started; $cmd" > "$tag.out" 2>&1 &
	step_pid=$!
	wait_lines "$TMPD/$tag.started" 4 60 || fail "$tag: the tasks did not start: $(cat "$tag.out")"
	job=$(head -1 "$tag.started")
}

cancelled() {
	start_step cancel "sleep 300"
	scancel "$job"
	wait "$step_pid" || true
	wait_job_gone "$job" 30 || fail "job $job is still there"
	clean "after scancel"
}
behaviour "scancel: nothing left" cancelled

timed_out() {
	start_step timeout "sleep 300" --time=1
	wait "$step_pid" || true
	grep -q "TIME LIMIT\|time limit" timeout.out || note "srun said: $(cat timeout.out)"
	wait_job_gone "$job" 60 || fail "job $job is still there"
	clean "after the time limit"
}
behaviour "the time limit: nothing left" timed_out

srun_killed() {
	local srun_pid
	start_step killed "sleep 3"
	srun_pid=$(pgrep -u "$SPANK_USER" -x srun)
	[ -n "$srun_pid" ] || fail "no srun of $SPANK_USER"
	kill -KILL $srun_pid
	wait "$step_pid" 2>/dev/null || true
	# The tasks end by themselves; the step and the job go after them.
	assert_no_leftovers "sleep 3" 30
	clean "after srun was killed"
}
behaviour "srun killed with SIGKILL: nothing left" srun_killed

# The hold itself killed with SIGKILL mid-step (what Slurm's process
# tracking may do first when srun is killed): it cannot remove its run
# directory; the plugin, which outlives it, does.
hold_killed() {
	local holds="" all p pp
	start_step holdkill "sleep 3"
	# The holds slurmstepd started, not their children (which keep the
	# command line): those whose parent is no ctrun __hold.
	all=" $(pgrep -u "$SPANK_USER" -f "ctrun __hold" | tr '\n' ' ') "
	for p in $all; do
		pp=$(ps -o ppid= -p "$p" | tr -d ' ')
		[ -z "$pp" ] || [[ "$all" == *" $pp "* ]] || holds+=" $p"
	done
	[ "$(echo "$holds" | wc -w)" -eq 2 ] ||
		fail "not one ctrun __hold per node: '$holds' of '$all': $(ps -o pid,ppid,comm,args -u "$SPANK_USER")"
	kill -KILL $holds
	wait "$step_pid" 2>/dev/null || true
	wait_job_gone "$job" 60 || fail "job $job is still there"
	clean "after the hold was killed"
}
behaviour "the hold killed with SIGKILL mid-step: nothing left" hold_killed
