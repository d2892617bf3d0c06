#!/bin/bash
# Saving a changed container (issue 24): the torch test image with a 100 MB
# change (incompressible bytes under /usr/local, as a pip install's wheels
# mostly are) kept as a named container, then written as a squashfs three
# ways, same tree, same run: `ctrun save NAME` (enroot's container squashed
# by ctrun, gzip), `enroot export` of the same container (its
# ENROOT_SQUASH_OPTIONS, default "-comp lzo -noD"), and a plain `mksquashfs`
# of the same directory (gzip); plus `ctrun save` of an OCI named container
# (the overlay's merged view of the mounted image and the kept layer).  As
# root, median (min) of $BENCH_RUNS (1) runs, sides alternating.  Prints a
# markdown section.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
CTRUN=$repo/build/ctrun runs=${BENCH_RUNS:-1}
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
a=() b=() c=() d=()
for ((r = 0; r < runs; r++)); do
	a+=("$(timed "$work/ctrun.sqsh" "$CTRUN" -q --runtime enroot save bench-enroot -o "$work/ctrun.sqsh")")
	b+=("$(timed "$work/export.sqsh" env ENROOT_DATA_PATH="$CTRUN_CACHE_DIR/containers/bench-enroot" \
		enroot export -f -o "$work/export.sqsh" rootfs)")
	c+=("$(timed "$work/mksquashfs.sqsh" mksquashfs "$tree" "$work/mksquashfs.sqsh" -noappend -quiet -no-progress)")
	d+=("$(timed "$work/oci.sqsh" "$CTRUN" -q --runtime oci save bench-oci -o "$work/oci.sqsh")")
done
size() { du -m "$1" | cut -f1; }
row() { echo "| $1 | $(sec "$(median "${@:3}")") ($(sec "$(minimum "${@:3}")")) | $(size "$2") |"; }
cat <<MD
## Saving a changed container (tests/bench/save.sh)

The torch test image ($(size "$torch") MB squashfs, $(du -sm "$tree" | cut -f1) MB unpacked)
with a 100 MB change (random bytes under /usr/local, a file removed), kept as a named
container, written as a squashfs three ways from the same tree in the same run, as root on
$(nproc) cores shared with other work; seconds, median (min) of $runs run(s).

| command | seconds | MB written |
|---|---|---|
$(row "\`ctrun save NAME -o F\` (enroot container, gzip)" "$work/ctrun.sqsh" "${a[@]}")
$(row "\`enroot export -o F NAME\` (its default \`-comp lzo -noD\`)" "$work/export.sqsh" "${b[@]}")
$(row "\`mksquashfs DIR F\` (gzip)" "$work/mksquashfs.sqsh" "${c[@]}")
$(row "\`ctrun save NAME -o F\` (OCI: merged view of the mounted image and the kept layer)" "$work/oci.sqsh" "${d[@]}")

ctrun's save runs mksquashfs with its default gzip (every runtime, Singularity 3.x included,
reads it) over the tree, leaving out /.ctrun and enroot's /.lock; enroot export runs
mksquashfs with its options -comp lzo -noD (data blocks not compressed) unless
ENROOT_SQUASH_OPTIONS says otherwise.
MD
