#!/bin/bash
# Saving a changed container (issues 24, 32): the torch test image with a
# 100 MB change (incompressible bytes under /usr/local, as a pip install's
# wheels mostly are) kept as a named container, then written as a squashfs,
# same tree, same run: `ctrun save NAME` (enroot's container squashed by
# ctrun) with each compressor of $BENCH_SAVE_COMPRESSORS ([cache]
# compression) and its default, `enroot export` of the same container (its
# ENROOT_SQUASH_OPTIONS, default "-comp lzo -noD"), and a plain `mksquashfs`
# of the same directory (gzip); plus `ctrun save` of an OCI named container
# (the overlay's merged view of the mounted image and the kept layer).  As
# root, median (min) of $BENCH_RUNS (3) runs, sides alternating.  Prints a
# markdown section.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
CTRUN=$repo/build/ctrun runs=${BENCH_RUNS:-3}
comps=${BENCH_SAVE_COMPRESSORS:-gzip:1 lz4 zstd:1 zstd:3}
[ -x /opt/enroot/bin/enroot ] || { echo "bench: save.sh needs /opt/enroot (build-enroot.sh)" >&2; exit 1; }
"$repo/tests/images/build.sh" torch >&2
torch=$("$repo/tests/images/build.sh" path torch.sqsh)
work=$(mktemp -d /var/tmp/ctrun-bench-save.XXXXXX)
export PATH=/opt/enroot/bin:$PATH CTRUN_CACHE_DIR=$work/cache CTRUN_NV=false \
	ENROOT_RUNTIME_PATH=$work/enroot-run ENROOT_CACHE_PATH=$work/enroot-cache
trap 'rm -rf "$work"' EXIT

now() { local t=$EPOCHREALTIME; echo "${t/./}"; }
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
minimum() { printf '%s\n' "$@" | sort -n | head -1; }
sec() { awk -v u="$1" 'BEGIN {printf "%.1f", u / 1000000}'; }
# The default of [cache] compression, as images/squash/sqimage.h says it.
SQ_DEFAULT=$(sed -n 's/^#define SQ_COMP_SAVE "\(.*\)"$/\1/p' "$repo/images/squash/sqimage.h")
change='mkdir -p /usr/local/lib/bench && head -c 104857600 /dev/urandom > /usr/local/lib/bench/blob && rm -f /usr/bin/tac'

"$CTRUN" -q --runtime enroot --image "$torch" --name bench-enroot -- sh -c "$change" >&2
"$CTRUN" -q --runtime oci --image "$torch" --name bench-oci -- sh -c "$change" >&2
tree=$CTRUN_CACHE_DIR/containers/bench-enroot/rootfs
[ -f "$tree/usr/local/lib/bench/blob" ] || { echo "bench: no change in $tree" >&2; exit 1; }

timed() { # OUT CMD...: microseconds on stdout, the file checked
	local out=$1 s e
	shift
	rm -f "$out"
	sync
	s=$(now)
	"$@" > /dev/null 2>&2 || { echo "bench: $* failed" >&2; exit 1; }
	e=$(now)
	[ -s "$out" ] || { echo "bench: $out not written" >&2; exit 1; }
	echo $((e - s))
}
declare -A t
for ((r = 0; r < runs; r++)); do
	t[default]+=" $(timed "$work/ctrun.sqsh" "$CTRUN" -q --runtime enroot save bench-enroot -o "$work/ctrun.sqsh")"
	for c in $comps; do
		t[$c]+=" $(timed "$work/ctrun-$c.sqsh" env CTRUN_CACHE_COMPRESSION="$c" "$CTRUN" -q \
			--runtime enroot save bench-enroot -o "$work/ctrun-$c.sqsh")"
	done
	t[export]+=" $(timed "$work/export.sqsh" env ENROOT_DATA_PATH="$CTRUN_CACHE_DIR/containers/bench-enroot" \
		enroot export -f -o "$work/export.sqsh" rootfs)"
	t[mksquashfs]+=" $(timed "$work/mksquashfs.sqsh" mksquashfs "$tree" "$work/mksquashfs.sqsh" -noappend -quiet -no-progress)"
	t[oci]+=" $(timed "$work/oci.sqsh" "$CTRUN" -q --runtime oci save bench-oci -o "$work/oci.sqsh")"
done
size() { du -m "$1" | cut -f1; }
# shellcheck disable=SC2086
row() { echo "| $1 | $(sec "$(median ${t[$3]})") ($(sec "$(minimum ${t[$3]})")) | $(size "$2") | $(awk -v a="$(median ${t[$3]})" -v b="$(median ${t[export]})" 'BEGIN {printf "%.2f", a / b}') | $(awk -v a="$(size "$2")" -v b="$(size "$work/export.sqsh")" 'BEGIN {printf "%.2f", a / b}') |"; }
echo "bench: save runs (µs): $(for k in "${!t[@]}"; do printf '%s:%s; ' "$k" "${t[$k]}"; done)" >&2
cat <<MD
## Saving a changed container (tests/bench/save.sh)

The torch test image ($(size "$torch") MB squashfs, $(du -sm "$tree" | cut -f1) MB unpacked)
with a 100 MB change (random bytes under /usr/local, a file removed), kept as a named
container, written as a squashfs from the same tree in the same run, as root on
$(nproc) cores shared with other work; seconds, median (min) of $runs run(s); the last two
columns against \`enroot export\` in the same run (targets: time <= 1.0, size <= 0.6).
Command: \`CTRUN_BENCHES=save.sh make bench\`.

| command | seconds | MB written | time / enroot | size / enroot |
|---|---|---|---|---|
$(row "\`ctrun save NAME -o F\` (enroot container, the default [cache] compression: $SQ_DEFAULT)" "$work/ctrun.sqsh" default)
$(for c in $comps; do row "\`CTRUN_CACHE_COMPRESSION=$c ctrun save NAME -o F\`" "$work/ctrun-$c.sqsh" "$c"; done)
$(row "\`enroot export -o F NAME\` (its default \`-comp lzo -noD\`)" "$work/export.sqsh" export)
$(row "\`mksquashfs DIR F\` (gzip, level 9)" "$work/mksquashfs.sqsh" mksquashfs)
$(row "\`ctrun save NAME -o F\` (OCI: merged view of the mounted image and the kept layer; default compression)" "$work/oci.sqsh" oci)

ctrun's save runs mksquashfs over the tree with the compressor of \`[cache] compression\`,
leaving out /.ctrun and enroot's /.lock; enroot export runs mksquashfs with its options
-comp lzo -noD (data blocks not compressed) unless ENROOT_SQUASH_OPTIONS says otherwise.
MD
