#!/bin/bash
# Job records and pull claims in the image store against earlier runs and
# other users (issue 29, points 5 and 6).
#  - A requeued job keeps its id: its run 1 must not take run 0's record.
#    With the tag moved between the runs, both tasks of run 1's step run
#    the tag's new digest; with run 0 failed (its task 0 wrote an error),
#    run 1 runs.
#  - In a group store (setgid 2770, group ctrunteam) the member ctrunuser
#    is the attacker, the member ctrunpeer the victim: a record planted for
#    the victim's next job id (the very text ctrun writes, naming another
#    image), a FIFO at that record's name, at a pull's claim and at a tag's
#    record change nothing and stall no one: the victim's runs take the
#    tag's digest, and end well within their guard ([registry] wait=3 where
#    a wait applies).
# ctrunpeer and ctrunteam are this test's own: made here and removed on
# exit, also when an earlier run that was killed left them.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
. "$(dirname "$0")/reglib.sh"
need_image BBD busybox-docker.tar
need_image BBO busybox-oci.tar
attacker=$("$CTRUN_REPO/tests/cluster/ensure-user.sh" ctrunuser)
victim=ctrunpeer grp=ctrunteam
trap 'pkill -KILL -u "$attacker" 2>/dev/null || true; test_members_gone "$grp" "$victim"; cleanup_tmp' EXIT
test_members "$grp" "$victim"
usermod -a -G "$grp" "$attacker"
cd "$TMPD"
reg_start
reg_client "$TMPD/auth.json"
# Two manifests of the same tree: the docker archive's and the OCI archive's.
reg_push "$BBD" ctrun-test/app:v1
reg_push "$BBO" ctrun-test/app:v2
d1=$(reg_digest ctrun-test/app:v1)
d2=$(reg_digest ctrun-test/app:v2)
[ "$d1" != "$d2" ] || fail "the two test manifests have one digest"
cluster=$(scontrol show config | awk '$1 == "ClusterName" {print $3}')
image_of() { echo "$1/images/sha256-${2#sha256:}.sqsh"; }
# The "image REF is PATH" lines of -v, one per task, as PATH only.
ran() { sed -n "s|^ctrun: image $1 is ||p" "$2" | sort; }
# state JOB: JobState and Restarts of a job Slurm still lists.
state() { scontrol show job "$1" | grep -oE '(JobState|Restarts)=[A-Z0-9]+' | tr '\n' ' '; }
wait_state() { # JOB WANT SECS
	local i
	for ((i = 0; i < $3 * 10; i++)); do
		[[ "$(state "$1")" == *"$2"* ]] && return 0
		sleep 0.1
	done
	tail -5 "$TMPD/$1".*.err || true
	fail "job $1: '$(state "$1")' after $3 s, not '$2'"
}
# A requeued job starts again at once (Slurm would hold it a while).
requeue() { scontrol requeue "$1" && scontrol update JobId="$1" StartTime=now; }

# The step of every run: node mode on two nodes, the store shared, each
# run's stderr and status in files named by Slurm's restart count.
job_script() { # REF STORE
	cat <<JOB
#!/bin/bash
r=\${SLURM_RESTART_COUNT:-0}
CTRUN_REGISTRY_STORE=$2 CTRUN_REGISTRY_STORE_SHARED=true \\
	srun -N2 --ntasks-per-node=1 "$CTRUN" -v --image "$1" -- true 2> "$TMPD/\$SLURM_JOB_ID.\$r.err"
echo \$? > "$TMPD/\$SLURM_JOB_ID.\$r.rc"
JOB
}

requeued_after_tag_moved() {
	local ref=docker://$REG_HOST/ctrun-test/app:moving store=$TMPD/store-req job
	reg_push "$BBD" ctrun-test/app:moving
	job_script "$ref" "$store" > req.sh
	job=$(sbatch --parsable --requeue -N2 -o "$TMPD/req.out" req.sh)
	wait_state "$job" "JobState=COMPLETED" 60
	assert_eq 0 "$(cat "$job.0.rc")" "run 0's step"
	assert_eq "$(printf '%s\n' "$(image_of "$store" "$d1")" "$(image_of "$store" "$d1")")" \
		"$(ran "$ref" "$job.0.err")" "the images run 0's two tasks ran"
	# The tag moves; the job runs again with its id and step ids.
	reg_push "$BBO" ctrun-test/app:moving
	requeue "$job"
	wait_state "$job" "JobState=COMPLETED Restarts=1" 120
	cat "$job.1.err"
	assert_eq 0 "$(cat "$job.1.rc")" "run 1's step"
	assert_eq "$(printf '%s\n' "$(image_of "$store" "$d2")" "$(image_of "$store" "$d2")")" \
		"$(ran "$ref" "$job.1.err")" "the images run 1's two tasks ran (the tag's new digest, both)"
}

requeued_after_failure() {
	local ref=docker://$REG_HOST/ctrun-test/app:late store=$TMPD/store-late job
	job_script "$ref" "$store" > late.sh
	job=$(sbatch --parsable --requeue -N2 -o "$TMPD/late.out" late.sh)
	wait_state "$job" "JobState=COMPLETED" 60
	cat "$job.0.err"
	[ "$(cat "$job.0.rc")" != 0 ] || fail "run 0 pulled a tag that did not exist"
	grep -q "could not pull the image" "$job.0.err" || fail "run 0's task 1 did not take task 0's error"
	reg_push "$BBD" ctrun-test/app:late
	requeue "$job"
	wait_state "$job" "JobState=COMPLETED Restarts=1" 120
	cat "$job.1.err"
	assert_eq 0 "$(cat "$job.1.rc")" "run 1's step (run 0's error record is not run 1's)"
	assert_eq 2 "$(ran "$ref" "$job.1.err" | grep -c "sha256-${d1#sha256:}")" "tasks of run 1 that ran the tag's image"
}

behaviour "a requeued job after its tag moved: both tasks of run 1 run the new digest" requeued_after_tag_moved
behaviour "a requeued job after run 0 failed to pull: run 1 runs" requeued_after_failure

# ---- the group store, made by an admin as docs/images.md says; ctrunuser planting ----
g=$TMPD/gstore
install -d -m 2770 -o root -g "$grp" "$g"
cp auth.json victim-auth.json
chown "$victim" victim-auth.json
# "${as_USER[@]}" CMD...: CMD as USER in $TMPD, umask 002 (a group store's
# members'), no shell evaluating the arguments.
in_tmpd='umask 002 && cd "$0" && exec "$@"'
as_attacker=(su -s /bin/bash -c "$in_tmpd" -- "$attacker" "$TMPD")
as_victim=(su -s /bin/bash -c "$in_tmpd" -- "$victim" "$TMPD")
# The victim's ctrun on the group store, its registry settings passed on.
victim_env=(env SLURM_CONF="$SLURM_CONF" CTRUN_REGISTRY_STORE="$g" CTRUN_REGISTRY_STORE_SHARED=true
	CTRUN_REGISTRY_AUTH_FILE="$TMPD/victim-auth.json" CTRUN_REGISTRY_CA_FILE="$REG_CA"
	CTRUN_REGISTRY_WAIT=3)
ref1=docker://$REG_HOST/ctrun-test/app:v1
# A step of two tasks on one node as the victim, under a guard (a hang is a
# failure, not a stuck suite): its -v stderr in $1.err, its status in rc.
victim_step() {
	run_rc timeout -k 5 90 "${as_victim[@]}" "${victim_env[@]}" srun -N1 -n2 "$CTRUN" -v --image "$ref1" -- true 2> "$1.err"
	cat "$1.err"
}
next_job() { scontrol show config | awk '$1 == "NEXT_JOB_ID" {print $3}'; }
# The record name of a job's step 0 for ref1: jobs/JOB.0-HASH, HASH from the
# victim's first job's record (the attacker can list the folder).
victim_step first
assert_eq 0 "$rc" "the victim's first step on the group store"
first=$(ls "$g/jobs")
hash=${first#*-}
[[ $first =~ ^[0-9]+\.0-[0-9a-f]{16}$ ]] || fail "the victim's job record is '$first'"

planted_record() {
	local j text
	j=$(next_job)
	# The text ctrun writes for that run, naming the other image.
	text=$(printf 'ctrun job record\nrun %s %s.0 restart 0 start - node -\nreference %s\n%s' \
		"$cluster" "$j" "$ref1" "$d2")
	"${as_attacker[@]}" sh -c 'printf "%s\n" "$1" > "$2"' sh "$text" "$g/jobs/$j.0-$hash"
	victim_step planted
	assert_eq 0 "$rc" "the victim's step with a record planted for it"
	assert_eq "$(printf '%s\n' "$(image_of "$g" "$d1")" "$(image_of "$g" "$d1")")" \
		"$(ran "$ref1" planted.err)" "the images the victim's two tasks ran (the tag's)"
	[ ! -e "$(image_of "$g" "$d2")" ] || fail "the planted record's image was pulled"
}

fifo_at_record() {
	local j
	j=$(next_job)
	"${as_attacker[@]}" mkfifo "$g/jobs/$j.0-$hash"
	victim_step fifo
	[ "$rc" != 124 ] && [ "$rc" != 137 ] || fail "the victim's step hung on a FIFO at its record"
	assert_eq 0 "$rc" "the victim's step with a FIFO at its record"
	assert_eq 2 "$(ran "$ref1" fifo.err | grep -c "sha256-${d1#sha256:}")" "tasks that ran the tag's image"
}

fifo_at_claim() {
	# v2 is not in the store yet: its pull claims tmp/HEX.claim, where the FIFO is.
	"${as_attacker[@]}" mkfifo "$g/tmp/${d2#sha256:}.claim"
	run_rc timeout -k 5 60 "${as_victim[@]}" "${victim_env[@]}" "$CTRUN" pull "docker://$REG_HOST/ctrun-test/app:v2" > claim.out 2> claim.err
	cat claim.err
	[ "$rc" != 124 ] && [ "$rc" != 137 ] || fail "the victim's pull hung on a FIFO at its claim"
	assert_eq 0 "$rc" "the victim's pull with a FIFO at its claim"
	assert_eq "$(image_of "$g" "$d2")" "$(cat claim.out)" "the image pulled"
	grep -q "tmp/${d2#sha256:}.claim is not a claim" claim.err || fail "the FIFO's removal is not said"
}

fifo_at_tag_record() {
	local rec=$g/refs/$REG_HOST/ctrun-test/app/v1
	[ -f "$rec" ] || fail "no record of the victim's tag at $rec"
	"${as_attacker[@]}" sh -c 'rm -f "$1" && mkfifo "$1"' sh "$rec"
	run_rc timeout -k 5 60 "${as_victim[@]}" "${victim_env[@]}" "$CTRUN" cache list > list.out 2> list.err
	cat list.out list.err
	[ "$rc" != 124 ] && [ "$rc" != 137 ] || fail "the victim's cache list hung on a FIFO at a tag's record"
	assert_eq 0 "$rc" "the victim's cache list"
	grep -q "^${d1:0:19} " list.out || fail "the victim's image is not listed"
}

behaviour "a record the attacker planted for the victim's next job: ignored" planted_record
behaviour "a FIFO at the victim's next job record: no task waits on it" fifo_at_record
behaviour "a FIFO at the victim's pull claim: removed, the pull goes on" fifo_at_claim
behaviour "a FIFO at the victim's tag record: cache list does not wait on it" fifo_at_tag_record
