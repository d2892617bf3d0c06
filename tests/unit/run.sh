#!/bin/bash
# Runs the cmocka unit test binaries given as arguments and sums their
# verdicts.  Writes "unit: N passed, N failed, N skipped" last; exits 1 if
# any test failed or a binary crashed.
set -u
passed=0 failed=0 skipped=0 crashed=0
for bin in "$@"; do
	out=$("$bin" 2>&1)
	rc=$?
	printf '%s\n' "$out"
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' <<<"$out" | tail -1)
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' <<<"$out" | tail -1)
	s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' <<<"$out" | tail -1)
	passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0})); skipped=$((skipped + ${s:-0}))
	if [ -z "$p$f" ] || { [ "$rc" -ne 0 ] && [ -z "$f" ]; }; then
		echo "unit: $bin exited $rc without a cmocka verdict" >&2
		crashed=$((crashed + 1)); failed=$((failed + 1))
	fi
done
echo "unit: $passed passed, $failed failed, $skipped skipped"
mkdir -p build/tests && echo "$passed $failed $skipped" > build/tests/unit.counts
[ "$failed" -eq 0 ]
