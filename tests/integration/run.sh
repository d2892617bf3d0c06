#!/bin/bash
# Integration tests on a real Slurm cluster on this machine: brings the
# cluster up once, runs every tests/integration/t_*.sh (or those named in
# $CTRUN_TESTS), tears the cluster down even when a test fails or the run
# is interrupted, and ends with "integration: N passed, N failed, N skipped".
# A test exits 0 (pass), 77 (skip: says why) or anything else (fail).
set -u
cd "$(dirname "$0")/../.."
repo=$(pwd)
export CTRUN_CLUSTER_NAME=${CTRUN_CLUSTER_NAME:-ctit}
export CTRUN_CLUSTER_SUBNET=${CTRUN_CLUSTER_SUBNET:-10.232.0}
export CTRUN_CLUSTER_PORT_BASE=${CTRUN_CLUSTER_PORT_BASE:-17817}
cluster=$repo/tests/cluster/cluster.sh
logs=$repo/build/tests/integration
mkdir -p "$logs"

"$cluster" down >/dev/null 2>&1 || true # what a killed earlier run left
# ctrun keeps per-user run directories under $TMPDIR; tests get a private
# one (every node and test user can reach it: /tmp is shared) that goes away.
TMPDIR=$(mktemp -d /tmp/ctrun-it-tmp.XXXXXX)
chmod 1777 "$TMPDIR"
export TMPDIR
# Tests run as root and as a test user with ctrun's default node caches
# (/tmp/ctrun-cache-UID): those this run creates go at the end, ones that
# were there before stay.
caches_before=$(ls -d /tmp/ctrun-cache-* 2>/dev/null || true)
cleanup() {
	"$cluster" down
	rm -rf "$TMPDIR"
	for d in /tmp/ctrun-cache-*; do
		[ -d "$d" ] && ! grep -qxF "$d" <<<"$caches_before" && rm -rf "$d"
	done
	return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# The test images (busybox: seconds; torch: debootstrap + python3-torch,
# minutes the first time, then cached in /var/cache/ctrun-tests).  A
# container test whose image could not be built says so and skips.
echo "building test images (log: $logs/images.log)"
tests/images/build.sh busybox torch > "$logs/images.log" 2>&1 ||
	echo "test images: build failed, container tests will skip: $(tail -1 "$logs/images.log")"
if ! "$cluster" up > "$logs/cluster-up.log" 2>&1; then
	cat "$logs/cluster-up.log"
	echo "integration: 0 passed, 1 failed, 0 skipped (cluster did not come up)"
	echo "0 1 0" > "$repo/build/tests/integration.counts"
	exit 1
fi
eval "$("$cluster" env)"
export CTRUN_REPO=$repo CTRUN=$repo/build/ctrun CLUSTER=$cluster

tests=${CTRUN_TESTS:-$(cd tests/integration && ls t_*.sh)}
passed=0 failed=0 skipped=0
for t in $tests; do
	t=${t%.sh}
	start=$(date +%s%N)
	timeout -k 10 600 bash "tests/integration/$t.sh" > "$logs/$t.log" 2>&1
	rc=$?
	ms=$((($(date +%s%N) - start) / 1000000)); secs=$((ms / 1000)).$((ms % 1000 / 100))
	# No test may leave jobs behind for the next one.
	scancel --quiet --full "--user=root" 2>/dev/null; scancel --quiet --full --user=ctrunuser 2>/dev/null
	case $rc in
	0) passed=$((passed + 1)); echo "PASS $t (${secs}s)" ;;
	77) skipped=$((skipped + 1)); echo "SKIP $t: $(tail -1 "$logs/$t.log")" ;;
	*) failed=$((failed + 1)); echo "FAIL $t (exit $rc, ${secs}s); last lines of $logs/$t.log:"
	   tail -25 "$logs/$t.log" | sed 's/^/    /' ;;
	esac
done
echo "$passed $failed $skipped" > "$repo/build/tests/integration.counts"
echo "integration: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
