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
seed mounts s3 'tmpfs:/scratch:size=64m,mode=1777,huge=within_size'
seed mounts s4 'umount:/home/u/..'
seed hookjson s1 '\x01{"ociVersion":"1.0.2","id":"c","status":"creating","pid":42,"bundle":"/b","annotations":{"org.ctrun.gpus":"0,1"}}'
seed hookjson s2 '\x00{"ociVersion":"1.0.2","root":{"path":"rootfs","readonly":true},"process":{"env":["A=1"]},"annotations":{}}'
seed imgconfig s1 '{"config":{"Env":["PATH=/usr/bin:/bin","X= spaced ","Q=\\"quoted\\""],"WorkingDir":"/w"}}'
seed cdi s1 '\x00\x00{"cdiVersion":"0.5.0","kind":"example.com/fake","containerEdits":{"env":["A=1"]},"devices":[{"name":"dev0","containerEdits":{"deviceNodes":[{"path":"/dev/fake0","hostPath":"/dev/null","type":"c","major":1,"minor":3}],"mounts":[{"hostPath":"/opt","containerPath":"/x","options":["ro","bind"]}],"hooks":[{"hookName":"createContainer","path":"/bin/true","args":["true"],"timeout":5}]}}]}'
seed cdi s2 '\x00\x01---\ncdiVersion: 0.7.0\nkind: example.com/fake\ndevices:\n- name: "0"\n  containerEdits:\n    env: [A=1]\n    additionalGids: [5, 0]\n    deviceNodes:\n    - {path: /dev/x, fileMode: 0644, permissions: rw}\n'
seed cdi s3 '\x01\x00nvidia.com/gpu=0:1'
seed spank s1 '\x01/home:/test-mnt,/var/lib,./data:/data:ro+rprivate'
seed spank s2 'ctrun-spank-reg 1 4242 99\n/work\0PATH=/usr/bin\0\0LD_PRELOAD\0\0'
seed options s1 '[run]\nmax_restarts = 2\nkill_timeout = 5\n[container]\nimage = /x.sqsh\nCTRUN_ENV=A=1\n'
# The registry's parsers: a first byte picks manifest's Content-Type (3: OCI index, 5: docker v2).
seed manifest s1 '\x03{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","size":100,"platform":{"architecture":"arm64","os":"linux","variant":"v8"}},{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","size":566,"platform":{"architecture":"unknown","os":"unknown"}}]}'
seed manifest s2 '\x05{"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json","config":{"mediaType":"application/vnd.docker.container.image.v1+json","size":1469,"digest":"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},"layers":[{"mediaType":"application/vnd.docker.image.rootfs.diff.tar.gzip","size":29534055,"digest":"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}]}'
seed manifest s3 '\x00{"schemaVersion":2,"config":{"mediaType":"application/vnd.oci.image.config.v1+json","size":2,"digest":"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar+zstd","size":1,"digest":"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}]}'
seed challenge s1 'Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/ubuntu:pull"'
seed challenge s2 'Negotiate abc==, Basic realm="Harbor", Bearer realm="https://r.io/t",service="a\\"b"'
seed challenge s3 '{"token":"eyJhbGciOi.x-y_z","access_token":"x","expires_in":300}'
seed ref s1 'docker://USER@nvcr.io#nvidia/pytorch:24.06-py3'
seed ref s2 'reg.local:5000/team/app:v1@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef'
seed ref s3 'ubuntu'
seed creds s1 '# enroot\nmachine nvcr.io login $oauthtoken password $NGC_API_KEY\nmachine auth.docker.io login u password "p w"\n'
seed creds s2 '{"auths":{"https://index.docker.io/v1/":{"auth":"dXNlcjpwYXNz"},"nvcr.io/nvidia":{"username":"u","password":"p"}}}'
# The archive target starts from the small docker and OCI test images.
images=$(tests/images/build.sh path busybox-docker.tar 2>/dev/null)
images=${images%/*}
for f in busybox-docker.tar busybox-oci.tar; do
	[ -f "$images/$f" ] && [ ! -e "$out/corpus-archive/$f" ] && mkdir -p "$out/corpus-archive" &&
		{ if [ "$f" = busybox-oci.tar ]; then printf '\001'; else printf '\000'; fi
		  cat "$images/$f"; } > "$out/corpus-archive/$f"
done

# The streaming writer starts from layers of what costs it most (uncompressed:
# the fuzzer reaches the headers): hard links carrying data, link targets of
# 4095 and 4096 bytes, long names, whiteouts and opaque markers through a
# symlink (tests/integration/reg_layers.py).
[ -e "$out/corpus-stream/0.tar" ] ||
	python3 tests/integration/reg_layers.py --tars "$out/corpus-stream" mixed:4 pairs:16 \
		links:16 rewrite:4 symlinks:2:4095 symlinks:1:4096 files:64:200

# The targets' scratch files (an archive's box, an image root, an ini file)
# go into a directory of this run, removed at the end: libFuzzer exits
# without the targets' clean-up.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/ctrun-fuzz.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

# Each target's longest input and memory: the archive and the streaming
# writer read whole layers; the streaming writer is held to the memory a
# pull of a 1 MiB layer may take (its bounds: fuzz_stream.c), any single
# allocation over 160 MiB a failure (zstd's and lzip's decoders may take
# 128 MiB as a layer's header asks).
limits() {
	case $1 in
	archive) echo -max_len=4194304 -rss_limit_mb=4096 ;;
	stream) echo -max_len=1048576 -rss_limit_mb=1024 -malloc_limit_mb=160 ;;
	*) echo -max_len=65536 -rss_limit_mb=4096 ;;
	esac
}

run() { # NAME [ENV=VALUE...]: one pass, its execution count recorded
	local name=$1 log
	shift
	mkdir -p "$out/corpus-$name"
	log=$out/$name.log
	# shellcheck disable=SC2046 # limits' words are options
	env TMPDIR="$scratch" "$@" "$out/fuzz_$name" -max_total_time="$time" $(limits "$name") \
		-timeout=20 -artifact_prefix="$out/" "$out/corpus-$name" > "$log" 2>&1
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
