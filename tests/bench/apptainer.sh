#!/bin/bash
# A SIF run by a user without setuid (issue 12): Singularity 3.4.2 built by
# ../shared/tools/build-singularity.sh (no starter-suid, like apptainer's
# default build) converts the SIF to a temporary sandbox for every
# container.  One container per node (node mode: ctrun --nproc-per-node 4)
# against one container per worker (what task mode does: here 4 ctruns
# with one worker each, started together), torch test image, command
# `true`, as root (Singularity 3.4.2's extraction as a user fails on an
# image with device nodes, as the torch image has).  Median and minimum of
# $BENCH_RUNS (3) runs, the sides alternating.  Prints a markdown section.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
CTRUN=$repo/build/ctrun runs=${BENCH_RUNS:-3} n=4
sing=/opt/singularity/bin/singularity
[ -x "$sing" ] || { echo "bench: apptainer.sh needs /opt/singularity (build-singularity.sh)" >&2; exit 1; }
"$repo/tests/images/build.sh" torch >&2
sif=$("$repo/tests/images/build.sh" path torch.sif)
work=$(mktemp -d /tmp/ctrun-bench-app.XXXXXX)
chmod 777 "$work"
trap 'rm -rf "$work"' EXIT

now() { local t=$EPOCHREALTIME; echo "${t/./}"; }
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
minimum() { printf '%s\n' "$@" | sort -n | head -1; }
sec() { awk -v u="$1" 'BEGIN {printf "%.2f", u / 1000000}'; }
as_user() { (cd "$work" && PATH=/opt/singularity/bin:$PATH SINGULARITY_TMPDIR=$work "$@"); }

node_side() {
	local s e
	s=$(now)
	as_user "$CTRUN" -q --runtime singularity --nproc-per-node $n --image "$sif" -- true >&2 ||
		{ echo "bench: node side failed" >&2; exit 1; }
	e=$(now)
	echo $((e - s))
}
task_side() {
	local s e i pids=()
	s=$(now)
	for ((i = 0; i < n; i++)); do
		as_user "$CTRUN" -q --runtime singularity --nproc-per-node 1 --image "$sif" -- true >&2 &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || { echo "bench: task side failed" >&2; exit 1; }; done
	e=$(now)
	echo $((e - s))
}
node=() task=()
for ((r = 0; r < runs; r++)); do
	v=$(node_side) && node+=("$v") || exit 1
	v=$(task_side) && task+=("$v") || exit 1
done
cat <<MD
## A SIF without setuid: one container per node or per task (tests/bench/apptainer.sh)

Singularity $("$sing" version) without the setuid starter (as ../shared/tools/build-singularity.sh
builds it, and as apptainer runs for a user when setuid is off): every container converts the
SIF (torch test image, $(du -m "$sif" | cut -f1) MB) into a temporary sandbox first, root
included (a user's extraction of this image fails in 3.4.2: it holds device nodes). As root,
$n workers running \`true\`, $(nproc) cores; median (min) of $runs runs.

| layout | command | wall s |
|---|---|---|
| one container per node (node mode) | \`ctrun --runtime singularity --nproc-per-node $n --image torch.sif -- true\` | $(sec "$(median "${node[@]}")") ($(sec "$(minimum "${node[@]}")")) |
| one container per task (what task mode costs) | $n × \`ctrun --runtime singularity --nproc-per-node 1 --image torch.sif -- true\` at once | $(sec "$(median "${task[@]}")") ($(sec "$(minimum "${task[@]}")")) |

Each container pays the conversion, so task mode pays it once per task: prefer node mode
(\`srun --ntasks-per-node=1 ctrun ...\`) with apptainer when it runs without setuid.
Raw µs: node ${node[*]}; task ${task[*]}.
MD
