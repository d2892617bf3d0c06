#!/bin/bash
# Runs the cmocka unit test binaries given as arguments and sums their
# verdicts.  A skipped test that tests/skips.allowed does not name counts
# as failed (a test that did not run proves nothing); allowed skips go to
# build/tests/unit.skips with their reason.  Writes "unit: N passed, N
# failed, N skipped" last; exits 1 if any test failed or a binary crashed.
set -u
out_dir=${CTRUN_BUILD:-build}/tests # the counts and skips for tests/check.sh
passed=0 failed=0 skipped=0 crashed=0
mkdir -p "$out_dir"
: > "$out_dir/unit.skips"
for bin in "$@"; do
	out=$("$bin" 2>&1)
	rc=$?
	printf '%s\n' "$out"
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' <<<"$out" | tail -1)
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' <<<"$out" | tail -1)
	passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0}))
	if [ -z "$p$f" ] || { [ "$rc" -ne 0 ] && [ -z "$f" ]; }; then
		echo "unit: $bin exited $rc without a cmocka verdict" >&2
		crashed=$((crashed + 1)); failed=$((failed + 1))
	fi
	# Each skipped test once (cmocka names it when it skips and again in the list).
	for s in $(sed -n 's/^\[  SKIPPED \] \(test_[A-Za-z0-9_]*\)$/\1/p' <<<"$out" | sort -u); do
		reason=$(sed -n "s/^$s[[:space:]]\+//p" tests/skips.allowed)
		if [ -n "$reason" ]; then
			skipped=$((skipped + 1))
			echo "$s: $reason" >> "$out_dir/unit.skips"
		else
			echo "unit: $bin: $s skipped, and tests/skips.allowed does not list it" >&2
			failed=$((failed + 1))
		fi
	done
done
echo "unit${CTRUN_UNIT_LABEL:+ ($CTRUN_UNIT_LABEL)}: $passed passed, $failed failed, $skipped skipped"
echo "$passed $failed $skipped" > "$out_dir/unit.counts"
[ "$failed" -eq 0 ]
