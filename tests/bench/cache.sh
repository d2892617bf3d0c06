#!/bin/bash
# Node cache benchmarks on the torch test image (tests/images/build.sh torch):
#   1. cold cache: `ctrun cache create torch.sqsh` vs plain `unsquashfs` of the same
#      file (target <= 1.05x); also the SIF and docker-archive forms, for reference;
#   2. 8 racing tasks on one node vs one task, cold cache (target <= 1.1x).
# Both unpack into a tmpfs, like a compute node's local scratch, so the disk's
# writeback does not decide the numbers.  Runs alternate between the two sides
# and the median of $BENCH_RUNS (5) is reported.  Prints a markdown section.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
CTRUN=$repo/build/ctrun runs=${BENCH_RUNS:-5}
"$repo/tests/images/build.sh" torch >&2
sqsh=$("$repo/tests/images/build.sh" path torch.sqsh)
sif=$("$repo/tests/images/build.sh" path torch.sif)
docker=$("$repo/tests/images/build.sh" path torch-docker.tar)

work=$(mktemp -d /tmp/ctrun-bench-cache.XXXXXX)
mounted=
cleanup() { [ -n "$mounted" ] && umount "$work"; rm -rf "$work"; }
trap cleanup EXIT
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=8g ctrun-bench-cache "$work"; then
	mounted=1; where="tmpfs"
else
	where="$(df --output=fstype "$work" | tail -1) (not root: no tmpfs)"
fi

# "wall cpu" seconds of one command (cpu = user + sys of it and its children),
# with the directory it fills cleared before and after.  The machine may be
# shared: CPU time barely moves with load, wall time does.
t() { # dir-to-clear command...
	local d=$1; shift
	rm -rf "$d"
	/usr/bin/time -f '%e %U %S' -o "$work/time" "$@" >/dev/null 2>&1 ||
		{ echo "bench: failed: $*" >&2; exit 1; }
	rm -rf "$d"
	awk '{printf "%.3f %.3f\n", $1, $2 + $3}' "$work/time"
}
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
minimum() { printf '%s\n' "$@" | sort -n | head -1; }
ratio() { python3 -c "print('%.2f' % ($1 / $2))"; }

plain_cmd=(unsquashfs -no-progress -d "$work/plain" "$sqsh")
ctrun_cmd=(env CTRUN_CACHE_DIR="$work/cache" "$CTRUN" cache create)
# 8 tasks of one node started at once; returns when the last one has its rootfs.
race8=(bash -c 'p=(); for i in 1 2 3 4 5 6 7 8; do "$@" & p+=($!); done; for i in "${p[@]}"; do wait "$i" || exit 1; done'
       race8 "${ctrun_cmd[@]}" "$sqsh")
cat "$sqsh" "$sif" >/dev/null # the image in the page cache for every run alike

echo "cache: cold unpack, plain unsquashfs vs ctrun ($runs runs each, alternating)" >&2
declare -A W C
add() { W[$1]+="$2 "; C[$1]+="$3 "; }
for ((i = 0; i < runs; i++)); do
	for k in plain sqsh sif one eight; do
		case $k in
		plain) r=$(t "$work/plain" "${plain_cmd[@]}") ;;
		sqsh|one) r=$(t "$work/cache" "${ctrun_cmd[@]}" "$sqsh") ;;
		sif) r=$(t "$work/cache" "${ctrun_cmd[@]}" "$sif") ;;
		eight) r=$(t "$work/cache" "${race8[@]}") ;;
		esac
		add $k $r
	done
	echo "  run $((i + 1)): wall ${W[plain]##* } $(for k in plain sqsh sif one eight; do w=(${W[$k]}); printf '%s=%s ' $k "${w[-1]}"; done)" >&2
done
echo "cache: docker archive (one run)" >&2
read -r dw dc < <(t "$work/cache" "${ctrun_cmd[@]}" "$docker")
for k in plain sqsh sif one eight; do
	declare "wm_$k=$(median ${W[$k]})" "wn_$k=$(minimum ${W[$k]})" "cm_$k=$(median ${C[$k]})"
done
size=$(du -sh --apparent-size "$sqsh" | cut -f1)
unpacked=$(unsquashfs -s "$sqsh" 2>/dev/null | sed -n 's/^Number of inodes \([0-9]*\)/\1/p')

cat <<EOF2
## Node cache (tests/bench/cache.sh)

Image: the torch test image (\`tests/images/build.sh torch\`: debootstrap minbase bookworm +
python3-torch), $size squashfs (gzip), $unpacked inodes, 1.4 GB unpacked. Target directory on
$where. $(nproc) cores. Median of $runs runs, the two sides alternating; the image file is in the
page cache for every run.

| what | command | wall median | wall min | CPU median | wall ratio (median, min) | target |
|---|---|---|---|---|---|---|
| plain unsquashfs | \`${plain_cmd[*]}\` | $wm_plain | $wn_plain | $cm_plain | 1.00, 1.00 | |
| ctrun, cold cache, .sqsh | \`CTRUN_CACHE_DIR=DIR ctrun cache create torch.sqsh\` | $wm_sqsh | $wn_sqsh | $cm_sqsh | $(ratio "$wm_sqsh" "$wm_plain"), $(ratio "$wn_sqsh" "$wn_plain") | ≤ 1.05 |
| ctrun, cold cache, .sif | \`CTRUN_CACHE_DIR=DIR ctrun cache create torch.sif\` | $wm_sif | $wn_sif | $cm_sif | $(ratio "$wm_sif" "$wm_plain"), $(ratio "$wn_sif" "$wn_plain") | |
| ctrun, cold cache, docker archive (1 run) | \`CTRUN_CACHE_DIR=DIR ctrun cache create torch-docker.tar\` | $dw | $dw | $dc | $(ratio "$dw" "$wm_plain") | |
| 1 task, cold cache | \`ctrun cache create torch.sqsh\` | $wm_one | $wn_one | $cm_one | 1.00, 1.00 | |
| 8 racing tasks on one node, cold cache | 8 × \`ctrun cache create torch.sqsh\` started at once, until the last returns | $wm_eight | $wn_eight | $cm_eight | $(ratio "$wm_eight" "$wm_one"), $(ratio "$wn_eight" "$wn_one") | ≤ 1.1 |

Wall seconds of every run: $(for k in plain sqsh sif one eight; do printf '%s: %s; ' $k "${W[$k]% }"; done)
CPU seconds (user + sys, with children) of every run: $(for k in plain sqsh sif one eight; do printf '%s: %s; ' $k "${C[$k]% }"; done)

EOF2
