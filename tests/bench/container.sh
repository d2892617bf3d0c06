#!/bin/bash
# Container start-up benchmark (issue 3): warm `ctrun --image IMG -- true`
# against the bare runtime start of the same root file system, `runc run` of
# a bundle whose rootfs is ctrun's cached copy, with the same namespaces
# (pid, mount) and `true` as the process (target <= 1.5x).
#
# ctrun's side includes everything a user waits for: options, topology, the
# cache lookup, the run directory and agent spec, the private namespace and
# overlay, runc, the agent and its supervisor, and the clean-up.  Root, on the
# busybox and the torch test images; runs alternate between the two sides,
# and the median and minimum of $BENCH_RUNS (21) are reported.  Prints a
# markdown section (make bench); docs/benchmarks-container.md keeps a copy.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
CTRUN=$repo/build/ctrun runs=${BENCH_RUNS:-21}
[ "$(id -u)" = 0 ] || { echo "bench: container.sh needs root (runc bundles of root)" >&2; exit 1; }
runc=$(command -v runc) || { echo "bench: runc not installed" >&2; exit 1; }
"$repo/tests/images/build.sh" busybox >&2
images=(busybox.sqsh)
[ -e "$("$repo/tests/images/build.sh" path torch.sqsh)" ] && images+=(torch.sqsh)

work=$(mktemp -d /tmp/ctrun-bench-ctr.XXXXXX)
trap 'rm -rf "$work"' EXIT
export CTRUN_CACHE_DIR=$work/cache
# A CDI device (issue 42) of a fake vendor: a node, a variable, a read-only bind,
# as a real device's spec has them; its start is timed beside the plain one.
mkdir -p "$work/cdi" "$work/lib"
cat > "$work/cdi/bench.yaml" <<EOF
cdiVersion: 0.5.0
kind: example.com/bench
devices:
- name: dev0
  containerEdits:
    env: [BENCH_DEV=0]
    deviceNodes: [{path: /dev/bench0, hostPath: /dev/null}]
    mounts: [{hostPath: $work/lib, containerPath: /opt/benchlib, options: [ro, nosuid, nodev, bind]}]
EOF

now() { local t=$EPOCHREALTIME; echo "${t/./}"; } # microseconds
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
minimum() { printf '%s\n' "$@" | sort -n | head -1; }
ms() { awk -v u="$1" 'BEGIN {printf "%.1f", u / 1000}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }

# A bundle like `runc spec`, over `rootfs`, with ctrun's namespaces.
bundle() { # dir rootfs
	mkdir -p "$1"
	(cd "$1" && "$runc" spec)
	python3 - "$1/config.json" "$2" <<'EOF'
import json, sys
path, rootfs = sys.argv[1:]
c = json.load(open(path))
c["process"]["terminal"] = False
c["process"]["args"] = ["true"]
c["root"] = {"path": rootfs, "readonly": True}
c["linux"]["namespaces"] = [n for n in c["linux"]["namespaces"] if n["type"] in ("pid", "mount")]
c.pop("hostname", None)
json.dump(c, open(path, "w"), indent=1)
EOF
}

cat <<EOF

## Container start-up (tests/bench/container.sh)

Warm start of a container whose only process is \`true\`, as root with runc $("$runc" --version | head -1 | awk '{print $3}'), on
$(nproc) cores ($(uname -r)). **ctrun** is \`ctrun -q --image IMG -- true\` (standalone, the
image already in the node cache); **bare runc** is \`runc run\` of a bundle made by \`runc spec\`
over the same cached root file system, read-only, with the namespaces ctrun uses (pid,
mount). Median and minimum of $runs runs, the two sides alternating.

| image | bare runc median (min) ms | ctrun median (min) ms | ratio median (min) | target |
|---|---|---|---|---|
EOF
phases=() cdirows=()
for img in "${images[@]}"; do
	path=$("$repo/tests/images/build.sh" path "$img")
	echo "bench: $img: warming the cache" >&2
	"$CTRUN" -q --image-mode unpack --image "$path" -- true
	rootfs=$(ls -d "$CTRUN_CACHE_DIR"/entries/*/rootfs | head -1)
	[ -d "$rootfs" ] || { echo "bench: no cached rootfs for $img under $CTRUN_CACHE_DIR" >&2; exit 1; }
	bundle "$work/bare-$img" "$rootfs"
	bare=() ours=() cdi=()
	for ((i = 0; i < runs; i++)); do
		s=$(now); "$runc" --root "$work/state" run --bundle "$work/bare-$img" "bench-$i" </dev/null
		e=$(now); bare+=($((e - s)))
		s=$(now); "$CTRUN" -q --image "$path" -- true </dev/null
		e=$(now); ours+=($((e - s)))
		s=$(now); CTRUN_CDI_SPEC_DIRS=$work/cdi "$CTRUN" -q --image "$path" \
			--device example.com/bench=dev0 -- true </dev/null
		e=$(now); cdi+=($((e - s)))
	done
	mb=$(median "${bare[@]}") mo=$(median "${ours[@]}") nb=$(minimum "${bare[@]}") no=$(minimum "${ours[@]}")
	echo "| $img | $(ms "$mb") ($(ms "$nb")) | $(ms "$mo") ($(ms "$no")) | $(ratio "$mo" "$mb") ($(ratio "$no" "$nb")) | ≤ 1.1 |"
	mc=$(median "${cdi[@]}") nc=$(minimum "${cdi[@]}")
	cdirows+=("| $img | $(ms "$mo") ($(ms "$no")) | $(ms "$mc") ($(ms "$nc")) | $(ms $((mc - mo))) ($(ms $((nc - no)))) | ≤ 5 ms |")
	echo "bench: $img: runc ${bare[*]} / ctrun ${ours[*]} (µs)" >&2
	# Where ctrun's time goes: its own --timings phases, median of the runs.
	for ((i = 0; i < runs; i++)); do
		"$CTRUN" -q --timings --image "$path" -- true </dev/null 2>&1 | grep 'timings on'
	done | sed 's/.*: //; s/; total/, total/' | tr ',' '\n' | sed 's/^ *//; s/ ms$//' > "$work/ph"
	# "NAME VALUE" lines; NAME may hold a blank ("container start").
	line=""
	while IFS= read -r name; do
		m=$(grep "^$name [0-9.]*$" "$work/ph" | awk '{print $NF}' | sort -n |
			awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
		line+="${line:+, }$name $m"
	done < <(sed 's/ [0-9.]*$//' "$work/ph" | awk '!seen[$0]++')
	echo "$line" > "$work/phases-$img"
	phases+=("$img: $(cat "$work/phases-$img") (ms)")
	rm -rf "$CTRUN_CACHE_DIR"
done
echo
echo "With a CDI device (\`--device example.com/bench=dev0\`: a node, a variable, a read-only"
echo "bind; the spec read from its directory on every run), the same runs interleaved:"
echo
echo "| image | ctrun median (min) ms | ctrun --device median (min) ms | difference median (min) ms | target |"
echo "|---|---|---|---|---|"
printf '%s\n' "${cdirows[@]}"
echo
echo "Where ctrun's time goes (\`ctrun -q --timings\`, median of each phase over $runs runs):"
echo
for l in "${phases[@]}"; do echo "- $l"; done
echo
echo "*container start* is runc's own create and start (the bare runc column's work, plus the"
echo "overlay mount, ~1 ms); *exec* is ctrun's process start up to main (the dynamic loader:"
echo "libinih, json-c, libc; read from /proc's start time, so in clock ticks of 10 ms); *workers*"
echo "is the agent starting and reaping \`true\` and reporting back through its FIFOs. What ctrun"
echo "itself does (options, topology, image lookup, setup) is under 1 ms. The issue's 1.1x target"
echo "is not met: the agent's fork and report and ctrun's own process start are what is left."

