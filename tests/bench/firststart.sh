#!/bin/bash
# First start of a never-seen image (issue 11): `ctrun --image IMG` when the
# node has no unpacked copy, mounted where it lies (--image-mode mount)
# against unpacked first (--image-mode unpack, a fresh cache each run), and
# enroot's own start from the squashfs where enroot is installed.  Two
# commands: `true` (the time to the first worker's exec, plus the clean-up)
# and `python3 -c 'import torch'` (what a training start reads).  Root,
# standalone; the image file itself is in the page cache (the shared file
# system's read is staging's business, not this one's).  Median and minimum
# of $BENCH_RUNS (5) runs, the sides alternating.  Prints a markdown section.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
CTRUN=$repo/build/ctrun runs=${BENCH_RUNS:-5}
[ "$(id -u)" = 0 ] || { echo "bench: firststart.sh needs root" >&2; exit 1; }
"$repo/tests/images/build.sh" torch >&2
work=$(mktemp -d /tmp/ctrun-bench-first.XXXXXX)
trap 'rm -rf "$work"' EXIT

now() { local t=$EPOCHREALTIME; echo "${t/./}"; } # microseconds
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
minimum() { printf '%s\n' "$@" | sort -n | head -1; }
sec() { awk -v u="$1" 'BEGIN {printf "%.2f", u / 1000000}'; }

# enroot where it is installed (../shared/tools/build-enroot.sh: /opt/enroot).
enroot=$(PATH=/opt/enroot/bin:$PATH command -v enroot || true)
enroot_side() { # image cmd...: microseconds of `enroot start IMAGE CMD`
	local img=$1 s e
	shift
	rm -rf "$work/enroot"
	mkdir -p "$work/enroot/rt" "$work/enroot/cache" "$work/enroot/data"
	s=$(now)
	ENROOT_RUNTIME_PATH=$work/enroot/rt ENROOT_CACHE_PATH=$work/enroot/cache \
		ENROOT_DATA_PATH=$work/enroot/data PATH="$(dirname "$enroot"):$PATH" \
		"$enroot" start "$img" "$@" </dev/null >&2 || { echo "bench: enroot start failed" >&2; exit 1; }
	e=$(now)
	echo $((e - s))
}

run_side() { # mode image cmd...: microseconds of one cold start
	local mode=$1 img=$2 s e
	shift 2
	rm -rf "$work/cache"
	s=$(now)
	CTRUN_CACHE_DIR=$work/cache "$CTRUN" -q --image-mode "$mode" --image "$img" -- "$@" </dev/null >&2
	e=$(now)
	echo $((e - s))
}

cat <<SECTION

## First start of a never-seen image (tests/bench/firststart.sh)

\`ctrun -q --image-mode MODE --image IMG -- CMD\` as root, standalone, with no unpacked copy of
the image on the node (a fresh cache directory every run), on $(nproc) cores ($(uname -r)).
**mount**: the squashfs (or the SIF's squashfs partition) mounted where it lies (kernel
squashfs on a loop device, in the image holder's private namespace); **unpack**: unsquashfs
into the node cache first (what every first start cost before). \`true\` measures the time to
the first worker's exec plus the clean-up; \`import torch\` what a training script reads at
start. The image file is in the page cache. Median (min) of $runs runs, sides alternating.

| image | command | unpack median (min) s | mount median (min) s | unpack / mount | enroot start median (min) s |
|---|---|---|---|---|---|
SECTION
for img in torch.sqsh torch.sif; do
	path=$("$repo/tests/images/build.sh" path "$img")
	[ -e "$path" ] || continue
	cat "$path" > /dev/null
	for cmd in true torch; do
		args=(true)
		[ $cmd = torch ] && args=(python3 -c 'import torch')
		u=() m=() n=()
		for ((i = 0; i < runs; i++)); do
			u+=("$(run_side unpack "$path" "${args[@]}")")
			m+=("$(run_side mount "$path" "${args[@]}")")
			[ -z "$enroot" ] || [ "$img" != torch.sqsh ] || n+=("$(enroot_side "$path" "${args[@]}")")
		done
		en="-"
		[ ${#n[@]} -eq 0 ] || en="$(sec "$(median "${n[@]}")") ($(sec "$(minimum "${n[@]}")"))"
		mu=$(median "${u[@]}") mm=$(median "${m[@]}")
		label='`true`'
		[ $cmd = torch ] && label='`import torch`'
		echo "| $img | $label | $(sec "$mu") ($(sec "$(minimum "${u[@]}")")) | $(sec "$mm") ($(sec "$(minimum "${m[@]}")")) | $(awk -v a="$mu" -v b="$mm" 'BEGIN {printf "%.1f", a / b}') | $en |"
		echo "bench: $img $cmd: unpack ${u[*]} / mount ${m[*]} / enroot ${n[*]:-} (µs)" >&2
	done
done
echo
if [ -n "$enroot" ]; then
	echo "**enroot start**: \`enroot start IMG CMD\` of enroot $("$enroot" version) from the squashfs itself"
	echo "(it mounts it with squashfuse), fresh enroot directories every run."
else
	echo "enroot is not installed on this machine (\`../shared/tools/build-enroot.sh\` builds 4.1.2), so"
	echo "its own start from the squashfs (0.33 s for this image, issue 11) is not measured side by side."
fi
echo
echo "A warm start (an unpacked entry exists) uses that entry, not a mount (container.sh): its"
echo "\`import torch\` reads files already decompressed, where a mount decompresses again what"
echo "each run reads (the squashfs page cache goes with the mount)."
