#!/bin/bash
# Runs libFuzzer targets for $FUZZ_TIME seconds each from their corpora in
# $BUILD/fuzz/corpus-NAME (seeded below), and writes "NAME RUNS" lines to
# $BUILD/fuzz/stats.  A crash, leak or failed check fails the run; the input
# is left as $BUILD/fuzz/crash-... (replay: build/fuzz/fuzz_NAME FILE).
#   usage: FUZZ_TIME=60 BUILD=build tests/fuzz/run.sh hostlist sif ...
set -u
cd "$(dirname "$0")/../.."
out=${BUILD:-build}/fuzz
time=${FUZZ_TIME:-60}
mkdir -p "$out"
: > "$out/stats"
failed=0

seed() { # NAME FILE TEXT: a seed input, written once
	mkdir -p "$out/corpus-$1"
	[ -e "$out/corpus-$1/$2" ] || printf '%b' "$3" > "$out/corpus-$1/$2"
}
seed hostlist s1 'n[001-010],m[1,3,5-7]'
seed hostlist s2 'a[1-2]b[1-2]c[1-2]-ib'
seed hostlist s3 '2(x3),1'
seed mounts s1 '/data:/in side:ro'
seed mounts s2 'rel/dir\\:colon::rw'
seed hookjson s1 '\x01{"ociVersion":"1.0.2","id":"c","status":"creating","pid":42,"bundle":"/b","annotations":{"org.ctrun.gpus":"0,1"}}'
seed hookjson s2 '\x00{"ociVersion":"1.0.2","root":{"path":"rootfs","readonly":true},"process":{"env":["A=1"]},"annotations":{}}'
seed imgconfig s1 '{"config":{"Env":["PATH=/usr/bin:/bin","X= spaced ","Q=\\"quoted\\""],"WorkingDir":"/w"}}'
seed options s1 '[run]\nmax_restarts = 2\nkill_timeout = 5\n[container]\nimage = /x.sqsh\nCTRUN_ENV=A=1\n'
# The archive target starts from the small docker and OCI test images.
images=$(tests/images/build.sh path busybox-docker.tar 2>/dev/null)
images=${images%/*}
for f in busybox-docker.tar busybox-oci.tar; do
	[ -f "$images/$f" ] && [ ! -e "$out/corpus-archive/$f" ] && mkdir -p "$out/corpus-archive" &&
		{ if [ "$f" = busybox-oci.tar ]; then printf '\001'; else printf '\000'; fi
		  cat "$images/$f"; } > "$out/corpus-archive/$f"
done

# The targets' scratch files (an archive's box, an image root, an ini file)
# go into a directory of this run, removed at the end: libFuzzer exits
# without the targets' clean-up.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/ctrun-fuzz.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

run() { # NAME [ENV=VALUE...]: one pass, its execution count recorded
	local name=$1 log
	shift
	mkdir -p "$out/corpus-$name"
	log=$out/$name.log
	env TMPDIR="$scratch" "$@" "$out/fuzz_$name" -max_total_time="$time" -max_len=$(
		[ "$name" = archive ] && echo 4194304 || echo 65536) -timeout=20 -rss_limit_mb=4096 \
		-artifact_prefix="$out/" "$out/corpus-$name" > "$log" 2>&1
	local rc=$? runs
	runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$log" | tail -1)
	echo "$name${*:+ ($*)} ${runs:-0}" >> "$out/stats"
	if [ "$rc" -ne 0 ]; then
		echo "fuzz_$name: FAILED (exit $rc); the end of $log:"
		tail -30 "$log" | sed 's/^/    /'
		failed=$((failed + 1))
	else
		echo "fuzz_$name: ${runs:-0} executions in ${time}s, no crash"
	fi
}

for t in "$@"; do
	if [ "$t" = hostlist ]; then
		# The builtin alone first (fast), then against libslurm (a child per input).
		run hostlist CTRUN_FUZZ_BUILTIN_ONLY=1
		run hostlist CTRUN_LIBSLURM_TIMEOUT_MS=1000
	else
		run "$t"
	fi
done
# For tests/check.sh: a pass per target run, a failure per crash.
echo "$(($(wc -l < "$out/stats") - failed)) $failed 0" > "$out/fuzz.counts"
[ "$failed" -eq 0 ]
