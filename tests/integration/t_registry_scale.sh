#!/bin/bash
# One set of registry requests per job step, whatever the number of
# tasks (issue 22), against a real registry's access log: node mode on two
# nodes and task mode with four tasks started at the same instant each
# make exactly one manifest request and one GET of each blob; a second job
# with the tag unchanged makes one manifest request and no blob GET.
# A puller killed with -9 mid-pull: the next pull takes its claim over at
# once (same host, its pid gone), keeps nothing half-published, and
# succeeds.  Each node's own store (its private scratch): t_registry_feed.sh.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
. "$(dirname "$0")/reglib.sh"
reg_image_storage STORAGE
cd "$TMPD"
reg_start --storage "$STORAGE"
reg_client "$TMPD/auth.json"
# The nodes share $TMPD (the test cluster's stand-in for a parallel file system).
export CTRUN_REGISTRY_STORE_SHARED=true
ref=docker://$REG_HOST/ctrun-test/busybox:latest
count() { reg_requests | grep -cE "$1" || true; }
manifests() { count '^GET /v2/ctrun-test/busybox/manifests/latest 200$'; }
blob_gets() { count '^GET /v2/ctrun-test/busybox/blobs/sha256:[0-9a-f]{64} 200$'; }
blobs_distinct() { reg_requests | grep -E '^GET /v2/ctrun-test/busybox/blobs/.* 200$' | sort -u | wc -l; }

node_mode() {
	export CTRUN_REGISTRY_STORE=$TMPD/store-node
	run_rc srun -N2 --ntasks-per-node=1 "$CTRUN" --image "$ref" -- sh -c 'echo "$(hostname) $CTRUN_IMAGE_ENV"' > out
	cat out
	assert_eq 0 "$rc" "node mode from the reference"
	assert_eq 2 "$(grep -c ' busybox$' out)" "nodes that ran the image"
	assert_eq 1 "$(manifests)" "manifest requests of the node-mode step"
	assert_eq 3 "$(blob_gets)" "blob GETs of the node-mode step (config and two layers)"
}

task_mode() {
	export CTRUN_REGISTRY_STORE=$TMPD/store-task
	run_rc srun -N2 --ntasks-per-node=2 "$CTRUN" --image "$ref" -- sh -c 'echo "$RANK $CTRUN_IMAGE_ENV"' > out
	cat out
	assert_eq 0 "$rc" "task mode from the reference"
	assert_eq 4 "$(grep -c ' busybox$' out)" "tasks that ran the image"
	assert_eq 2 "$(manifests)" "manifest requests after the task-mode step"
	assert_eq 6 "$(blob_gets)" "blob GETs after the task-mode step"
	assert_eq 3 "$(blobs_distinct)" "distinct blobs"
}

second_job() {
	# The task-mode behaviour's store (its export ended with it).
	export CTRUN_REGISTRY_STORE=$TMPD/store-task
	run_rc srun -N2 --ntasks-per-node=2 "$CTRUN" --image "$ref" -- true
	assert_eq 0 "$rc" "the second job"
	assert_eq 3 "$(manifests)" "manifest requests after the second job"
	assert_eq 6 "$(blob_gets)" "blob GETs after the second job"
	[ -z "$(ls store-task/jobs | grep -v '^[0-9]*\.[0-9]*-[0-9a-f]\{16\}$' || true)" ] || fail "odd job records"
}

killed_puller() {
	export CTRUN_REGISTRY_STORE=$TMPD/store-kill
	tref=docker://$REG_HOST/ctrun-test/torch:latest
	"$CTRUN" -q pull "$tref" > /dev/null 2> kill.err &
	puller=$!
	# Killed here too if the behaviour ends before it does.
	trap 'kill -9 "$puller" 2>/dev/null || true; wait "$puller" 2>/dev/null || true' EXIT
	# The event: it holds the claim and has started writing the image's tree.
	for ((i = 0; i < 600; i++)); do
		ls store-kill/tmp/unpack.* > /dev/null 2>&1 && ls store-kill/tmp/*.claim > /dev/null 2>&1 && break
		sleep 0.05
	done
	ls store-kill/tmp/*.claim > /dev/null 2>&1 || fail "the puller never claimed the image"
	kill -9 "$puller"
	wait "$puller" 2>/dev/null || true
	trap - EXIT
	[ -z "$(ls store-kill/images)" ] || fail "an image was published by a killed puller"
	run_rc "$CTRUN" pull "$tref" > out 2> err
	cat err
	assert_eq 0 "$rc" "the pull after the killed one"
	grep -q "pid $puller, pulling sha256:.* is gone: taking over" err || fail "the takeover is not said"
	[ -z "$(ls store-kill/tmp | grep -v '\.part$' || true)" ] || fail "leftovers in tmp/: $(ls store-kill/tmp)"
	unsquashfs -s "$(cat out)" > /dev/null || fail "the published image is not a whole squashfs"
}

# The requests counted add up over the behaviours, in this order.
behaviour "node mode, two nodes, a fresh store: one manifest request, each blob once" node_mode
behaviour "task mode, four tasks at once, a fresh store" task_mode
behaviour "a second job, the tag unchanged: one manifest request, no blob" second_job
behaviour "a puller killed with -9 mid-pull: taken over at once, nothing half-published" killed_puller
