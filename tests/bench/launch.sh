#!/bin/bash
# Launch, teardown, memory and output throughput of ctrun's core, on the
# local 2-node test cluster (2 nodes x 2 workers), against bare srun and
# Debian's torchrun.  Prints a markdown section.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
export CTRUN_CLUSTER_NAME=${CTRUN_CLUSTER_NAME:-ctbench} CTRUN_CLUSTER_SUBNET=${CTRUN_CLUSTER_SUBNET:-10.234.0}
export CTRUN_CLUSTER_PORT_BASE=${CTRUN_CLUSTER_PORT_BASE:-25817}
cluster=$repo/tests/cluster/cluster.sh
CTRUN=$repo/build/ctrun PY=/usr/bin/python3 runs=${BENCH_RUNS:-10}
work=$(mktemp -d /tmp/ctrun-bench.XXXXXX)
chmod 777 "$work"
"$cluster" down >/dev/null 2>&1 || true
trap '"$cluster" down >/dev/null 2>&1; rm -rf "$work"' EXIT
"$cluster" up >/dev/null
eval "$("$cluster" env)"
first=$CTRUN_CLUSTER_FIRST_NODE
cd "$work"
echo 'pass' > noop.py

# hyperfine's mean in seconds, from its JSON export.
mean() { "$PY" -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]; print("%.3f %.3f" % (r["mean"], r["stddev"]))' "$1"; }

echo "launch: bare srun / ctrun / torchrun" >&2
bare="srun -N2 -n4 $PY noop.py"
ct="srun -N2 --ntasks-per-node=1 $CTRUN --nproc-per-node 2 --python $PY noop.py"
tr="srun -N2 --ntasks-per-node=1 torchrun --nnodes 2 --nproc_per_node 2 --rdzv_backend c10d --rdzv_endpoint $first:29400 --rdzv_id 1 --redirects 1 --tee 1 noop.py"
hyperfine -N --warmup 1 --runs "$runs" --export-json bare.json "$bare" >&2
hyperfine -N --warmup 1 --runs "$runs" --export-json ctrun.json "$ct" >&2
hyperfine -N --warmup 1 --runs 3 --export-json torchrun.json "$tr" >&2 || echo '{"results":[{"mean":-1,"stddev":0}]}' > torchrun.json
read -r bm bs < <(mean bare.json); read -r cm cs < <(mean ctrun.json); read -r tm ts < <(mean torchrun.json)
ratio=$("$PY" -c "print('%.2f' % ($cm / $bm))")

echo "teardown after one rank fails" >&2
cat > fail.sh <<'W'
#!/bin/sh
# RANK under ctrun and torchrun; bare srun only has SLURM_PROCID.
if [ "${RANK:-$SLURM_PROCID}" = 3 ]; then sleep 2; date +%s.%N > "$OUT/t_fail"; exit 3; fi
sleep 600
W
chmod +x fail.sh
teardown() { # prints seconds from the failing rank's exit to srun's return
	rm -f t_fail
	set +e; OUT=$work "$@" >/dev/null 2>&1; set -e
	end=$(date +%s.%N)
	"$PY" -c "print('%.2f' % ($end - float(open('t_fail').read())))"
}
td_ct=$(teardown srun -N2 --ntasks-per-node=1 "$CTRUN" --nproc-per-node 2 -- "$work/fail.sh")
left=$(for n in $CTRUN_CLUSTER_NODE_NAMES; do "$cluster" exec "$n" pgrep -f 'sleep 600' || true; done | wc -l)
td_srun=$(teardown srun -N2 -n4 -K1 "$work/fail.sh")
td_tr=$(teardown timeout 200 srun -N2 --ntasks-per-node=1 torchrun --nnodes 2 --nproc_per_node 2 \
	--rdzv_backend c10d --rdzv_endpoint "$first:29401" --rdzv_id 2 --redirects 1 --tee 1 --no_python "$work/fail.sh")
scancel --quiet --user=root 2>/dev/null || true

echo "peak RSS while supervising 4 workers" >&2
# ctrun's own high-water mark (VmHWM), read while it supervises: rusage's
# max RSS (/usr/bin/time) also counts the workers and the pre-exec process.
"$CTRUN" --nproc-per-node 4 -- sleep 3 &
ctrun_pid=$!
sleep 2
rss_kb=$(awk '/^VmHWM:/ {print $2}' "/proc/$ctrun_pid/status")
wait "$ctrun_pid"
time_kb=$(/usr/bin/time -f %M "$CTRUN" --nproc-per-node 4 -- sleep 2 2>&1 >/dev/null | tail -1)

echo "prefixed output throughput" >&2
line=$(printf 'x%.0s' $(seq 99))
gen=(sh -c "yes $line | head -c 2147483648")
t0=$(date +%s.%N); "${gen[@]}" > /dev/null; t1=$(date +%s.%N)
"$CTRUN" --prefix --nproc-per-node 1 -- "${gen[@]}" > /dev/null; t2=$(date +%s.%N)
raw=$("$PY" -c "print('%.0f' % (2048 / ($t1 - $t0)))")
thr=$("$PY" -c "print('%.0f' % (2048 / ($t2 - $t1)))")

cat <<MD
## Core launcher (issue 2)

2-node test cluster on this machine (\`tests/cluster/cluster.sh\`), 2 workers per node,
no-op Python worker (\`$PY noop.py\`), hyperfine, $runs runs (torchrun: 3).

| launch | command | mean ± sd (s) |
|---|---|---|
| bare srun | \`$bare\` | $bm ± $bs |
| ctrun (node mode) | \`$ct\` | $cm ± $cs |
| torchrun (Debian) | \`$tr\` | $tm ± $ts |

ctrun / bare srun = **$ratio×** (target ≤ 1.2×).
(Bare srun starts 4 Slurm tasks; ctrun starts one per node and forks the 2 workers itself, which
is cheaper than Slurm's per-task launch, hence a ratio below 1.)

| measure | result | target | command |
|---|---|---|---|
| teardown after rank 3 exits 3 (others sleep 600 s) | **${td_ct} s**, $left processes left | ≤ 1 s on all nodes | \`srun -N2 --ntasks-per-node=1 ctrun --nproc-per-node 2 -- fail.sh\` |
| same, bare \`srun -K1\` for reference | ${td_srun} s | | \`srun -N2 -n4 -K1 fail.sh\` |
| same, torchrun (capped at 200 s) | ${td_tr} s | | \`srun -N2 --ntasks-per-node=1 torchrun ... --no_python fail.sh\` |
| ctrun peak RSS supervising 4 workers | **$((rss_kb / 1024)).$(( (rss_kb % 1024) * 10 / 1024 )) MiB** ($rss_kb KiB VmHWM; \`/usr/bin/time\`, which also counts the workers: $time_kb KiB) | ≤ 4 MiB | \`ctrun --nproc-per-node 4 -- sleep 3 &\` then VmHWM from \`/proc/PID/status\` |
| prefixed output through the supervisor | **$thr MB/s** (generator alone: $raw MB/s) | ≥ 200 MB/s | \`ctrun --prefix --nproc-per-node 1 -- sh -c 'yes <99 x> \| head -c 2GiB' > /dev/null\` |

MD
