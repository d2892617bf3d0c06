#!/bin/bash
# The compressor of a pulled image (issue 32, point 2).  For each candidate
# C, `ctrun pull` of the layered torch test image (3 gzip layers) with
# [registry] compression = C into a fresh store: the pull's wall time and
# the squashfs's size; then that image's first start, `true` and
# `python3 -c 'import torch'`, under each runtime here that reads it:
#   ctrun     the OCI runtime, the squashfs mounted where it lies (the
#             kernel's squashfs on a loop device), a fresh node cache;
#   enroot    `enroot start IMG CMD` (squashfuse), fresh enroot directories;
#   singularity  3.4.2 without setuid: `singularity exec IMG true` converts
#             the squashfs to a sandbox first (unsquashfs), one run.
# Every start is from a new copy of the image, made and synced before the
# timed command (a newly pulled image: in the page cache, never read).
# Root.  Median of $BENCH_RUNS (3) runs.  Prints a markdown section.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
CTRUN=$repo/build/ctrun runs=${BENCH_RUNS:-3}
comps=${BENCH_COMPRESSORS:-gzip:1 gzip:6 lz4 zstd:1 zstd:3 zstd:9 none}
[ "$(id -u)" = 0 ] || { echo "bench: compress.sh needs root" >&2; exit 1; }
"$repo/tests/images/build.sh" registry >&2
TMPD=$(mktemp -d /tmp/ctrun-bench-comp.XXXXXX)
# shellcheck source=../integration/reglib.sh
. "$repo/tests/integration/reglib.sh"
trap 'reg_stop; rm -rf "$TMPD"' EXIT
reg_image_storage STORAGE
reg_start --plain --auth none --addr 127.0.0.1 --storage "$STORAGE" >&2
ref=ctrun-test/torch:latest

now() { local t=$EPOCHREALTIME; echo "${t/./}"; }
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
sec() { awk -v u="$1" 'BEGIN {printf "%.2f", u / 1000000}'; }
timed() { # command...: microseconds; its output to stderr, nothing on stdin
	local s e
	s=$(now)
	"$@" </dev/null >&2 || { echo "bench: failed: $*" >&2; return 1; }
	e=$(now)
	echo $((e - s))
}

enroot=$(PATH=/opt/enroot/bin:$PATH command -v enroot || true)
sing=/opt/singularity/bin/singularity
[ -x "$sing" ] || sing=""
pull() { # compressor: the image's path on stdout
	CTRUN_REGISTRY_STORE=$TMPD/store CTRUN_REGISTRY_PLAIN_HTTP=$REG_HOST \
		CTRUN_REGISTRY_COMPRESSION=$1 "$CTRUN" -q pull "docker://$REG_HOST/$ref"
}
copy() { rm -f "$TMPD/new.sqsh"; cp "$1" "$TMPD/new.sqsh"; sync "$TMPD/new.sqsh"; }
ctrun_start() { rm -rf "$TMPD/cache"; CTRUN_CACHE_DIR=$TMPD/cache "$CTRUN" -q --image-mode mount \
	--image "$TMPD/new.sqsh" -- "$@"; }
enroot_start() {
	rm -rf "$TMPD/enroot"
	mkdir -p "$TMPD/enroot/rt" "$TMPD/enroot/cache" "$TMPD/enroot/data"
	ENROOT_RUNTIME_PATH=$TMPD/enroot/rt ENROOT_CACHE_PATH=$TMPD/enroot/cache \
		ENROOT_DATA_PATH=$TMPD/enroot/data PATH="$(dirname "$enroot"):$PATH" \
		"$enroot" start "$TMPD/new.sqsh" "$@"
}
sing_start() { (cd /tmp && "$sing" -s exec "$TMPD/new.sqsh" "$@"); }

cat <<EOF

## The compressor of a pulled image (tests/bench/compress.sh)

\`CTRUN_REGISTRY_COMPRESSION=C ctrun pull docker://HOST/$ref\` (the layered torch test image:
3 gzip layers, 1.4 GB unpacked) into a fresh store, from Debian's docker-registry on loopback,
on $(nproc) cores ($(uname -r)); then the image's first start from a new copy of it (made and
synced before the timed command). **ctrun**: \`ctrun --image-mode mount --image IMG -- CMD\`
(runc, kernel squashfs on a loop device); **enroot**: \`enroot start IMG CMD\` ($(if [ -n "$enroot" ]; then "$enroot" version; else echo absent; fi),
squashfuse); **singularity**: \`singularity exec IMG true\` ($(if [ -n "$sing" ]; then "$sing" version; else echo absent; fi), no setuid: it
unpacks the image into a sandbox first; one run). Seconds, median of $runs runs;
\`-\`: not run, \`no\`: the runtime cannot read it. Command: \`CTRUN_BENCHES=compress.sh make bench\`.

| compressor | pull s | size MB | ctrun \`true\` | ctrun \`import torch\` | enroot \`true\` | enroot \`import torch\` | singularity \`true\` |
|---|---:|---:|---:|---:|---:|---:|---:|
EOF
for c in $comps; do
	p=() ct=() cy=() et=() ey=() st="-"
	for ((i = 1; i <= runs; i++)); do
		rm -rf "$TMPD/store"
		sync
		echo "bench: pull $c run $i" >&2
		p+=("$(timed pull "$c")")
	done
	img=$(pull "$c")
	size=$(stat -c %s "$img")
	for ((i = 1; i <= runs; i++)); do
		copy "$img"
		ct+=("$(timed ctrun_start true)")
		copy "$img"
		cy+=("$(timed ctrun_start python3 -c 'import torch')")
		if [ -n "$enroot" ]; then
			copy "$img"
			et+=("$(timed enroot_start true)")
			copy "$img"
			ey+=("$(timed enroot_start python3 -c 'import torch')")
		fi
	done
	if [ -n "$sing" ]; then
		copy "$img"
		if s=$(timed sing_start true); then st=$(sec "$s"); else st=no; fi
	fi
	cell() { if [ $# -eq 0 ]; then echo "-"; else sec "$(median "$@")"; fi; }
	echo "| $c | $(sec "$(median "${p[@]}")") | $((size / 1000000)) | $(cell "${ct[@]}") | $(cell "${cy[@]}") | $(cell "${et[@]}") | $(cell "${ey[@]}") | $st |"
	echo "bench: $c: pull ${p[*]} ctrun ${ct[*]} / ${cy[*]} enroot ${et[*]:-} / ${ey[*]:-} (µs)" >&2
done
