#!/bin/bash
# Issue 43: from a node's death to the first training step of the next
# attempt.  A 3-node test cluster of its own; DDP over gloo
# (tests/integration/elastic_train.py: checkpoint every 5 steps, resume
# from the last), 2 workers per node, stalled after step 12 (checkpoint at
# 10) so the kill always lands at the same place; then every process of
# node 2 killed, slurmd too (the fault campaign's node crash).  Scenarios:
#   spare    sbatch --no-kill -N3, ctrun --spares 1 --max-restarts 1: the
#            spare takes node 2's ranks; the final weights are compared with
#            an uninterrupted run of the same steps
#   elastic  sbatch --no-kill -N2, ctrun --nnodes 1:2 --max-restarts 1: no
#            spare, the world shrinks to node 1 (other weights, by design)
# Times from the kill (the machine's clock: the nodes are namespaces of it)
# to: the batch ctrun's line naming the lost node; the next attempt's srun
# started (`ctrun -v`: "starting the step"); the script's start line (after
# `import torch`, init_process_group and the checkpoint's load); its first
# step.  Median of $BENCH_RUNS (3) runs each.  Root.  Prints a markdown
# section.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
CTRUN=$repo/build/ctrun runs=${BENCH_RUNS:-3}
PY=/usr/bin/python3
cluster=$repo/tests/cluster/cluster.sh
[ "$(id -u)" = 0 ] || { echo "bench: restart.sh needs root" >&2; exit 1; }
export CTRUN_CLUSTER_NAME=ctbr CTRUN_CLUSTER_SUBNET=10.237.0 CTRUN_CLUSTER_PORT_BASE=28817 \
	CTRUN_CLUSTER_NODES=3
work=$(mktemp -d /tmp/ctrun-bench-restart.XXXXXX)
chmod 755 "$work"
"$cluster" down > /dev/null 2>&1 || true
trap '"$cluster" down > /dev/null 2>&1 || true; rm -rf "$work"' EXIT
"$cluster" up > "$work/up.log" 2>&1 || { cat "$work/up.log" >&2; exit 1; }
eval "$("$cluster" env)"
read -r -a NODES <<<"$CTRUN_CLUSTER_NODE_NAMES"
cp tests/integration/elastic_train.py "$work/"
slurm=$(slurmctld -V)

revive() {
	local i
	"$cluster" exec "$1" pgrep -x slurmd > /dev/null 2>&1 || "$cluster" slurmd "$1"
	for ((i = 0; i < 1200; i++)); do
		[ "$(sinfo -h -n "$1" -o %t)" = idle ] && return 0
		sleep 0.1
	done
	echo "bench: node $1 did not come back" >&2
	exit 1
}
# dir nodes stall ctrun-args...: one job; its ctrun's stderr time-stamped.
job() {
	local d=$work/$1 n=$2 stall=$3
	shift 3
	mkdir -p "$d"
	{
		echo '#!/bin/bash'
		printf '%q ' "$CTRUN" -v "$@" --nproc-per-node 2 --python "$PY" "$work/elastic_train.py" \
			--dir "$d" --steps 20 --every 5 ${stall:+--stall-at "$stall"}
		echo ' 2>&1 | while IFS= read -r l; do echo "$(date +%s.%N) $l"; done'
		echo 'echo "ctrun exit ${PIPESTATUS[0]}"'
	} > "$d.sh"
	sbatch --parsable --no-kill -N"$n" -o "$d.out" "$d.sh"
}
wait_for() { # file pattern count
	local i n
	for ((i = 0; i < 3000; i++)); do
		n=$(grep -c -- "$2" "$1" 2>/dev/null) || true
		[ "${n:-0}" -ge "$3" ] && return 0
		sleep 0.05
	done
	echo "bench: no '$2' in $1" >&2
	cat "$1" >&2
	exit 1
}
gone() {
	local i
	for ((i = 0; i < 2400; i++)); do [ -z "$(squeue -h -j "$1")" ] && return 0; sleep 0.05; done
	echo "bench: job $1 did not end" >&2
	exit 1
}
# One crash run: prints "DETECT STEP START FIRST" in seconds from the kill.
crash_run() {
	local name=$1 n=$2 j t0
	shift 2
	j=$(job "$name" "$n" 12 "$@")
	wait_for "$work/$name/progress" stalled 4
	t0=$(date +%s.%N)
	"$cluster" exec "${NODES[1]}" bash -c 'kill -9 -1' || true
	wait_for "$work/$name.out" '^ctrun exit' 1
	revive "${NODES[1]}"
	gone "$j"
	grep -qx 'ctrun exit 0' "$work/$name.out" || { cat "$work/$name.out" >&2; exit 1; }
	awk -v t0="$t0" '
		/left out: lost during the step/ && !d { d = $1 - t0 }
		/starting the step on/ { s = $1 - t0 }
		END { printf "%.2f %.2f ", d, s }' "$work/$name.out"
	awk -v t0="$t0" '
		/ start attempt=1 / && (!a || $1 > a) { a = $1 }
		/ step 11 attempt=1 / && (!f || $1 < f) { f = $1 }
		END { printf "%.2f %.2f\n", a - t0, f - t0 }' "$work/$name/progress"
}
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

# The uninterrupted run of the same steps, on the same nodes and ranks.
j=$(job ref 3 "" --spares 1 --max-restarts 1)
wait_for "$work/ref.out" '^ctrun exit 0' 1
gone "$j"
declare -A res=() weights=()
for s in spare elastic; do
	for ((r = 1; r <= runs; r++)); do
		echo "bench: restart.sh: $s run $r" >&2
		rm -rf "${work:?}/$s$r"
		if [ "$s" = spare ]; then
			res[$s]+=$(crash_run "$s$r" 3 --spares 1 --max-restarts 1)$'\n'
			w=differ
			cmp -s "$work/ref/weights" "$work/$s$r/weights" && w=equal
			weights[$s]+="${weights[$s]:+, }$w"
		else
			res[$s]+=$(crash_run "$s$r" 2 --nnodes 1:2 --max-restarts 1)$'\n'
		fi
	done
done
col() { awk -v c="$2" 'NF {print $c}' <<<"${res[$1]}" | median; }
raw() { awk 'NF {printf "%s%s", sep, $4; sep = ", "}' <<<"${res[$1]}"; }

cat <<EOF
## restart: a node's death to the next attempt's first step (tests/bench/restart.sh)

A DDP training over gloo (\`tests/integration/elastic_train.py\`, 2 workers per node, a
checkpoint every 5 steps, resumed from the last one) on this machine's 3-node test cluster
($slurm, 2 cores), stalled after step 12 so that the kill lands after the checkpoint of
step 10; then every process of node 2 killed, slurmd too. **spare**: \`sbatch --no-kill -N3\`,
\`ctrun --spares 1 --max-restarts 1\`: node 3 takes node 2's ranks. **elastic**: \`sbatch
--no-kill -N2\`, \`ctrun --nnodes 1:2 --max-restarts 1\`, no spare: the world shrinks to node
1. Seconds from the kill to: the batch ctrun's line naming the lost node; the next attempt's
srun started; the script's start line (after \`import torch\`, \`init_process_group\` and the
checkpoint's load: the script's own start); its first step (step 11). Median of $runs runs.
Weights: the spare runs' final weights against an uninterrupted run of the same 20 steps on
the same ranks, bit for bit.

| scenario | lost node named | next step started | script started | first step | first step, each run | weights |
|---|---|---|---|---|---|---|
| spare | $(col spare 1) | $(col spare 2) | $(col spare 3) | $(col spare 4) | $(raw spare) | ${weights[spare]} |
| elastic | $(col elastic 1) | $(col elastic 2) | $(col elastic 3) | $(col elastic 4) | $(raw elastic) | (another world) |

The target (issue 43): back to training within 10 s of the node's death plus the script's
own start. Slurm alone would notice the node after \`SlurmdTimeout\` (30 s on this cluster,
300 s by default) and, without \`--no-kill\`, end the job.
EOF
