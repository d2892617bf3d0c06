# Sourced after lib.sh by the container tests: the test images
# (tests/images/build.sh), skipping when one is missing.
# usage: need_image VAR NAME  -> VAR=/path/of/NAME, or skip
need_image() {
	local p
	p=$("$CTRUN_REPO/tests/images/build.sh" path "$2")
	[ -e "$p" ] || skip "test image $2 missing (run: tests/images/build.sh ${2%%[.-]*})"
	printf -v "$1" '%s' "$p"
}
# Container processes left on any node (agents, or runc itself).
assert_no_containers() {
	assert_no_leftovers "/.ctrun/agent" "${1:-10}"
	assert_no_leftovers "runc --root $TMPD" 1
}
