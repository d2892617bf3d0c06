#!/bin/bash
# Staging against another user of the nodes (issue 19, point 7): sbcast
# follows a symlink at its target and truncates what it names, so the copy
# goes into a private directory of the job's user, made on every node
# before the copy.  An unprivileged attacker plants, on each node's stage
# directory, a symlink to a file of the victim's (root here) and a file of
# theirs at the names the job's copy used to get, and a directory of theirs
# at a name of the job's: the job still stages and runs from its copies, the
# victim's file and the attacker's are untouched, and a name of the job's
# that someone else holds is refused, never written through.  Copies a
# cancelled job leaves are removed by `ctrun cache gc` on the node and by
# the next staging there.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
need_image BB busybox.sqsh
cd "$TMPD"
cp "$BB" bb.sqsh
scratch=$CTRUN_CLUSTER_SCRATCH # node-local on every test node (/tmp is shared here)
n1=${NODES[0]} n2=${NODES[1]}
attacker=$("$CTRUN_REPO/tests/cluster/ensure-user.sh")
as_attacker() { # NODE CMD...: run CMD on NODE as the attacker (argv, no shell)
	local node=$1
	shift
	"$CLUSTER" exec "$node" setpriv --reuid="$attacker" --regid="$attacker" --init-groups -- "$@"
}
ours() { # NODE: root's stage directories there (the attacker's names are not ours)
	"$CLUSTER" exec "$1" find "$scratch" -maxdepth 1 -user 0 -name 'ctrun-stage.0.*' -printf '%f\n'
}
jc="" jh=""
cleanup() { # the attacker's names and whatever the jobs left, also when a check failed
	local n
	for j in $jc $jh; do scancel "$j" 2>/dev/null || true; done
	for n in "$n1" "$n2"; do
		"$CLUSTER" exec "$n" find "$scratch" -maxdepth 1 -name 'ctrun-stage.*' \
			\( -user "$attacker" -o -name "ctrun-stage.0.${jc:-none}*" \
			-o -name "ctrun-stage.0.${jh:-none}*" \) -exec rm -rf {} + || true
	done
	cleanup_tmp
}
trap cleanup EXIT
wait_file() { # FILE SECS
	local i
	for ((i = 0; i < $2 * 20; i++)); do
		[ -e "$1" ] && return 0
		sleep 0.05
	done
	return 1
}

cat > job.sh <<J
#!/bin/bash
export CTRUN_CACHE_STAGE_DIR=$scratch
"$CTRUN" -v --stage sbcast --image "$TMPD/bb.sqsh" --nproc-per-node 1 -- sh -c "\$1"
echo \$? > "$TMPD/rc.\$SLURM_JOB_ID"
J
chmod +x job.sh

# The job ids stay at the top level: the EXIT trap's cleanup cancels the jobs and
# removes what they left.
# 1. A job cancelled while it runs leaves its copies on both nodes.
jc=$(sbatch --parsable -N2 -o "$TMPD/cancel.out" job.sh \
	"echo up > $TMPD/up.\$RANK; exec sleep 600")

cancelled() {
	wait_file up.0 60 && wait_file up.1 60 || fail "the cancelled job's workers did not start: $(cat cancel.out)"
	scancel "$jc"
	wait_job_gone "$jc" 60 || fail "job $jc still listed after scancel"
	for n in "$n1" "$n2"; do
		left=$(ours "$n")
		[[ $left =~ ^ctrun-stage\.0\.$jc\. ]] || fail "no copy of the cancelled job $jc left on $n: '$left'"
	done
}
behaviour "1. a job cancelled while it runs leaves its copies on both nodes" cancelled

gc() {
	run_rc "$CLUSTER" exec "$n1" env CTRUN_CACHE_STAGE_DIR="$scratch" CTRUN_CACHE_DIR="$TMPD/gccache" \
		"$CTRUN" cache gc --budget 1T > gc.out 2>&1
	cat gc.out
	assert_eq 0 "$rc" "cache gc"
	grep -q "^removed 1 staged copy of ended jobs (.*) in $scratch\$" gc.out || fail "gc did not say so"
	assert_eq "" "$(ours "$n1")" "the cancelled job's copy on $n1 after gc"
}
behaviour "2. ctrun cache gc on a node removes the cancelled job's copy there (the job is over for Slurm)" gc

# 3. The victim's next job, with the attacker's names planted first.
echo precious > precious
echo "attacker's" > theirs
chmod 644 precious theirs
jh=$(sbatch --parsable --hold -N2 -o "$TMPD/hostile.out" job.sh \
	true)
old=ctrun-stage.0.$jh.bb.sqsh # the name the copy used to get

hostile() {
	as_attacker "$n1" ln -s "$TMPD/precious" "$scratch/$old"
	as_attacker "$n2" cp "$TMPD/theirs" "$scratch/$old"
	for n in "$n1" "$n2"; do
		as_attacker "$n" mkdir -m 755 "$scratch/ctrun-stage.0.$jh"
	done
	scontrol release "$jh"
	wait_job_gone "$jh" 120 || fail "job $jh did not end"
	cat hostile.out
	assert_eq 0 "$(cat "rc.$jh")" "the victim's job"
	assert_eq precious "$(cat precious)" "the victim's file the symlink on $n1 names"
	assert_eq "$TMPD/precious" "$("$CLUSTER" exec "$n1" readlink "$scratch/$old")" "the attacker's symlink"
	assert_eq "attacker's" "$("$CLUSTER" exec "$n2" cat "$scratch/$old")" "the attacker's file on $n2"
	for n in "$n1" "$n2"; do
		grep -q "ctrun: $TMPD/bb.sqsh staged on $n: $scratch/ctrun-stage\.0\.$jh\.[0-9a-f]\{16\}/bb.sqsh$" \
			hostile.out || fail "$n did not use a copy in a private directory"
		# The job's own directory is gone, and so is the copy the cancelled
		# job left on n2: the staging there removed it.
		assert_eq "" "$(ours "$n")" "root's stage directories on $n after the job"
	done
	! grep -q "missing, not yours" hostile.out || fail "a copy was refused"
}
behaviour "3. the victim's next job, the attacker's names planted first: staged, run, nothing written through them" hostile

held_name() {
	# 4. A name of the job's that someone else holds first: refused (125, one
	# line), nothing written through it.  The random part of the real name
	# cannot be known in advance; the node's step is asked directly here.
	name=ctrun-stage.0.$jh.0123456789abcdef
	as_attacker "$n1" mkdir -m 700 "$scratch/$name"
	run_rc "$CLUSTER" exec "$n1" "$CTRUN" __stage prepare "$scratch" "$name" 2> refused.err
	cat refused.err
	assert_eq 125 "$rc" "prepare on a directory of the attacker's"
	assert_eq 1 "$(wc -l < refused.err)" "lines said"
	grep -q "staging refused: $scratch/$name must be a directory of yours (uid 0)" refused.err ||
		fail "no refusal line"
	run_rc "$CLUSTER" exec "$n1" "$CTRUN" __stage remove "$scratch" "$name"
	assert_eq 0 "$rc" "remove of a name that is not ours"
	"$CLUSTER" exec "$n1" test -d "$scratch/$name" || fail "remove took the attacker's directory"
	as_attacker "$n1" rmdir "$scratch/$name"
	as_attacker "$n1" ln -s "$TMPD" "$scratch/$name"
	run_rc "$CLUSTER" exec "$n1" "$CTRUN" __stage prepare "$scratch" "$name" 2> refused.err
	assert_eq 125 "$rc" "prepare on the attacker's symlink"
	grep -q "is a symlink that another user" refused.err || fail "$(cat refused.err)"
}
behaviour "4. a name of the job's that someone else holds first: refused (125, one line), nothing written through it" held_name
