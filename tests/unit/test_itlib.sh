#!/bin/bash
# Unit test of tests/integration/lib.sh's behaviours (no cluster needed):
# small test files run as the integration runner runs them, and their exit
# status and lines compared with what lib.sh promises: every behaviour runs
# and reports itself, a failing one (fail, a failing command, a failing
# pipeline, a skip the file may not take) fails the file at its end even
# when the file's own trap or exit says otherwise, a skip the file may take
# (tests/skips.allowed) skips it, a top-level failure still ends the file.
# Prints cmocka's verdict lines, so tests/unit/run.sh counts it like the rest.
set -u
cd "$(dirname "$0")/../.."
repo=$(pwd)
passed=0 failed=0
ok() { echo "[       OK ] $1"; passed=$((passed + 1)); }
bad() { echo "[  FAILED  ] $1: $2"; failed=$((failed + 1)); }
d=$(mktemp -d /tmp/ctrun-test-itlib.XXXXXX)
trap 'rm -rf "$d"' EXIT

# itfile NAME BODY: a test file NAME.sh that sources lib.sh, then BODY.
itfile() {
	printf '#!/bin/bash\n. "%s/tests/integration/lib.sh"\n%s\n' "$repo" "$2" >"$d/$1.sh"
}
# runit NAME: runs it as run.sh does; sets $rc and $out (stdout and stderr).
runit() {
	out=$(cd "$d" && CTRUN_REPO=$repo CTRUN_CLUSTER_NODE_NAMES="n1 n2" bash "$d/$1.sh" 2>&1)
	rc=$?
}
# expect WHAT RC LINE...: the exit status, and each LINE (a whole line) in the output.
expect() {
	local what=$1 want=$2 l
	shift 2
	[ "$rc" = "$want" ] || { bad "$what" "exit $rc, expected $want; output: $out"; return; }
	for l in "$@"; do
		grep -qxF -- "$l" <<<"$out" || { bad "$what" "no line '$l' in: $out"; return; }
	done
	ok "$what"
}

itfile mixed '
ok1() { true; }
by_fail() { fail "deliberately"; echo not-reached-1; }
by_command() { false; echo not-reached-2; }
by_pipeline() { false | cat; echo not-reached-3; }
ok2() { echo "after the failures"; }
behaviour "first passes" ok1
behaviour "fail fails" by_fail
behaviour "a failing command fails" by_command
behaviour "a failing pipeline fails" by_pipeline
behaviour "the next still runs" ok2
echo "top level reached"'
runit mixed
expect "a failing behaviour fails the file, the others run and report" 1 \
	"PASS behaviour first passes" "FAIL behaviour fail fails (exit 1)" "FAIL: deliberately" \
	"FAIL behaviour a failing command fails (exit 1)" "FAIL behaviour a failing pipeline fails (exit 1)" \
	"after the failures" "PASS behaviour the next still runs" "top level reached" \
	"behaviours: 2 passed, 3 failed (fail fails, a failing command fails, a failing pipeline fails), 0 skipped"
if grep -q not-reached <<<"$out"; then bad "a behaviour ends at its failure" "$out"
else ok "a behaviour ends at its failure"; fi

itfile allpass '
a() { [ -d "$TMPD" ]; }
behaviour "one" a
behaviour "two" a'
runit allpass
expect "behaviours that all pass: the file passes" 0 \
	"PASS behaviour one" "PASS behaviour two" "behaviours: 2 passed, 0 failed, 0 skipped"

itfile ownexit '
behaviour "deliberately failing" false
exit 0'
runit ownexit
expect "the file's own exit 0 does not hide a failed behaviour" 1 \
	"FAIL behaviour deliberately failing (exit 1)"

itfile owntrap '
trap "echo own trap ran; cleanup_tmp" EXIT
behaviour "deliberately failing" fail "no"'
runit owntrap
expect "a test's own EXIT trap (ending with cleanup_tmp) keeps the verdict" 1 \
	"own trap ran" "FAIL behaviour deliberately failing (exit 1)"

itfile state '
x=top
set_x() { x=inner; cd /; fail "after setting"; }
see_x() { [ "$x" = top ] && [ "$PWD" = "$TMPD" ] && [ -d "$TMPD" ]; }
cd "$TMPD"
behaviour "sets and fails" set_x
behaviour "sees the top level unchanged" see_x'
runit state
expect "a behaviour's variables, directory and exit stay in it" 1 \
	"FAIL behaviour sets and fails (exit 1)" "PASS behaviour sees the top level unchanged"

itfile globals '
run_rc false
name=top reason=why
sees() { [ "$rc" = 1 ] && [ "$name" = top ] && [ "$reason" = why ]; }
behaviour "sees the file'"'"'s rc, name and reason" sees'
runit globals
expect "a behaviour sees the file's variables, whatever their names (rc, name, ...)" 0 \
	"PASS behaviour sees the file's rc, name and reason"

itfile t_not_allowed '
behaviour "skips" skip "no such thing here"
behaviour "after" true'
runit t_not_allowed
expect "a skip tests/skips.allowed does not allow fails the behaviour and goes on" 1 \
	"FAIL behaviour skips (skipped (no such thing here), and tests/skips.allowed does not list t_not_allowed)" \
	"PASS behaviour after"

# A file tests/skips.allowed names (t_enroot_real) may skip, in a behaviour too.
itfile t_enroot_real '
behaviour "first" true
behaviour "needs enroot" skip "no enroot here"
echo not-reached-4'
runit t_enroot_real
expect "a skip the file may take skips the file" 77 "SKIP behaviour needs enroot: no enroot here" \
	"no enroot here"
if grep -q not-reached <<<"$out"; then bad "an allowed skip ends the file" "$out"
else ok "an allowed skip ends the file"; fi

# A behaviour tests/skips.allowed lets skip alone (FILE:PREFIX): skipped, the
# file goes on and passes; the same skip under another name fails; a file
# line does not allow another file's behaviours.  Its own allow-list here.
mkdir -p "$d/repo/tests"
printf '%s\n' "# NAME REASON" "t_rows:real-enroot   a real enroot is not on every machine" \
	"t_rowsx:other   not this file" > "$d/repo/tests/skips.allowed"
itfile t_rows '
behaviour "real-enroot keeps a file" skip "no enroot here"
behaviour "oci keeps a file" true
echo reached-end'
out=$(cd "$d" && CTRUN_REPO=$d/repo CTRUN_CLUSTER_NODE_NAMES="n1 n2" bash "$d/t_rows.sh" 2>&1); rc=$?
expect "a behaviour allowed as FILE:PREFIX skips alone and the file goes on" 0 \
	"SKIP behaviour real-enroot keeps a file: no enroot here" "PASS behaviour oci keeps a file" \
	"reached-end" "behaviours: 1 passed, 0 failed, 1 skipped"
itfile t_rows2 '
behaviour "real-enroot keeps a file" skip "no enroot here"'
cp "$d/t_rows2.sh" "$d/t_rowsx.sh"
out=$(cd "$d" && CTRUN_REPO=$d/repo CTRUN_CLUSTER_NODE_NAMES="n1 n2" bash "$d/t_rowsx.sh" 2>&1); rc=$?
expect "a FILE:PREFIX line allows only its prefix" 1 \
	"FAIL behaviour real-enroot keeps a file (skipped (no enroot here), and tests/skips.allowed does not list t_rowsx)"
out=$(cd "$d" && CTRUN_REPO=$d/repo CTRUN_CLUSTER_NODE_NAMES="n1 n2" bash "$d/t_rows2.sh" 2>&1); rc=$?
expect "another file's FILE:PREFIX line allows nothing" 1 \
	"FAIL behaviour real-enroot keeps a file (skipped (no enroot here), and tests/skips.allowed does not list t_rows2)"

itfile toplevel '
behaviour "passes" true
fail "set-up failed"
behaviour "never" true'
runit toplevel
expect "a failure at the top level ends the file at once" 1 "FAIL: set-up failed"
if grep -q "behaviour never" <<<"$out"; then bad "nothing after a top-level failure" "$out"
else ok "nothing after a top-level failure"; fi

echo "[  PASSED  ] $passed test(s)."
[ "$failed" -eq 0 ] || echo "[  FAILED  ] $failed test(s)."
[ "$failed" -eq 0 ]
