#!/bin/bash
# The image feed between a step's nodes (runner/deliver/feed.h) against other users
# and slow peers (issue 41, points 4-7; docs/images.md, "Who can talk to the
# feed").  Each behaviour runs a step on 2 nodes with node-local stores; its
# tasks start ctrun when the test releases them (a FIFO each), so the
# attacker, the test cluster's unprivileged user ctrunmallory
# (tests/integration/feed_peer.py), acts exactly between them:
#  - a listener on the predicted port that accepts and never answers: node 1
#    gets no acknowledgement, pulls from the registry and says why in one line
#    (it used to wait for [registry] wait, 30 minutes);
#  - 40 idle connections on node 0's port: node 1 still gets in and is fed (a
#    dozen used to use up node 0's accept window);
#  - a hello made for another link of the chain, replayed to node 0: dropped
#    without a byte, and node 1 is fed (node 0 used to feed the replayer);
#  - a node below that stops reading: node 0 drops it in one line and runs
#    (node 0's send used to block for ever);
#  - [registry] feed = off: no node listens or connects, each pulls for itself.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
. "$(dirname "$0")/reglib.sh"
need_image OCI busybox-oci.tar
attacker=$("$CTRUN_REPO/tests/cluster/ensure-user.sh" ctrunmallory)
local_store=$CTRUN_CLUSTER_SCRATCH/store-feedpeers-$$
N0=${NODES[0]} N1=${NODES[1]}
stop_attacker() {
	local n
	for n in "${NODES[@]}"; do "$CLUSTER" exec "$n" pkill -KILL -u "$attacker" 2>/dev/null || true; done
}
local_stores_gone() {
	local n
	for n in "${NODES[@]}"; do "$CLUSTER" exec "$n" rm -rf "$local_store" || true; done
}
cd "$TMPD"
PEER=$TMPD/feed_peer.py
cp "$CTRUN_REPO/tests/integration/feed_peer.py" "$PEER"
chmod 644 "$PEER"
reg_start --plain --auth none
trap 'stop_attacker; local_stores_gone; reg_stop; cleanup_tmp' EXIT
# busybox, and busybox with a 16 MiB layer of random bytes: an image larger
# than the socket buffers between two nodes.
mkdir bb big tree
tar xf "$OCI" -C bb
head -c $((16 << 20)) /dev/urandom > tree/big
python3 "$CTRUN_REPO/tests/images/addlayer.py" bb big tree
reg_push bb ctrun-test/bb:latest
reg_push big ctrun-test/bb:big
ref=docker://$REG_HOST/ctrun-test/bb:latest big_ref=docker://$REG_HOST/ctrun-test/bb:big
digest=$(reg_digest ctrun-test/bb:latest)
# The job's secret, known here to play a node of the step (feed_peer.py).
CTRUN_JOB_SECRET=$(python3 -c 'import os; print(os.urandom(32).hex())')
export CTRUN_JOB_SECRET CTRUN_REGISTRY_PLAIN_HTTP=$REG_HOST CTRUN_REGISTRY_STORE=$local_store \
	CTRUN_REGISTRY_STORE_SHARED=auto
unset CTRUN_REGISTRY_FEED
manifests() { reg_count '^GET /v2/ctrun-test/bb/manifests/latest 200$'; }
blob_gets() { reg_count '^GET /v2/ctrun-test/bb/blobs/sha256:[0-9a-f]{64} 200$'; }

# start_step REF [NODE1-CMD...]: srun -N2 in the background ($step_pid, its
# output in out and err), $step its JOB.STEP and $port its feed port.  Each
# task writes its JOB.STEP to stepN and waits until `release N`, then runs
# ctrun -v --image REF (node 1: NODE1-CMD when given).  The run is bounded
# by `timeout` (the harness's guard: the old code hung here).
start_step() {
	local r=$1
	shift
	rm -f go0 go1 step0 step1 out err
	mkfifo go0 go1
	# shellcheck disable=SC2016
	timeout 300 srun -N2 --ntasks-per-node=1 bash -c '
		d=$1 ctrun=$2 ref=$3
		shift 3
		echo "$SLURM_JOB_ID.$SLURM_STEP_ID" > "$d/step$SLURM_NODEID"
		read -r _ < "$d/go$SLURM_NODEID"
		if [ "$SLURM_NODEID" = 1 ] && [ $# -gt 0 ]; then exec "$@"; fi
		exec "$ctrun" -v --image "$ref" -- sh -c "echo \"\$(hostname) ran\""' \
		_ "$TMPD" "$CTRUN" "$r" "$@" > out 2> err &
	step_pid=$!
	wait_lines step0 1 60 || fail "the step did not start"
	step=$(cat step0)
	# runner/deliver/feed_step.c, feed_port
	port=$((10000 + (${step%.*} * 16 + ${step#*.} % 16 + 11000) % 22000))
	trap 'kill "$step_pid" 2>/dev/null || true; scancel "${step%.*}" 2>/dev/null || true; stop_attacker' EXIT
}
release() {
	timeout 120 sh -c 'echo go > "$1"' _ "$TMPD/go$1" || fail "node $1's task never waited"
}
# The step's end: its output shown, its status in rc.
step_done() {
	run_rc wait "$step_pid"
	cat out err
}
# attack NODE MODE ARG...: feed_peer.py as the attacker on NODE, in the
# background, its lines in attack.txt.
attack() {
	local n=$1
	shift
	rm -f attack.txt
	"$CLUSTER" exec "$n" su "$attacker" -s /bin/bash -c "exec python3 $(printf '%q ' "$PEER" "$@")" \
		> attack.txt 2>&1 &
}
# wait_line FILE ERE: until a line of FILE matches (a guard of 60 s).
wait_line() {
	local i
	for ((i = 0; i < 1200; i++)); do
		grep -qE -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.05
	done
	cat "$1" 2>/dev/null || true
	fail "no line '$2' in $1"
}
# A step of $ref whose node 0's feed port the attacker holds before node
# 0's ctrun starts, and never answers on (feed_peer.py silent).
step_with_impostor() {
	start_step "$ref"
	attack "$N0" silent "$port"
	wait_line attack.txt '^listening$'
	release 0
	release 1
	step_done
	stop_attacker
	cat attack.txt
}
image_sum() { reg_node_image_sum "$1" "$local_store" "$digest"; }
# Node 1 got the image from node 0 (ctrun -v says so, and nothing of it
# was asked of the registry twice): one manifest request and each blob
# once since $1 and $2, the same file on both nodes.
fed() {
	assert_eq 0 "$rc" "the step"
	assert_eq 2 "$(grep -c ' ran$' out)" "nodes that ran the image"
	grep -q "(from node $N0)" err || fail "node 1 was not fed by node 0"
	! grep -q 'from the registry' err || fail "a node pulled for itself"
	assert_eq 1 $(($(manifests) - $1)) "manifest requests of the step"
	assert_eq 3 $(($(blob_gets) - $2)) "blob GETs of the step (config and two layers, once)"
	assert_eq "$(image_sum "$N0")" "$(image_sum "$N1")" "the image file on $N1"
}

# Point 4: the attacker holds node 0's feed port before node 0's ctrun, and
# answers nothing.  Node 1 cannot tell it from node 0 pulling a large
# image, except by the missing acknowledgement.
silent_impostor() {
	local m0 left
	local_stores_gone
	m0=$(manifests)
	step_with_impostor
	assert_eq 0 "$rc" "the step with a silent listener on node 0's feed port"
	assert_eq 2 "$(grep -c ' ran$' out)" "nodes that ran the image"
	grep -q '^hello 268$' attack.txt || fail "node 1 never reached the impostor"
	grep -q "image from the step's node $N0 failed (port $port: no acknowledgement within 20 s: what listens there is not a node of this step" err ||
		fail "node 1 did not say in one line why it pulls for itself"
	grep -q "pulling docker://.* from the registry" err || fail "node 1 did not pull for itself"
	assert_eq 2 $(($(manifests) - m0)) "manifest requests of the step (each node pulled)"
	left=$("$CLUSTER" exec "$N1" sh -c 'ls "$1/tmp" | grep -v "\.part$" || true' _ "$local_store")
	[ -z "$left" ] || fail "left in $N1's tmp/: $left"
}

# Point 5: 40 idle connections of the attacker on node 0's port, each
# closed one opened again, before and while node 1 connects: more than
# node 0 used to read in its 60 s (one at a time, 5 s each), fewer than its
# listen backlog held.  (64 places and more: tests/unit/runner/deliver/test_feed_serve.c.)
idle_flood() {
	local m0 b0
	local_stores_gone
	m0=$(manifests) b0=$(blob_gets)
	start_step "$ref"
	attack "$N1" flood "$N0" "$port" 40
	release 0
	wait_line attack.txt '^flooding$'
	release 1
	step_done
	stop_attacker
	fed "$m0" "$b0"
	# Node 0 closed the strangers' connections (at their deadline, to
	# make room, or once node 1 was in).
	[ "$(grep -c '^closed$' attack.txt || true)" -ge 40 ] ||
		fail "node 0 did not close the idle connections: $(sort attack.txt | uniq -c)"
}

# Point 6: a hello made for the next link of a longer chain (from the node
# after node 1 to node 1, position 2: what a listener on the network saw
# there), replayed to node 0 before node 1 connects.  Its MAC is the job's.
replayed_hello() {
	local m0 b0
	local_stores_gone
	m0=$(manifests) b0=$(blob_gets)
	start_step "$ref"
	python3 "$PEER" hello "$CTRUN_JOB_SECRET" "${step%.*}" "${step#*.}" "$N1" "${N1}x" 2 > hello.bin
	release 0
	attack "$N1" replay "$N0" "$port" "$TMPD/hello.bin"
	wait_line attack.txt '^answered [0-9]+$'
	release 1
	step_done
	cat attack.txt
	assert_eq "answered 0" "$(grep '^answered ' attack.txt)" "what node 0 sent the replayed hello"
	fed "$m0" "$b0"
}

# Point 6: node 1 is a task that says a valid hello and never reads (a
# node whose ctrun was stopped, a full disk): node 0 must drop it and run,
# with an image larger than the socket buffers between them.
stopped_reading() {
	local_stores_gone
	start_step "$big_ref" python3 "$PEER" stall "$N0" "$N1"
	release 0
	release 1
	step_done
	assert_eq 0 "$rc" "the step with a node that stops reading"
	grep -q "^\[rank0\]: $N0 ran$" out || fail "node 0 did not run"
	grep -q '^acked$' out || fail "node 0 did not acknowledge node 1"
	grep -q '^dropped$' out || fail "node 0 did not drop node 1"
	grep -q "image feed to the step's node $N1: it took nothing for 20 s (it stopped reading): dropped; it pulls for itself" err ||
		fail "node 0 did not say in one line that it dropped node 1"
}

# Point 7: with [registry] feed = off, no node listens on the feed's port
# (the attacker holds it: a node that tried would say so) or connects to
# it (the attacker would print its hello); each node pulls for itself.
feed_off() {
	local m0
	local_stores_gone
	m0=$(manifests)
	export CTRUN_REGISTRY_FEED=off
	step_with_impostor
	assert_eq 0 "$rc" "the step with feed = off"
	assert_eq 2 "$(grep -c ' ran$' out)" "nodes that ran the image"
	assert_eq 2 "$(grep -c 'no image feed between the step.s nodes (\[registry\] feed = off): each node pulls for itself' err)" \
		"nodes that said the feed is off"
	! grep -q 'listening on port' err || fail "a node tried to listen on the feed's port"
	grep -q '^listening$' attack.txt || fail "the attacker did not hold the port"
	! grep -q '^hello' attack.txt || fail "a node connected to the feed's port"
	assert_eq 2 $(($(manifests) - m0)) "manifest requests of the step (each node pulled)"
}

behaviour "a silent listener on node 0's feed port: node 1 gets no acknowledgement, pulls itself, says why" silent_impostor
behaviour "40 idle connections on node 0's feed port: node 1 still gets in and is fed" idle_flood
behaviour "a hello made for another link, replayed to node 0: dropped without a byte, node 1 fed" replayed_hello
behaviour "a node below that stops reading: node 0 drops it in one line and runs" stopped_reading
behaviour "[registry] feed = off: no node listens or connects, each pulls for itself" feed_off
