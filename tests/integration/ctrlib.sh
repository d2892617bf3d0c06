# Sourced after lib.sh by the container tests: the test images
# (tests/images/build.sh), skipping when one is missing.
# usage: need_image VAR NAME  -> VAR=/path/of/NAME, or skip
need_image() {
	local p
	p=$("$CTRUN_REPO/tests/images/build.sh" path "$2")
	[ -e "$p" ] || skip "test image $2 missing (run: tests/images/build.sh ${2%%[.-]*})"
	printf -v "$1" '%s' "$p"
}
# A node-local cache of this test only (the same path on every node, each
# node's private scratch), removed from every node with the test's files.
# usage: private_node_cache NAME
private_node_cache() {
	export CTRUN_CACHE_DIR=$CTRUN_CLUSTER_SCRATCH/$1
	trap private_node_cache_gone EXIT
}
private_node_cache_gone() {
	local n
	for n in "${NODES[@]}"; do "$CLUSTER" exec "$n" rm -rf "$CTRUN_CACHE_DIR" || true; done
	cleanup_tmp
}
# Container processes left on any node (agents, or runc itself).
assert_no_containers() {
	assert_no_leftovers "/.ctrun/agent" "${1:-10}"
	assert_no_leftovers "runc --root $TMPD" 1
}
