#!/bin/bash
# tag: every-slurm
# nodes: 3
# In-job restarts from a batch script (docs/slurm.md "When a node fails"):
# a node's every process killed (slurmd too: a node crash), and the batch
# ctrun restarts the step at once on the nodes left, without waiting for
# Slurm to notice (SlurmdTimeout): with --spares a spare takes the lost
# node's rank, so a DDP training resumed from its checkpoint ends with the
# same weights as a run that was never interrupted; with --nnodes MIN:MAX
# the world shrinks and training resumes; a spare whose health check fails
# (a GPU's device file gone) is never used; --hang-timeout stops a job
# whose ranks all stopped making progress (and restarts it, or says so
# with --max-restarts 0), while a touch of the heartbeat file counts as
# progress.  Bad input is refused before any step, and ctrun under the
# user's own srun says it ignores these options.  Each, where it matters,
# with and without a container; nothing is left on any node.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
need_image TORCH torch.sqsh
need_image BB busybox.sqsh
cd "$TMPD"
cp "$CTRUN_REPO/tests/integration/elastic_train.py" .
[ "${#NODES[@]}" -ge 3 ] || fail "a cluster of 3 nodes is needed, this one has ${#NODES[@]}"
N1=${NODES[0]} N2=${NODES[1]} N3=${NODES[2]}

# A node crash: every process of the node killed, its slurmd too (it
# spares only the node's init); revived: its slurmd started again, and
# back to idle in Slurm (not from this shell: a slurmd in the test's
# session would be a leftover of it).
crash() { "$CLUSTER" exec "$1" bash -c 'kill -9 -1' || true; }
revive() {
	local i
	"$CLUSTER" exec "$1" pgrep -x slurmd > /dev/null 2>&1 || "$CLUSTER" slurmd "$1"
	for ((i = 0; i < 1200; i++)); do
		[ "$(sinfo -h -n "$1" -o %t)" = idle ] && return 0
		sleep 0.1
	done
	fail "node $1 did not come back: $(sinfo -h -n "$1" -o %t)"
}
# Whatever a behaviour did to the nodes is undone at the file's end too.
restore_nodes() {
	local n
	for n in "${NODES[@]}"; do
		"$CLUSTER" exec "$n" sh -c '[ -e /dev/nvidia1 ] || mknod -m 666 /dev/nvidia1 c 195 1' || true
		"$CLUSTER" exec "$n" pgrep -x slurmd > /dev/null 2>&1 || "$CLUSTER" slurmd "$n" || true
	done
	cleanup_tmp
}
trap restore_nodes EXIT

# job NAME SBATCH-ARGS... -- CTRUN-ARGS...: an sbatch job (sbatch --no-kill:
# the allocation outlives a failed node) whose script runs ctrun and says
# how it ended; sets job.
job() {
	local name=$1 sb=()
	shift
	while [ "$1" != -- ]; do sb+=("$1"); shift; done
	shift
	{
		echo '#!/bin/bash'
		printf '%q ' "$CTRUN" "$@"
		echo
		echo 'echo "ctrun exit $?"'
	} > "$name.sh"
	job=$(sbatch --parsable --no-kill -o "$TMPD/$name.out" "${sb[@]}" "$name.sh")
	# In the behaviour's subshell: its job ends with it, should it fail first.
	# shellcheck disable=SC2064
	trap "scancel $job 2>/dev/null || true" EXIT
}
# Until the batch script said how ctrun ended (120 s at most).
ended() {
	for ((i = 0; i < 2400; i++)); do
		grep -q '^ctrun exit' "$1.out" 2>/dev/null && return 0
		sleep 0.05
	done
	cat "$1.out"
	fail "$1: ctrun did not end"
}
# DIR N: until N ranks of the training in DIR wait after step 12 (120 s at most).
stalled() {
	for ((i = 0; i < 2400; i++)); do
		[ "$(grep -c stalled "$1/progress" 2>/dev/null)" = "$2" ] && return 0
		grep -q '^ctrun exit' "$1.out" 2>/dev/null && break
		sleep 0.05
	done
	cat "$1.out"
	fail "$1: the training did not reach step 12"
}
# DIR ATTEMPT: the start lines of that attempt's ranks, by rank.
started() { grep " start attempt=$2 " "$1/progress" | sort -k4; }
train() { # DIR [ELASTIC-TRAIN-ARGS...]: the command line of elastic_train.py
	local d=$1
	shift
	mkdir -p "$d"
	echo --python "$PY" "$TMPD/elastic_train.py" --dir "$TMPD/$d" --steps 16 --every 5 "$@"
}
nothing_left() {
	assert_no_leftovers "elastic_train.py" 15
	assert_no_leftovers "$TMPD/w.sh" 5
	assert_no_leftovers "$TMPD/k.sh" 5
	assert_no_containers 5
}

# The run nobody interrupts: the weights the others must reach.
reference() {
	# shellcheck disable=SC2046
	job ref -N3 -- --spares 1 --max-restarts 2 --nproc-per-node 2 $(train ref)
	ended ref
	cat ref.out
	grep -qx 'ctrun exit 0' ref.out || fail "the reference run failed"
	[ -s ref/weights ] || fail "the reference run wrote no weights"
	wait_job_gone "$job" 60
}

# ARGS...: a 3-node job with a spare, its training stalled at step 12
# (checkpoint at 10), node 2 crashed; then the spare in node 2's rank.
spare_takes_the_rank() {
	local d=$1
	shift
	# shellcheck disable=SC2046
	job "$d" -N3 -- --spares 1 --max-restarts 2 --nproc-per-node 2 "$@" $(train "$d" --stall-at 12)
	stalled "$d" 4
	crash "$N2"
	ended "$d"
	revive "$N2"
	wait_job_gone "$job" 120 || fail "$d: job $job still in Slurm"
	cat "$d.out"
	grep -qx 'ctrun exit 0' "$d.out" || fail "$d: the job did not end well"
	grep -q "^ctrun: node $N2 left out: lost during the step: " "$d.out" ||
		fail "$d: no line says $N2 was lost"
	grep -q "restarting (1/2) on $N1,$N3: $N3 in $N2's place" "$d.out" ||
		fail "$d: the restart does not say $N3 took $N2's place"
	started "$d" 1
	# The same world, the spare in the lost node's ranks, from the checkpoint.
	[ "$(started "$d" 1 | grep -c 'world=4 group=[01] nnodes=2')" = 4 ] || fail "$d: world size changed"
	[ "$(started "$d" 1 | grep -c "rank=[23] .*group=1 .*host=$N3 from=11 ")" = 2 ] ||
		fail "$d: $N3 did not take ranks 2-3 from step 11"
	[ "$(started "$d" 1 | grep -c "host=$N1 from=11 ")" = 2 ] || fail "$d: $N1 did not resume at 11"
	# Node 1's address (cluster.sh: node i is SUBNET.(10+i)).
	[ "$(started "$d" 1 | grep -c "master=$CTRUN_CLUSTER_SUBNET.11 max=2$")" = 4 ] ||
		fail "$d: MASTER_ADDR or TORCHELASTIC_MAX_RESTARTS"
	[ -s "$d/weights" ] || fail "$d: no weights"
	cmp -s ref/weights "$d/weights" || fail "$d: the weights differ from the uninterrupted run's"
}
# --nnodes 2 as well: a count of the run that the check step (3 nodes) ignores.
crash_with_spare() { spare_takes_the_rank crash --nnodes 2; }
crash_with_spare_in_container() { spare_takes_the_rank crashc --image "$TORCH"; }

# --nnodes 1:2 on 2 nodes, no spare: the world shrinks to node 1.
elastic_shrinks() {
	# shellcheck disable=SC2046
	job shrink -N2 -- --nnodes 1:2 --max-restarts 1 --nproc-per-node 2 $(train shrink --stall-at 12)
	stalled shrink 4
	crash "$N2"
	ended shrink
	revive "$N2"
	wait_job_gone "$job" 120 || fail "job $job still in Slurm"
	cat shrink.out
	grep -qx 'ctrun exit 0' shrink.out || fail "the job did not end well"
	grep -q "restarting (1/1) on $N1: the world shrinks from 2 nodes to 1" shrink.out ||
		fail "the restart does not say the world shrinks"
	started shrink 1
	[ "$(started shrink 1 | grep -c "world=2 group=0 nnodes=1 host=$N1 from=11 ")" = 2 ] ||
		fail "not resumed at step 11 by a world of 2 on $N1"
	grep -q 'done world=2' shrink/progress || fail "the shrunk world did not finish"
}

# A spare whose GPU 1 is gone: left out before the first step, so when
# node 2 crashes there is no spare and the world (--nnodes 1:2) shrinks.
unhealthy_spare() {
	"$CLUSTER" exec "$N3" rm -f /dev/nvidia1
	# shellcheck disable=SC2046
	job sick -N3 --gpus-per-node=2 -- --spares 1 --nnodes 1:2 --max-restarts 1 \
		$(train sick --stall-at 12)
	stalled sick 4
	crash "$N2"
	ended sick
	revive "$N2"
	"$CLUSTER" exec "$N3" mknod -m 666 /dev/nvidia1 c 195 1
	wait_job_gone "$job" 120 || fail "job $job still in Slurm"
	cat sick.out
	grep -qx 'ctrun exit 0' sick.out || fail "the job did not end well"
	grep -q "^ctrun: node $N3 left out: its health check failed: GPU 1 of the job: /dev/nvidia1 is missing" \
		sick.out || fail "no line says the spare $N3 is unhealthy"
	grep -q "restarting (1/1) on $N1: the world shrinks" sick.out || fail "the world did not shrink"
	if grep -q "host=$N3" sick/progress; then fail "the unhealthy spare $N3 ran a rank"; fi
}

# One rank stops (rank 3, after step 12); the others wait for it in the
# next all-reduce: nothing more is printed, and after 3 s the batch ctrun
# stops the step and restarts it from the checkpoint.
hang_restarts() {
	# shellcheck disable=SC2046
	job hang -N2 -- --hang-timeout 3 --max-restarts 1 --nproc-per-node 2 "$@" \
		$(train hang --stall-at 12 --hang-rank 3)
	ended hang
	wait_job_gone "$job" 60
	cat hang.out
	grep -qx 'ctrun exit 0' hang.out || fail "the job did not end well"
	grep -q "^ctrun: the step hung: no rank made progress (a line of output or a touch of its heartbeat file) for 3 s; the first to stall: rank " \
		hang.out || fail "no line says the step hung"
	grep -q "step failed with status 124 (it hung); restarting (1/1)" hang.out || fail "no restart"
	[ "$(started hang 1 | grep -c 'world=4 .*from=11 ')" = 4 ] || fail "not resumed from step 11"
}
hang_in_container() { rm -rf hang hang.out; hang_restarts --image "$TORCH"; }

# --max-restarts 0: stopped and said, exit 124.  Rank 1 goes silent first
# (after one line: before its first progress a worker has 5 minutes): it
# is named.
cat > w.sh <<'W'
#!/bin/sh
echo "up $RANK"
[ "$RANK" = 1 ] && exec sleep 300
i=0
while [ $i -lt 30 ]; do echo "tick $i"; i=$((i + 1)); sleep 0.1; done
exec sleep 300
W
chmod +x w.sh
hang_stopped() {
	job stop -N2 -- --hang-timeout 2 --max-restarts 0 --nproc-per-node 2 "$@" -- "$TMPD/w.sh"
	ended stop
	wait_job_gone "$job" 60
	cat stop.out
	grep -qx 'ctrun exit 124' stop.out || fail "a hung job's status is not 124"
	grep -q "^ctrun: the step hung: .* for 2 s; the first to stall: rank 1 on $N1 (" stop.out ||
		fail "the hang line does not name rank 1 first"
	grep -qx "ctrun: not restarting the step: no restarts (--max-restarts 0)" stop.out ||
		fail "no line says it is not restarted"
	if grep -q 'restarting (' stop.out; then fail "restarted with --max-restarts 0"; fi
}
hang_stopped_in_container() { hang_stopped --image "$BB"; }

# An HPC user (not root): the watch, the heartbeat files in the container
# (rootless runc), the hang line and the status are the same.
as_user_hang() {
	local user
	user=$("$CTRUN_REPO/tests/cluster/ensure-user.sh")
	{
		echo '#!/bin/bash'
		printf '%q ' "$CTRUN" --hang-timeout 2 --image "$BB" --nproc-per-node 2 -- "$TMPD/w.sh"
		echo
		echo 'echo "ctrun exit $?"'
	} > user.sh
	chmod 755 user.sh
	run_rc su "$user" -s /bin/bash -c "cd '$TMPD' && SLURM_CONF='$SLURM_CONF' sbatch --wait --quiet --no-kill -N2 -o '$TMPD/user.out' user.sh"
	cat user.out
	grep -qx 'ctrun exit 124' user.out || fail "$user's hung job: not 124"
	grep -q "^ctrun: the step hung: .*; the first to stall: rank 1 on $N1 (" user.out ||
		fail "$user's hung job: no line names rank 1"
}

# Silent, but touching its heartbeat file: no hang.
cat > hb.sh <<'W'
#!/bin/sh
i=0
while [ $i -lt 25 ]; do touch "$CTRUN_HEARTBEAT_FILE"; i=$((i + 1)); sleep 0.2; done
W
chmod +x hb.sh
heartbeat_is_progress() {
	job beat -N2 -- --hang-timeout 2 --nproc-per-node 2 -- "$TMPD/hb.sh"
	ended beat
	wait_job_gone "$job" 60
	cat beat.out
	grep -qx 'ctrun exit 0' beat.out || fail "a job that touches its heartbeat file was stopped"
	if grep -q 'hung' beat.out; then fail "a hang was seen"; fi
}

# Outside Slurm one ctrun runs every worker: it judges a hang itself, and
# restarts the workers within --max-restarts (in a container, from the
# agent's reports).
standalone_hang() {
	run_rc "$CTRUN" --nproc-per-node 2 --hang-timeout 2 --max-restarts 1 -- sh -c \
		'echo "up $RANK"; [ "$TORCHELASTIC_RESTART_COUNT" = 1 ] && exit 0; exec sleep 300' \
		> sa.out 2>&1
	cat sa.out
	assert_eq 0 "$rc" "status after the restart"
	grep -q "^ctrun: the workers on .* hung: no rank made progress (a line of output or a touch of its heartbeat file) for 2 s; the first to stall: rank [01] (" \
		sa.out || fail "no line says they hung"
	grep -qx "ctrun: restarting workers (1/1) after they hung" sa.out || fail "no restart"
}
standalone_hang_container() {
	run_rc "$CTRUN" --image "$BB" --nproc-per-node 2 --hang-timeout 2 -- sh -c \
		'echo up; exec sleep 300' > sc.out 2>&1
	cat sc.out
	assert_eq 124 "$rc" "a hung run's status"
	grep -q "^ctrun: the workers on .* hung: " sc.out || fail "no line says they hung"
}

# Only the ctrun of node 2 killed, its node alive (the out-of-memory
# killer): its guardian ends the step and srun ends; not a lost node, the
# step restarts with it.
cat > k.sh <<'W'
#!/bin/sh
if [ "$TORCHELASTIC_RESTART_COUNT" = 0 ]; then echo "$RANK" >> "$OUT/up"; exec sleep 300; fi
echo "rank $RANK $SLURMD_NODENAME" >> "$OUT/up1"
W
chmod +x k.sh
ctrun_killed() {
	rm -f up up1
	OUT=$TMPD job killed -N2 -- --max-restarts 1 --nproc-per-node 2 -- "$TMPD/k.sh"
	wait_lines up 4 60 || { cat killed.out; fail "the workers did not start"; }
	"$CLUSTER" exec "$N2" pkill -o -KILL -f "^$CTRUN --max-restarts 1"
	ended killed
	wait_job_gone "$job" 60
	cat killed.out
	grep -qx 'ctrun exit 0' killed.out || fail "the job did not end well"
	if grep -q 'left out' killed.out; then fail "a node whose ctrun was killed was left out"; fi
	grep -qx 'ctrun: step failed with status [0-9]*; restarting (1/1)' killed.out ||
		fail "not restarted on the same nodes"
	assert_eq 2 "$(grep -c " $N2\$" up1)" "ranks of the restart on $N2"
}

# Refused in one line, exit 2, before any step; no worker ran.
bad_input() {
	local args want
	while IFS='|' read -r args want; do
		rm -f ran
		# shellcheck disable=SC2086
		job bad -N3 -- $args -- touch "$TMPD/ran"
		ended bad
		wait_job_gone "$job" 30
		cat bad.out
		grep -qx 'ctrun exit 2' bad.out || fail "$args: not exit 2"
		assert_eq 2 "$(wc -l < bad.out)" "$args: lines (one of ctrun's, one of the script's)"
		grep -qF "ctrun: $want" bad.out || fail "$args: the line does not say '$want'"
		[ ! -e ran ] || fail "$args: a worker ran"
	done <<'CASES'
--spares 3|--spares 3: the job has 3 nodes and at least one must train (ask sbatch for 4 nodes or more)
--nnodes 1:4|--nnodes 1:4: the job has only 3 nodes (a node count outside the allocation)
--nnodes 2:3 --spares 1|--nnodes 2:3 with --spares 1: the job's 3 nodes leave 2 to train (lower MAX to 2, or ask for more nodes)
--nnodes 3:1|--nnodes: '3:1' is reversed: MIN 3 is above MAX 1 (write 1:3)
CASES
}

# ctrun under the user's own srun: as before, and says so.
node_mode_says_so() {
	run_rc srun -N2 --ntasks-per-node=1 "$CTRUN" --spares 1 --nnodes 1:2 --hang-timeout 5 \
		--nproc-per-node 1 -- true 2> node.err
	cat node.err
	assert_eq 0 "$rc" "srun exit status"
	assert_eq 1 "$(grep -c 'ignored in node mode' node.err)" "lines saying so (node rank 0 only)"
	grep -q '^ctrun: --spares, --nnodes MIN:MAX, --hang-timeout: for ctrun called from the batch script' \
		node.err || fail "the line does not name the options"
}

behaviour "an uninterrupted reference training on 2 nodes and a spare" reference
behaviour "a node crash with a spare: the spare takes its ranks, the weights equal the reference" \
	crash_with_spare
behaviour "nothing left on any node (crash with a spare)" nothing_left
behaviour "a node crash with a spare, in containers" crash_with_spare_in_container
behaviour "nothing left on any node (crash with a spare, containers)" nothing_left
behaviour "--nnodes 1:2 without a spare: the world shrinks and resumes from the checkpoint" \
	elastic_shrinks
behaviour "nothing left on any node (elastic)" nothing_left
behaviour "an unhealthy spare is left out before it is used" unhealthy_spare
behaviour "nothing left on any node (unhealthy spare)" nothing_left
behaviour "a hang is caught and the step restarted from the checkpoint" hang_restarts
behaviour "a hang caught and restarted, in containers" hang_in_container
behaviour "--max-restarts 0: a hung job is stopped, said, status 124" hang_stopped
behaviour "--max-restarts 0 and a hang, in containers" hang_stopped_in_container
behaviour "a touch of the heartbeat file is progress" heartbeat_is_progress
behaviour "as an unprivileged user, in containers: a hang caught, status 124" as_user_hang
behaviour "outside Slurm: a hang caught, the workers restarted" standalone_hang
behaviour "outside Slurm, in a container: a hang caught, status 124" standalone_hang_container
behaviour "nothing left on any node (hangs)" nothing_left
behaviour "a ctrun killed on a living node: no lost node, the step restarts with it" ctrun_killed
behaviour "nothing left on any node (ctrun killed)" nothing_left
behaviour "bad --spares or --nnodes: one line, exit 2, no step" bad_input
behaviour "under the user's own srun the options are said to be ignored" node_mode_says_so
