#!/bin/bash
# One registry download per job step on node-local stores (issue 32, point
# 4): in node and task mode with each node's own store, the step's node 0
# resolves and pulls, the other nodes get the image from the step's nodes
# (runner/deliver/feed.h), so the registry's access log shows ONE manifest request
# and ONE GET of each blob for the whole step, and every node's store holds
# the same image file and the same layer record (node 0's, carried by the
# feed: a fed node is a base for layer reuse); so does batch mode without --stage.  A node whose route to the registry is cut (a proxy
# that refuses, for that node only) still starts.  A stranger on node 0's
# feed port (another user, there before node 0's ctrun) cannot feed node 1:
# what it sends is refused, node 1 pulls from the registry itself and
# nothing half-made stays in its store's images/ or tmp/.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
. "$(dirname "$0")/reglib.sh"
reg_image_storage STORAGE
local_store=$CTRUN_CLUSTER_SCRATCH/store-feed-$$
attacker=$("$CTRUN_REPO/tests/cluster/ensure-user.sh" ctrunmallory)
N0=${NODES[0]} N1=${NODES[1]}
stop_attacker() { "$CLUSTER" exec "$N0" pkill -KILL -u "$attacker" 2>/dev/null || true; }
local_stores_gone() {
	local n
	for n in "${NODES[@]}"; do "$CLUSTER" exec "$n" rm -rf "$local_store" || true; done
}
trap 'stop_attacker; local_stores_gone; cleanup_tmp' EXIT
cd "$TMPD"
reg_start --storage "$STORAGE"
reg_client "$TMPD/auth.json"
export CTRUN_REGISTRY_STORE=$local_store CTRUN_REGISTRY_STORE_SHARED=auto
ref=docker://$REG_HOST/ctrun-test/busybox:latest
digest=$(reg_digest ctrun-test/busybox:latest)
manifests() { reg_busybox_manifests; }
blob_gets() { reg_busybox_blob_gets; }
# The image file in node N's store: its SHA-256, or "none".
image_sum() { reg_node_image_sum "$1" "$local_store" "$digest"; }
# The image's layer record in node N's store (layer reuse's,
# images/sha256-HEX.layers), or "none".
image_record() {
	"$CLUSTER" exec "$1" sh -c 'cat "$1" 2>/dev/null || echo none' _ \
		"$local_store/images/sha256-${digest#sha256:}.layers"
}
# The same image file on every node, and the same layer record: a node fed
# its image is a base for layer reuse as node 0, which pulled it, is.
same_image_everywhere() {
	local n s0 r0
	s0=$(image_sum "$N0") r0=$(image_record "$N0")
	[ "$s0" != none ] || fail "no image in $N0's store"
	[ "$r0" != none ] || fail "no layer record in $N0's store"
	for n in "${NODES[@]}"; do
		assert_eq "$s0" "$(image_sum "$n")" "the image file on $n"
		assert_eq "$r0" "$(image_record "$n")" "the layer record on $n"
	done
}
# Nothing half-made in node N's store.
store_clean() {
	local left
	left=$("$CLUSTER" exec "$1" sh -c 'ls "$1/tmp" | grep -v "\.part$" || true' _ "$local_store")
	[ -z "$left" ] || fail "left in $1's tmp/: $left"
	# The image, and its layer list (layer reuse's record,
	# images/sha256-HEX.layers: same_image_everywhere checks it).
	assert_eq "sha256-${digest#sha256:}.sqsh" \
		"$("$CLUSTER" exec "$1" ls "$local_store/images" | grep -vx "sha256-${digest#sha256:}\.layers")" \
		"what $1's images/ holds"
}

# After a step or job of $3 tasks whose output is in $2 ($1: what ran):
# one manifest request and each blob once since $4 and $5 (the counts
# before), the same image on every node, nothing half-made on node 1.
one_pull() {
	cat "$2"
	assert_eq 0 "$rc" "$1"
	assert_eq "$3" "$(grep -c ' busybox$' "$2")" "tasks that ran the image"
	reg_wait_requests '^GET /v2/ctrun-test/busybox/blobs/sha256:[0-9a-f]{64} 200$' $(($5 + 3)) ||
		fail "node 0 did not download the image's 3 blobs"
	assert_eq 1 $(($(manifests) - $4)) "manifest requests of the step"
	assert_eq 3 $(($(blob_gets) - $5)) "blob GETs of the step (config and two layers, once)"
	same_image_everywhere
	store_clean "$N1"
}

node_mode() {
	local m0 b0
	local_stores_gone
	m0=$(manifests) b0=$(blob_gets)
	run_rc srun -N2 --ntasks-per-node=1 "$CTRUN" --image "$ref" -- sh -c 'echo "$(hostname) $CTRUN_IMAGE_ENV"' > out
	one_pull "node mode on node-local stores" out 2 "$m0" "$b0"
}

task_mode() {
	local m0 b0
	local_stores_gone
	m0=$(manifests) b0=$(blob_gets)
	run_rc srun -N2 --ntasks-per-node=2 "$CTRUN" --image "$ref" -- sh -c 'echo "$RANK $CTRUN_IMAGE_ENV"' > out
	one_pull "task mode on node-local stores" out 4 "$m0" "$b0"
}

# Batch mode without --stage: the batch script's ctrun pulls on the job's
# first node and hands the digest on; node 1 lacks it in its own store and
# used to pull it from the registry again.
batch_mode() {
	local m0 b0
	local_stores_gone
	m0=$(manifests) b0=$(blob_gets)
	cat > job.sh <<JOB
#!/bin/bash
"$CTRUN" --image "$ref" -- sh -c 'echo "\$(hostname) \$CTRUN_IMAGE_ENV"'
JOB
	run_rc sbatch --wait --quiet -N2 -o "$TMPD/job.out" job.sh
	one_pull "batch mode on node-local stores" job.out 2 "$m0" "$b0"
}

no_route() {
	local m0
	local_stores_gone
	m0=$(manifests)
	# Node 1 reaches the registry only through a proxy that refuses (port 9 of its loopback).
	# shellcheck disable=SC2016
	run_rc srun -N2 --ntasks-per-node=1 bash -c 'if [ "$SLURM_NODEID" = 1 ]; then
		export https_proxy=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 no_proxy= NO_PROXY=; fi
		exec "$1" --image "$2" -- sh -c "echo \"\$(hostname) \$CTRUN_IMAGE_ENV\""' \
		_ "$CTRUN" "$ref" > out 2> err
	cat out err
	assert_eq 0 "$rc" "a step with a node that cannot reach the registry"
	assert_eq 2 "$(grep -c ' busybox$' out)" "nodes that ran the image"
	assert_eq 1 $(($(manifests) - m0)) "manifest requests of the step"
	same_image_everywhere
}

# The attacker, on node 0, listens on the step's feed port before node 0's
# ctrun starts (the step's nodes wait for $TMPD/go), answers each hello with
# a head of garbage and the image's digest (it cannot MAC it), and prints
# one line per connection.
cat > forge.py <<'P'
import os, socket, sys
port, digest, ready = int(sys.argv[1]), sys.argv[2].encode(), sys.argv[3]
s = socket.socket()
s.bind(("0.0.0.0", port))
s.listen(8)
open(ready, "w").close()
while True:
    c, _ = s.accept()
    hello = c.recv(200, socket.MSG_WAITALL)
    # struct feed_head (runner/deliver/feed.h): magic, size, status, layers, digest, msg, mac
    head = b"CTRUNIF2" + (1 << 20).to_bytes(8, "big") + (0).to_bytes(4, "big")
    head += (0).to_bytes(4, "big") + digest.ljust(80, b"\0") + b"".ljust(256, b"\0")
    head += os.urandom(32)
    try:
        c.sendall(head + os.urandom(1 << 20) + os.urandom(64))
    except OSError:
        pass
    print("fed", len(hello), flush=True)
    c.close()
P
chmod 644 forge.py

forged() {
	local step port i
	local_stores_gone
	rm -f go ready
	# shellcheck disable=SC2016
	srun -N2 --ntasks-per-node=1 bash -c 'while [ ! -e "$1/go" ]; do sleep 0.05; done
		exec "$2" --image "$3" -- sh -c "echo \"\$(hostname) \$CTRUN_IMAGE_ENV\""' \
		_ "$TMPD" "$CTRUN" "$ref" > out 2> err &
	job=$!
	step=""
	for ((i = 0; i < 400; i++)); do
		step=$(squeue -h -s -o %i | grep -E '^[0-9]+\.[0-9]+$' | head -1) || true
		[ -n "$step" ] && break
		sleep 0.05
	done
	[ -n "$step" ] || { touch go; wait "$job" || true; fail "no step in squeue"; }
	# runner/deliver/feed_step.c, feed_port
	port=$((10000 + (${step%.*} * 16 + ${step#*.} % 16 + 11000) % 22000))
	"$CLUSTER" exec "$N0" su "$attacker" -s /bin/bash -c \
		"exec $PY '$TMPD/forge.py' $port $digest '$TMPD/ready'" > forge.txt 2>&1 &
	for ((i = 0; i < 200; i++)); do [ -e ready ] && break; sleep 0.05; done
	touch go
	run_rc wait "$job"
	stop_attacker
	cat out err forge.txt
	[ -e ready ] || fail "the attacker never listened"
	assert_eq 0 "$rc" "the step with a forger on node 0's feed port"
	assert_eq 2 "$(grep -c ' busybox$' out)" "nodes that ran the image"
	grep -q 'is not from a node of the job .*: refused' err || fail "node 1 did not refuse the forger"
	grep -q "pulling $digest from the registry\|pulling .*busybox.* from the registry" err ||
		fail "node 1 did not say it pulls for itself"
	grep -q '^fed 200$' forge.txt || fail "node 1 never reached the forger"
	same_image_everywhere
	store_clean "$N1"
}

behaviour "node mode, node-local stores: one manifest request and each blob once per step" node_mode
behaviour "task mode, node-local stores: one manifest request and each blob once per step" task_mode
behaviour "batch mode, node-local stores: the batch node pulls, node 1 takes it from the step" batch_mode
behaviour "a node whose route to the registry is cut still starts" no_route
behaviour "a stranger on node 0's feed port is refused; node 1 pulls itself, nothing half-made" forged
