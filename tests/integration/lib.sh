# Sourced by every integration test: assertions and cluster helpers.
# The runner exports CTRUN (the binary), CTRUN_REPO, CLUSTER (cluster.sh)
# and the cluster's variables (SLURM_CONF, CTRUN_CLUSTER_NODE_NAMES, ...).
set -euo pipefail

PY=/usr/bin/python3 # Debian's torch is importable by this one only
read -r -a NODES <<<"$CTRUN_CLUSTER_NODE_NAMES"

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "$*"; exit 77; }
note() { echo "--- $*" >&2; }

# ---- behaviours: each reports itself, a failure does not stop the file ----
#
#   behaviour NAME CMD [ARG...]
#       Runs CMD ARG... (usually a function of the test file) in a subshell
#       under `set -euo pipefail`: `fail`, a failed assertion or a failing
#       command ends that behaviour only, and the file goes on with the next.
#       Prints "--- NAME" before it and one verdict line after it:
#           PASS behaviour NAME
#           FAIL behaviour NAME (exit N)
#           SKIP behaviour NAME: REASON
#       A behaviour that calls `skip` is skipped alone, and the file goes
#       on, when tests/skips.allowed has a line `FILE:PREFIX` (the file's
#       name without .sh, a colon, the start of the behaviour's name: the
#       real-enroot rows of a file that tests every runtime); it skips the
#       whole file (exit 77) when tests/skips.allowed names the file, as a
#       skip at the top level does; otherwise it is a failed behaviour (a
#       test that did not run proves nothing).  tests/integration/run.sh
#       counts each "SKIP behaviour" line of a passing file as one skip.  Variables a behaviour sets and its `cd` stay in it: what
#       several behaviours need is set up at the top level, where a failure
#       still ends the file at once.
#   The verdict: cleanup_tmp, which lib.sh puts in the EXIT trap and every
#   EXIT trap of a test ends with, prints "behaviours: N passed, N failed
#   (NAME, ...)" and makes the file exit 1 if any behaviour failed, whatever
#   its own exit; otherwise the file's exit is its own.  tests/integration/run.sh
#   also fails a file whose log has a "FAIL behaviour" line.
BEHAVIOURS_PASSED=0 BEHAVIOURS_FAILED=0 BEHAVIOURS_SKIPPED=0 BEHAVIOURS_FAILED_NAMES=""
# behaviour_may_skip NAME: tests/skips.allowed lets this file skip NAME alone.
behaviour_may_skip() {
	local f p
	f=$(basename "$0" .sh)
	while read -r p _; do
		case $p in "$f":?*) [[ "$1" == "${p#"$f":}"* ]] && return 0 ;; esac
	done < <(grep -E "^$f:" "${CTRUN_REPO:-.}/tests/skips.allowed" 2>/dev/null)
	return 1
}
_behaviour_skipfile=""
behaviour() {
	# Its locals have names no test uses: a behaviour sees the test's own
	# variables (rc, name, ...) through them.
	local _b_name=$1 _b_rc _b_reason
	shift
	[ $# -gt 0 ] || fail "behaviour '$_b_name': no command"
	echo "--- $_b_name" >&2
	[ -n "$_behaviour_skipfile" ] || _behaviour_skipfile=$(mktemp /tmp/ctrun-it-skip.XXXXXX)
	: >"$_behaviour_skipfile"
	set +e
	(
		set -euo pipefail
		skip() { echo "$*"; echo "$*" >"$_behaviour_skipfile"; exit 77; }
		"$@"
	)
	_b_rc=$?
	set -e
	if [ "$_b_rc" -eq 0 ]; then
		BEHAVIOURS_PASSED=$((BEHAVIOURS_PASSED + 1))
		echo "PASS behaviour $_b_name"
		return 0
	fi
	_b_reason=$(cat "$_behaviour_skipfile" 2>/dev/null || true)
	if [ "$_b_rc" -eq 77 ] && [ -n "$_b_reason" ]; then
		if behaviour_may_skip "$_b_name"; then
			BEHAVIOURS_SKIPPED=$((BEHAVIOURS_SKIPPED + 1))
			echo "SKIP behaviour $_b_name: $_b_reason"
			return 0
		fi
		if grep -qE "^$(basename "$0" .sh)([[:space:]]|\$)" "${CTRUN_REPO:-.}/tests/skips.allowed" 2>/dev/null; then
			echo "SKIP behaviour $_b_name: $_b_reason"
			skip "$_b_reason"
		fi
		_b_reason="skipped ($_b_reason), and tests/skips.allowed does not list $(basename "$0" .sh)"
	else
		_b_reason="exit $_b_rc"
	fi
	BEHAVIOURS_FAILED=$((BEHAVIOURS_FAILED + 1))
	BEHAVIOURS_FAILED_NAMES+="${BEHAVIOURS_FAILED_NAMES:+, }$_b_name"
	echo "FAIL behaviour $_b_name ($_b_reason)"
	return 0
}

# The behaviours' verdict (in cleanup_tmp): exit 1 if one failed.
behaviours_verdict() {
	rm -f "$_behaviour_skipfile"
	[ $((BEHAVIOURS_PASSED + BEHAVIOURS_FAILED + BEHAVIOURS_SKIPPED)) -gt 0 ] || return 0
	echo "behaviours: $BEHAVIOURS_PASSED passed, $BEHAVIOURS_FAILED failed${BEHAVIOURS_FAILED_NAMES:+ ($BEHAVIOURS_FAILED_NAMES)}, $BEHAVIOURS_SKIPPED skipped"
	[ "$BEHAVIOURS_FAILED" -eq 0 ] || exit 1
}

assert_eq() { # expected actual what
	[ "$1" == "$2" ] || fail "$3: expected '$1', got '$2'"
}

# A scratch directory every node and any test user can reach (/tmp is shared).
TMPD=$(mktemp -d /tmp/ctrun-it.XXXXXX)
chmod 777 "$TMPD"
# Every EXIT trap of a test ends with cleanup_tmp: it also gives the
# behaviours' verdict (an exit 1 here is the file's exit).
cleanup_tmp() { rm -rf "$TMPD"; behaviours_verdict; }
trap cleanup_tmp EXIT

# wait_lines FILE N SECS: until FILE has N lines (the event a test waits
# for); false after SECS, a guard against a hang, not a timing.
wait_lines() {
	local i
	for ((i = 0; i < $3 * 20; i++)); do
		[ "$({ wc -l < "$1"; } 2>/dev/null || echo 0)" -ge "$2" ] && return 0
		sleep 0.05
	done
	return 1
}

# wait_distinct FILE N SECS: until FILE has N different lines (a signal
# that reaches a worker twice, from ctrun and from slurmstepd, logs twice).
wait_distinct() {
	local i
	for ((i = 0; i < $3 * 20; i++)); do
		[ "$({ sort -u "$1" | wc -l; } 2>/dev/null || echo 0)" -ge "$2" ] && return 0
		sleep 0.05
	done
	return 1
}

# wait_job_gone JOB SECS: until Slurm no longer lists the job.
wait_job_gone() {
	local i
	for ((i = 0; i < $2 * 20; i++)); do
		[ -z "$(squeue -h -j "$1" 2>/dev/null)" ] && return 0
		sleep 0.05
	done
	return 1
}

# A group and users of one test's own (a group image store's members):
# test_members GROUP USER... makes GROUP and each USER that is missing (as
# tests/cluster/ensure-user.sh does) and puts every USER in GROUP;
# test_members_gone GROUP USER... (in the test's EXIT trap) ends their jobs and
# processes and removes them and GROUP, also what a killed earlier run left.
# ensure-user.sh's users are kept: add them to GROUP with usermod.
test_members() {
	local g=$1 u
	shift
	getent group "$g" >/dev/null || groupadd "$g"
	for u in "$@"; do
		getent passwd "$u" >/dev/null || useradd --create-home --shell /bin/bash --user-group "$u"
		usermod -a -G "$g" "$u"
	done
}
test_members_gone() {
	local g=$1 u
	shift
	for u in "$@"; do
		getent passwd "$u" >/dev/null || continue
		scancel --quiet --full --user="$u" 2>/dev/null || true
		pkill -KILL -u "$u" 2>/dev/null || true
		userdel -r "$u" 2>/dev/null || userdel "$u" || true
	done
	if getent group "$g" >/dev/null; then groupdel "$g" || true; fi
}

# Runs a command and records its exit status in $rc without tripping set -e.
run_rc() { set +e; "$@"; rc=$?; set -e; }

# Processes matching a pattern on any node (the node's own PID namespace).
leftovers() {
	local n out=""
	for n in "${NODES[@]}"; do
		out+=$("$CLUSTER" exec "$n" pgrep -af -- "$1" 2>/dev/null | grep -v pgrep || true)
	done
	printf '%s' "$out"
}

# Waits up to $2 seconds for no process matching $1 on any node.
assert_no_leftovers() {
	local i left
	for ((i = 0; i < ${2:-10} * 10; i++)); do
		left=$(leftovers "$1")
		[ -z "$left" ] && return 0
		sleep 0.1
	done
	fail "processes left behind matching '$1': $left"
}

# Checks the rank-N.json files of examples/train_ddp.py: every rank once,
# the contract values a torchrun user expects, identical final weights.
# usage: check_ddp DIR NNODES NPROC_PER_NODE
check_ddp() {
	"$PY" - "$1" "$2" "$3" "$CTRUN_CLUSTER_NODE_NAMES" <<'PYEOF'
import json, os, sys
d, nnodes, nproc, nodes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split()
world = nnodes * nproc
files = sorted(f for f in os.listdir(d) if f.startswith("rank-"))
assert len(files) == world, f"expected {world} rank files, got {files}"
digests = set()
for r in range(world):
    j = json.load(open(os.path.join(d, f"rank-{r}.json")))
    env = j["env"]
    want = {"RANK": str(r), "WORLD_SIZE": str(world), "LOCAL_RANK": str(r % nproc),
            "LOCAL_WORLD_SIZE": str(nproc), "NODE_RANK": str(r // nproc),
            "GROUP_RANK": str(r // nproc), "NNODES": str(nnodes)}
    for k, v in want.items():
        assert env[k] == v, f"rank {r}: {k}={env[k]}, expected {v}"
    assert j["host"] == nodes[r // nproc], f"rank {r} ran on {j['host']}, expected {nodes[r // nproc]}"
    assert not env["MASTER_ADDR"].startswith("127."), f"MASTER_ADDR {env['MASTER_ADDR']} is loopback"
    digests.add(j["weights"])
assert len(digests) == 1, f"ranks ended with different weights: {digests}"
print(f"ok: {world} ranks, identical weights {digests.pop()[:16]}")
PYEOF
}
