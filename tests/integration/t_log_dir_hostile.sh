#!/bin/bash
# --log-dir against another local user (issue 29, point 3): ctrunuser is the
# attacker, root the victim.  The log directory lies in a shared, sticky
# place everyone may write (as /tmp is), and job ids are predictable, so the
# attacker makes LOGDIR/JOB/HOST/rank-0.log a symlink to a root-only file
# before the job runs.  ctrun followed it and truncated that file to the
# job's output.  Now root's run refuses the directory the attacker made:
# exit 125, one line naming it, no worker, the file unchanged; the same
# through a container (the agent's log files, made on the host first).  A
# log directory under a world-writable one without the sticky bit is
# refused too; a user's own directory in the sticky place still works.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
need_image BUSYBOX busybox.sqsh
attacker=$("$CTRUN_REPO/tests/cluster/ensure-user.sh" ctrunuser)
n1=${NODES[0]}
cd "$TMPD"
chmod 1777 "$TMPD" # the shared place: anyone may create in it, no one remove another's

# planted NAME [CTRUN OPTION...]: a held batch job of root's logging to
# $TMPD/NAME (a site's shared log directory: root's, sticky, everyone may
# write), the attacker's link at its rank 0's log file (to the root-only
# file NAME.victim), then the job.  The job's ctrun status lands in NAME.rc,
# its output in NAME.out.
planted() {
	local name=$1 job
	shift
	mkdir -m 1777 "$TMPD/$name"
	echo precious >"$TMPD/$name.victim"
	chmod 600 "$TMPD/$name.victim"
	job=$(sbatch --parsable --hold -N1 -w "$n1" -o "$TMPD/$name.out" --wrap \
		"'$CTRUN' --log-dir '$TMPD/$name' $* -- echo job-output; echo \$? >'$TMPD/$name.rc'")
	su "$attacker" -s /bin/sh -c "mkdir -p '$TMPD/$name/$job/$n1' &&
		ln -s '$TMPD/$name.victim' '$TMPD/$name/$job/$n1/rank-0.log'" ||
		{ scancel "$job"; fail "the attacker could not plant the link"; }
	scontrol release "$job"
	wait_job_gone "$job" 120 || fail "job $job still in Slurm"
	[ -f "$TMPD/$name.rc" ] || fail "the job did not run ctrun: $(cat "$TMPD/$name.out")"
	echo "job $job: ctrun exit $(cat "$TMPD/$name.rc"); output: $(cat "$TMPD/$name.out")"
	assert_eq precious "$(cat "$TMPD/$name.victim")" "the root-only file the attacker's link names"
	assert_eq 125 "$(cat "$TMPD/$name.rc")" "ctrun's exit with the attacker's directory"
	grep -q "^ctrun: --log-dir $TMPD/$name: $TMPD/$name/$job is a directory of uid $(id -u "$attacker") .*not root's" \
		"$TMPD/$name.out" || fail "no line naming the attacker's directory"
	! grep -q job-output "$TMPD/$name.out" || fail "a worker ran"
}
behaviour "another user's link at LOGDIR/JOB/HOST/rank-0.log: root's run refuses it, the file it names is unchanged" \
	planted plain
behaviour "the same through a container (the agent's log files)" planted ctr --image "$BUSYBOX"

# A directory anyone can write and that is not sticky: anyone could rename
# root's log directory away and put theirs in its place.
open_dir() {
	mkdir -m 777 "$TMPD/open"
	run_rc srun -N1 -w "$n1" "$CTRUN" --log-dir "$TMPD/open/logs" -- echo job-output \
		>open.out 2>open.err
	cat open.err
	assert_eq 125 "$rc" "ctrun's exit with a log directory under a 0777 one"
	assert_eq 1 "$(grep -vc '^srun: ' open.err)" "ctrun's lines on stderr"
	grep -q "^ctrun: --log-dir $TMPD/open/logs: $TMPD/open is a directory of uid 0 (mode 0777), writable by others without the sticky bit" \
		open.err || fail "no line naming the open directory"
	[ ! -s open.out ] || fail "a worker ran"
}
behaviour "a log directory under a world-writable one without the sticky bit is refused" open_dir

# A user's own log directory, made by ctrun in the sticky place.
users_own() {
	run_rc su "$attacker" -s /bin/sh -c "cd '$TMPD' && SLURM_CONF='$SLURM_CONF' \
		srun -N1 -w '$n1' '$CTRUN' --log-dir '$TMPD/user-logs' -- echo user-output" >user.out
	assert_eq 0 "$rc" "a user's run with its own log directory in the sticky place"
	local log
	log=$(find "$TMPD/user-logs" -name rank-0.log)
	[ -n "$log" ] || fail "no rank-0.log in $TMPD/user-logs"
	assert_eq user-output "$(cat "$log")" "the user's log"
	assert_eq "$attacker" "$(stat -c %U "$log")" "the log file's owner"
	assert_eq 755 "$(stat -c %a "$(dirname "$log")")" "the host directory's mode"
}
behaviour "a user's own log directory in the sticky place works" users_own
