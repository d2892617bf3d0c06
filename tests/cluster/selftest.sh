#!/bin/bash
# selftest.sh — proves the test cluster behaves like a real Slurm GPU cluster before the
# integration tests rely on it. Brings up its own cluster (and a second one beside it), runs
# the checks, tears everything down and checks that nothing is left. Needs root.
#
#   tests/cluster/selftest.sh          exit 0 when every check passes
#
# Clusters: ctst (10.237.0, ports 19817..) and ctstb (10.238.0, ports 20817..); override the
# first with CTRUN_CLUSTER_NAME/SUBNET/PORT_BASE.
# $VARS in single quotes are for the tasks to expand; functions are called indirectly by check.
# shellcheck disable=SC2016,SC2317
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
C=$here/cluster.sh
# Own names, subnets and ports, so that the self-test never meets a cluster someone else has up
# (default ctc, tests/integration ctit, examples ctdemo).
export CTRUN_CLUSTER_NAME=${CTRUN_CLUSTER_NAME:-ctst}
export CTRUN_CLUSTER_SUBNET=${CTRUN_CLUSTER_SUBNET:-10.237.0}
export CTRUN_CLUSTER_PORT_BASE=${CTRUN_CLUSTER_PORT_BASE:-19817}
unset CTRUN_CLUSTER_DIR CTRUN_CLUSTER_NODES
name=$CTRUN_CLUSTER_NAME
name2=${name}b
subnet2=10.238.0
port2=$((CTRUN_CLUSTER_PORT_BASE + 1000))
work=$(mktemp -d /tmp/ctrun-cluster-selftest.XXXXXX)
chmod 755 "$work"
fails=0

pass() { echo "ok   - $*"; }
fail() { echo "FAIL - $*"; fails=$((fails + 1)); }
# check DESCRIPTION COMMAND... : COMMAND's success is the check.
check() { local d=$1; shift; if "$@"; then pass "$d"; else fail "$d"; fi; }
quiet() { "$@" >/dev/null; }
# What `down` must leave as it was: our links, netns and mounts, and any process whose
# command line or environment names one of our clusters' directories (daemons, tasks, leftovers
# of jobs). Other people's clusters and processes on the machine may come and go meanwhile.
snapshot() {
    local re="^(${name}|${name2})(n|v|br)[0-9]*|/ctrun-cluster-(${name}|${name2})(/| )|/run/netns/(${name}|${name2})n"
    { ip -o link show | awk -F': ' '{print $2}'; ip netns list; cat /proc/mounts; } 2>/dev/null |
        grep -E "$re" || true
    # env -i: grep's own environment must not name the cluster (we exported SLURM_CONF).
    { env -i PATH="$PATH" grep -lsE "/ctrun-cluster-(${name}|${name2})/" /proc/[0-9]*/environ \
        /proc/[0-9]*/cmdline 2>/dev/null || true; } | sed 's|^/proc/||; s|/.*||' | sort -u |
        while read -r p; do ps -o pid=,comm=,args= -p "$p" || true; done
}
cleanup() { second "$C" down >/dev/null 2>&1 || true; "$C" down >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup EXIT

before=$(snapshot)
t0=$EPOCHREALTIME
"$C" up >/dev/null
echo "# up took $(awk "BEGIN{printf \"%.2f\", $EPOCHREALTIME - $t0}") s"
eval "$("$C" env)"
n1=${name}n1 n2=${name}n2
cd "$work"

# 1. tasks on both nodes, ranks and local ids, batch jobs from a shared submit directory
check "srun -N2 -n2 hostname runs on both nodes" \
    test "$(srun -N2 -n2 hostname | sort | tr '\n' ' ')" == "$n1 $n2 "
out=$(srun -N2 --ntasks-per-node=2 bash -c 'echo $SLURM_PROCID $SLURM_NODEID $(hostname) $SLURM_LOCALID' | sort)
check "ranks/nodes/local ids with --ntasks-per-node=2" \
    test "$out" == "0 0 $n1 0
1 0 $n1 1
2 1 $n2 0
3 1 $n2 1"
jid=$(sbatch --parsable --wait -N2 --ntasks-per-node=1 --wrap 'pwd; srun hostname | sort')
check "sbatch job ran in the submit dir and its srun on both nodes" \
    test "$(cat "$work/slurm-$jid.out")" == "$work
$n1
$n2"

# 2. fake GPUs through gres
out=$(srun -N1 -n2 --gpus-per-task=1 bash -c 'echo $SLURM_PROCID $CUDA_VISIBLE_DEVICES $SLURM_STEP_GPUS' | sort)
check "--gpus-per-task=1 gives each task its own GPU" test "$out" == "0 0 0
1 1 1"
check "--gpus-per-node=2 sees /dev/nvidia* in the node" \
    test "$(srun -N1 --gpus-per-node=2 bash -c 'ls /dev/nvidia*; echo $CUDA_VISIBLE_DEVICES' | tr '\n' ' ')" \
    == "/dev/nvidia0 /dev/nvidia1 /dev/nvidia2 /dev/nvidia3 /dev/nvidiactl 0,1 "
check "the machine's /dev has no fake GPU" test ! -e /dev/nvidia0

# 3. names resolve to node addresses; TCP from node 1 to node 2
check "node names resolve inside nodes to their bridge addresses" \
    test "$(srun -N2 -n2 getent hosts "$n1" "$n2" | awk '{print $1}' | sort -u | tr '\n' ' ')" \
    == "${CTRUN_CLUSTER_SUBNET}.11 ${CTRUN_CLUSTER_SUBNET}.12 "
out=$(srun -N2 -n2 bash -c 'if [ $SLURM_PROCID = 1 ]; then
        exec /usr/bin/python3 -c "import socket; s=socket.create_server((\"\", 23456)); c, a = s.accept(); print(c.recv(64).decode().strip(), a[0])"
    else for i in 1 2 3 4 5 6 7 8 9 10; do { echo hello >/dev/tcp/'"$n2"'/23456; } 2>/dev/null && exit 0; sleep 0.3; done; exit 1; fi')
check "TCP from $n1 to $n2" test "$out" == "hello ${CTRUN_CLUSTER_SUBNET}.11"

# 4. PyTorch DDP over gloo across the two nodes
cat > "$work/ddp.py" <<'EOF'
import torch, torch.distributed as d
d.init_process_group("gloo")
t = torch.tensor([float(d.get_rank() + 1)])
d.all_reduce(t)
print(d.get_rank(), d.get_world_size(), t.item(), flush=True)
d.destroy_process_group()
EOF
out=$(srun -N2 -n2 bash -c "MASTER_ADDR=$n1 MASTER_PORT=29511 RANK=\$SLURM_PROCID WORLD_SIZE=\$SLURM_NTASKS exec /usr/bin/python3 $work/ddp.py" | sort)
check "DDP gloo all_reduce over 2 nodes" test "$out" == "0 2 3.0
1 2 3.0"

# 5. an unprivileged user submits; tasks run as that user
user=$("$here/ensure-user.sh")
check "su $user srun runs tasks as $user" \
    test "$(su "$user" -c "cd && SLURM_CONF=$SLURM_CONF srun -N2 -n2 id -un" | tr '\n' ' ')" == "$user $user "

# node-local scratch: same path, different content
srun -N2 -n2 bash -c 'hostname > $CTRUN_CLUSTER_SCRATCH/who' >/dev/null
check "scratch is node-local" test "$("$C" exec "$n2" cat "$CTRUN_CLUSTER_SCRATCH/who")" == "$n2"

# 6. scancel kills the job's processes on all nodes
jid=$(sbatch --parsable -N2 --ntasks-per-node=2 --wrap 'srun sleep 300')
for _ in $(seq 100); do [[ $(squeue -h -j "$jid" -o %T) == RUNNING ]] && break; sleep 0.1; done
sleep 1
nsleep() { for n in $n1 $n2; do "$C" exec "$n" ps -e -o comm=; done | grep -c '^sleep$' || true; }
check "job's tasks running on both nodes" test "$(nsleep)" == 4
scancel "$jid"
for _ in $(seq 50); do [[ $(nsleep) == 0 ]] && break; sleep 0.1; done
check "scancel leaves no task on any node" test "$(nsleep)" == 0

# 7. a second cluster beside the first (`env` exported the first one's settings: replace them)
second() {
    env -u CTRUN_CLUSTER_DIR CTRUN_CLUSTER_NAME="$name2" CTRUN_CLUSTER_SUBNET="$subnet2" \
        CTRUN_CLUSTER_PORT_BASE="$port2" "$@"
}
check "second cluster up beside the first" quiet second "$C" up
out2=$(eval "$(second "$C" env)"; srun -N2 -n2 hostname | sort | tr '\n' ' ')
check "both clusters answer srun" test "$out2 $(srun -N2 -n2 hostname | sort | tr '\n' ' ')" \
    == "${name2}n1 ${name2}n2  $n1 $n2 "

# down with a job still running; nothing may be left
sbatch -N2 --wrap 'srun sleep 300' >/dev/null
su "$user" -c "cd && SLURM_CONF=$SLURM_CONF srun -N2 -n2 sleep 300" >/dev/null 2>&1 &
sleep 1.5
t0=$EPOCHREALTIME
check "down with jobs running" "$C" down
echo "# down took $(awk "BEGIN{printf \"%.2f\", $EPOCHREALTIME - $t0}") s"
wait
check "second cluster down" second "$C" down
after=$(snapshot)
check "nothing left after down (links, netns, mounts, processes)" test "$before" == "$after"
[[ "$before" == "$after" ]] || diff <(echo "$before") <(echo "$after") || true
check "up again after down" quiet "$C" up
check "srun after re-up" test "$(srun -N2 -n2 hostname | wc -l)" == 2
check "down again" "$C" down
check "down twice is fine" "$C" down

echo "# $fails failed"
exit $((fails > 0))
