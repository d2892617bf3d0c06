#!/bin/bash
# Unit test over the --dry-run corpus (tests/dryrun/corpus.sh): a part of it
# (CTRUN_CORPUS_FILTER, default below: every runtime and option over a
# squashfs and a directory, every launch mode, the shell and env commands,
# --runtime auto on each set of installed runtimes, in the GPU pass) run
# with this tree's build/ctrun.  What a dry run promises, for every case:
#   - its exit status is 0, 2 (usage) or 125 (ctrun failed before a worker);
#   - a failure ends with one line "ctrun: WHY" on stderr, a success prints
#     the plan on stdout;
#   - it leaves nothing behind: no run directory, cache entry, log or image.
# With CTRUN_DRYRUN_BASE=REV it also compares every case byte for byte with
# REV's build (corpus.sh compare): what a refactor must keep;
# CTRUN_CORPUS_BIN=DIR runs DIR/ctrun instead of build/ctrun.  Needs root,
# as make check runs (a mount namespace, the test user).
# Prints cmocka's verdict lines, so tests/unit/run.sh counts it like the rest.
set -u
repo=$(cd "$(dirname "$0")/../.." && pwd)
corpus=$repo/tests/dryrun/corpus.sh
out=$repo/build/tests/dryrun
passed=0 failed=0
ok() { echo "[       OK ] $1"; passed=$((passed + 1)); }
bad() { echo "[  FAILED  ] $1: $2"; failed=$((failed + 1)); }
filter='^(opt\.(oci|enroot|apptainer|charliecloud)\.(squashfs|dir)\.|ctx\.gpu\.user\.(node|task)\.[a-z]+\.[a-z]+\.(plain|options)$|cmd\.gpu\.user\.node\.|auto\.gpu\.root\.|bare\.gpu|warm\.gpu\.user\.)'

mkdir -p "$out"
if CTRUN_CORPUS_FILTER=${CTRUN_CORPUS_FILTER:-$filter} "$corpus" run "$out" "${CTRUN_CORPUS_BIN:-$repo/build}" >"$out.log" 2>&1; then
	ok "the corpus runs ($(sed -n 's/^corpus: \([0-9]*\) cases.*/\1/p' "$out.log") cases)"
else
	bad "the corpus runs" "$(tail -3 "$out.log")"
fi

codes="" silent="" empty="" n=0
for x in "$out"/*.x; do
	[ -e "$x" ] || break
	c=${x%.x} n=$((n + 1))
	read -r rc <"$x"
	case $rc in
	0) [ -s "$c.o" ] || empty+=" ${c##*/}" ;;
	2 | 125)
		mapfile -t lines <"$c.e"
		[ "${#lines[@]}" -gt 0 ] && [ "${lines[-1]:0:7}" = "ctrun: " ] || silent+=" ${c##*/}" ;;
	*) codes+=" ${c##*/}($rc)" ;;
	esac
done
[ "$n" -gt 0 ] || codes="(no case ran)"
[ -z "$codes" ] && ok "every exit status is 0, 2 or 125" ||
	bad "every exit status is 0, 2 or 125" "$(echo $codes | cut -c1-400)"
[ -z "$silent" ] && ok "every failure ends with a 'ctrun: ' line" ||
	bad "every failure ends with a 'ctrun: ' line" "$(echo $silent | cut -c1-400)"
[ -z "$empty" ] && ok "every success prints its plan" ||
	bad "every success prints its plan" "$(echo $empty | cut -c1-400)"
left=$(cat "$out"/.leftovers-* 2>/dev/null)
[ -z "$left" ] && ok "a dry run leaves nothing behind" ||
	bad "a dry run leaves nothing behind" "$(echo $left | cut -c1-400)"

if [ -n "${CTRUN_DRYRUN_BASE:-}" ]; then
	if got=$("$corpus" compare "$CTRUN_DRYRUN_BASE" 2>&1); then
		ok "byte for byte as $CTRUN_DRYRUN_BASE"
	else
		bad "byte for byte as $CTRUN_DRYRUN_BASE" "$(echo "$got" | head -20)"
	fi
fi

echo "[==========] $((passed + failed)) test(s) run."
echo "[  PASSED  ] $passed test(s)."
[ "$failed" -eq 0 ] || echo "[  FAILED  ] $failed test(s)."
[ "$failed" -eq 0 ]
