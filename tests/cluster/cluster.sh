#!/bin/bash
# cluster.sh — a real multi-node Slurm 22.05 cluster on this one machine, for ctrun's
# integration tests.
#
#   cluster.sh up            start slurmctld + N slurmd nodes, wait until all are idle
#   cluster.sh down          remove everything `up` made (safe after a failed up, safe twice)
#   cluster.sh env           print `export` lines for tests (eval "$(cluster.sh env)")
#   cluster.sh exec NODE CMD...   run CMD inside NODE's net+uts+mount namespaces
#   cluster.sh status        show what is running
#
# Each node is a network namespace (veth on a bridge, own IP), a UTS namespace (own hostname)
# and a mount namespace (private /etc/hosts, node-local scratch tmpfs, private /dev with fake
# GPUs), running `slurmd -N NODE`. slurmctld runs in the machine's network namespace on the
# bridge address under the controller's hostname. Clients (srun, sbatch, ...) run anywhere with
# SLURM_CONF pointing at the generated slurm.conf. See /work/shared/design.md ("Facts measured on
# this machine kind") for why it is built this way (no `ip netns exec`, no munge, ...).
#
# Settings (environment), so that several clusters can run side by side:
#   CTRUN_CLUSTER_NAME       ctc          prefix of node names (ctcn1..), netns, links, dir
#   CTRUN_CLUSTER_NODES      2            number of nodes
#   CTRUN_CLUSTER_SUBNET     10.231.0     /24 prefix; bridge/controller .1, node i is .(10+i)
#   CTRUN_CLUSTER_PORT_BASE  16817        slurmctld port; slurmd = +1; srun ports +100..+399
#   CTRUN_CLUSTER_DIR        /tmp/ctrun-cluster-NAME   state directory (config, logs, spool)
#   CTRUN_CLUSTER_GPUS       4            fake GPUs per node (/dev/nvidia0..)
#   CTRUN_CLUSTER_CPUS       8            CPUs Slurm believes each node has
#   CTRUN_CLUSTER_TIMEOUT    60           seconds `up` waits for the nodes to become idle
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
name=${CTRUN_CLUSTER_NAME:-ctc}
nnodes=${CTRUN_CLUSTER_NODES:-2}
subnet=${CTRUN_CLUSTER_SUBNET:-10.231.0}
port=${CTRUN_CLUSTER_PORT_BASE:-16817}
dir=${CTRUN_CLUSTER_DIR:-/tmp/ctrun-cluster-$name}
ngpus=${CTRUN_CLUSTER_GPUS:-4}
ncpus=${CTRUN_CLUSTER_CPUS:-8}
timeout=${CTRUN_CLUSTER_TIMEOUT:-60}

ctl=${name}ctl                 # controller hostname (SlurmctldHost)
bridge=${name}br               # host bridge
conf=$dir/etc/slurm.conf
scratch=$dir/scratch           # same path in every node, a private tmpfs in each

die() { echo "cluster.sh: $*" >&2; exit 1; }
log() { echo "cluster.sh: $*" >&2; }

# Names end up in link names (15 chars max: "${name}br", "${name}v123") and in Slurm hostlists,
# where the node number must be the only trailing digits: ctcn[1-2].
[[ $name =~ ^[a-z][a-z0-9]{0,9}[a-z]$|^[a-z]$ ]] ||
    die "CTRUN_CLUSTER_NAME '$name': use 1-11 lowercase letters/digits, starting and ending with a letter"
[[ $nnodes =~ ^[1-9][0-9]*$ && $nnodes -le 200 ]] || die "CTRUN_CLUSTER_NODES '$nnodes': 1..200"
[[ $subnet =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "CTRUN_CLUSTER_SUBNET '$subnet': want a /24 prefix like 10.231.0"
[[ $port =~ ^[0-9]+$ && $port -ge 1024 && $port -le 65000 ]] || die "CTRUN_CLUSTER_PORT_BASE '$port': 1024..65000"
[[ $dir == /* && $dir != / ]] || die "CTRUN_CLUSTER_DIR '$dir' must be an absolute path"

node_name() { echo "${name}n$1"; }
node_ip() { echo "$subnet.$((10 + $1))"; }
node_list() { local i; for ((i = 1; i <= nnodes; i++)); do printf '%s ' "$(node_name "$i")"; done; }

# Nodes that exist now, whatever CTRUN_CLUSTER_NODES says: recorded ones plus any netns of
# ours (so `down` cleans up after an `up` with another node count or one that died half way).
existing_nodes() {
    {
        [[ -f $dir/nodes ]] && tr ' ' '\n' < "$dir/nodes"
        ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${name}n[0-9]+$" || true
    } | grep -v '^$' | sort -u
}

need_root() { [[ $(id -u) == 0 ]] || die "$1 needs root (namespaces, mounts, links)"; }

# ---------------------------------------------------------------------------------- config
write_config() {
    local i n
    mkdir -p "$dir/etc" "$dir/ctld" "$scratch"
    for ((i = 1; i <= nnodes; i++)); do
        n=$(node_name "$i")
        mkdir -p "$dir/$n/spool" "$dir/$n/dev"
    done
    # Clients run as any user, so the config and the directories above it must be readable.
    chmod 755 "$dir" "$dir/etc"

    {
        echo "127.0.0.1 localhost"
        echo "::1 localhost ip6-localhost ip6-loopback"
        # The machine itself is reached through the bridge; give its own name too, as a
        # submit host's name should resolve from compute nodes.
        echo "$subnet.1 $ctl $(hostname)"
        for ((i = 1; i <= nnodes; i++)); do echo "$(node_ip "$i") $(node_name "$i")"; done
    } > "$dir/etc/hosts"

    # Only GPUs for gres; autodetection would look for NVML.
    echo "Name=gpu File=/dev/nvidia[0-$((ngpus - 1))]" > "$dir/etc/gres.conf"
    # Keep the machine's SPANK plugins (PlugStackConfig defaults to slurm.conf's directory).
    echo "include /etc/slurm/plugstack.conf.d/*.conf" > "$dir/etc/plugstack.conf"

    local gres="" ; ((ngpus > 0)) && gres="Gres=gpu:$ngpus"
    [[ $ngpus -gt 0 ]] || : > "$dir/etc/gres.conf"
    cat > "$conf" <<EOF
# Generated by tests/cluster/cluster.sh for test cluster '$name'. Do not edit: rerun up.
ClusterName=$name
SlurmctldHost=$ctl($subnet.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SrunPortRange=$((port + 100))-$((port + 399))
SlurmUser=root
SlurmdUser=root
# No munge on the test machine.
AuthType=auth/none
CredType=cred/none
# This host is cgroup-v1 hybrid; cgroup plugins are not usable inside the node namespaces.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
MailProg=/bin/true
# cons_tres: --gpus-per-task/--gpus-per-node, and several jobs and steps per node.
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
GresTypes=gpu
# The machine has 2 cores; nodes claim $ncpus CPUs so tests can run that many tasks.
SlurmdParameters=config_overrides
ReturnToService=2
StateSaveLocation=$dir/ctld
SlurmctldPidFile=$dir/slurmctld.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdSpoolDir=$dir/%n/spool
SlurmdPidFile=$dir/%n/slurmd.pid
SlurmdLogFile=$dir/%n/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
TmpFS=$scratch
# Short timeouts keep tests fast (defaults are tuned for big, slow clusters).
KillWait=2
MessageTimeout=5
UnkillableStepTimeout=10
SlurmctldTimeout=10
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=60
TCPTimeout=2
EOF
    for ((i = 1; i <= nnodes; i++)); do
        echo "NodeName=$(node_name "$i") NodeHostname=$(node_name "$i") NodeAddr=$(node_ip "$i") CPUs=$ncpus RealMemory=2000 TmpDisk=2000 $gres State=UNKNOWN"
    done >> "$conf"
    echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO" >> "$conf"
    echo "$(node_list)" > "$dir/nodes"
}

# ------------------------------------------------------------------------------------- up
check_free() {
    [[ ! -e $dir ]] || die "cluster '$name' is already up or left over ($dir exists): run 'cluster.sh down' first"
    ip link show "$bridge" >/dev/null 2>&1 && die "cluster '$name' is already up or left over (bridge $bridge exists): run 'cluster.sh down' first"
    [[ -z $(existing_nodes) ]] || die "cluster '$name' is already up or left over (netns $(existing_nodes | tr '\n' ' ')): run 'cluster.sh down' first"
    ip -4 -o addr show | grep -q " inet $subnet\." && die "subnet $subnet.0/24 is already in use on this machine: set CTRUN_CLUSTER_SUBNET"
    local p
    for p in "$port" "$((port + 1))"; do
        ss -Htln "sport = :$p" | grep -q . && die "port $p is in use: set CTRUN_CLUSTER_PORT_BASE"
    done
    return 0
}

start_network() {
    local i n
    ip link add "$bridge" type bridge
    ip addr add "$subnet.1/24" dev "$bridge"
    ip link set "$bridge" up
    # All netns first: node namespaces then copy a complete /run/netns (node-init drops it).
    for ((i = 1; i <= nnodes; i++)); do
        n=$(node_name "$i")
        ip netns add "$n"
        # The peer is created directly in the node's netns and named eth0, as on a real node.
        ip link add "${name}v$i" type veth peer name eth0 netns "$n"
        ip link set "${name}v$i" master "$bridge" up
        ip -n "$n" addr add "$(node_ip "$i")/24" dev eth0
        ip -n "$n" link set lo up
        ip -n "$n" link set eth0 up
    done
}

start_slurmctld() {
    # slurmctld insists that its hostname matches SlurmctldHost: give it a UTS namespace.
    # env --default-signal: a background job of a script starts with SIGINT/SIGQUIT ignored.
    setsid unshare --uts -- /bin/sh -c 'hostname "$1"; echo $$ > "$2"; shift 2; exec "$@"' \
        sh "$ctl" "$dir/slurmctld.wpid" env --default-signal SLURM_CONF="$conf" \
        slurmctld -D -c -f "$conf" </dev/null >"$dir/slurmctld.out" 2>&1 &
}

start_nodes() {
    local i n
    for ((i = 1; i <= nnodes; i++)); do
        n=$(node_name "$i")
        # Only the network namespace is entered (ip netns exec would remount /sys and break
        # slurmd's cgroup setup); UTS and mount namespaces are new and private.
        setsid nsenter --net="/run/netns/$n" -- \
            unshare --uts --mount --propagation private -- \
            /bin/bash "$here/node-init.sh" "$n" "$dir" "$scratch" "$conf" "$ngpus" \
            </dev/null >"$dir/$n/node.out" 2>&1 &
    done
}

show_logs() {
    local f
    for f in "$dir"/slurmctld.out "$dir"/slurmctld.log "$dir"/*/node.out "$dir"/*/slurmd.log; do
        [[ -s $f ]] || continue
        echo "===== $f (last 30 lines)" >&2
        tail -n 30 "$f" >&2
    done
}

wait_ready() {
    local deadline=$((SECONDS + timeout)) states
    export SLURM_CONF=$conf
    while ((SECONDS < deadline)); do
        states=$(sinfo -h -N -o '%t' 2>/dev/null | sort | uniq -c | tr -s ' ' | tr '\n' ',' || true)
        if [[ $states == " $nnodes idle," ]]; then return 0; fi
        sleep 0.3
    done
    log "nodes not idle after ${timeout}s (sinfo: ${states:-no answer})"
    return 1
}

cmd_up() {
    need_root up
    check_free
    local t0=$SECONDS
    # Any failure from here on: show the logs and remove the half-built cluster.
    trap 'rc=$?; trap - ERR EXIT; if ((rc)); then show_logs; log "up failed; cleaning up"; cmd_down >&2 || true; fi; exit $rc' EXIT
    mkdir -p "$dir"
    write_config
    start_network
    start_slurmctld
    start_nodes
    wait_ready
    trap - EXIT
    log "cluster '$name' up in $((SECONDS - t0))s: nodes $(node_list)"
    cmd_env
}

# ------------------------------------------------------------------------------------ down
# True while PID exists and is not a zombie (killed node processes are reaped by init a bit later).
alive() { local st; st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) && [[ $st != Z ]]; }

# Kill PIDS with TERM, then KILL after a short grace; return when they are gone.
kill_wait() {
    local sig i p left
    [[ $# -gt 0 ]] || return 0
    for sig in TERM KILL; do
        kill -"$sig" "$@" 2>/dev/null || true
        for ((i = 0; i < 30; i++)); do
            left=""
            for p in "$@"; do alive "$p" && left+=" $p"; done
            [[ -n $left ]] || return 0
            sleep 0.1
        done
        set -- $left
    done
    log "processes survived SIGKILL:$left"
}

# PIDs (in this machine's view) whose environment or command line names our slurm.conf and
# whose command is FILTER (a regex): our slurmctld, and client commands pointed at us.
pids_using_conf() {
    local f p comm
    for f in /proc/[0-9]*; do
        p=${f#/proc/}
        [[ $p != "$$" ]] || continue
        comm=$(cat "$f/comm" 2>/dev/null) || continue
        [[ $comm =~ $1 ]] || continue
        if tr '\0' '\n' < "$f/cmdline" 2>/dev/null | grep -qxF -e "$conf" -e "SLURM_CONF=$conf" ||
           tr '\0' '\n' < "$f/environ" 2>/dev/null | grep -qxF "SLURM_CONF=$conf"; then
            echo "$p"
        fi
    done
}

cmd_down() {
    need_root down
    local n pids l m rc=0
    local nodes; nodes=$(existing_nodes)
    # 1. Everything inside the nodes (slurmd, slurmstepd, job tasks, holders, exec'd commands):
    #    all of it lives in the node's network namespace.
    for n in $nodes; do
        [[ -e /run/netns/$n ]] || continue
        # shellcheck disable=SC2046
        kill_wait $(ip netns pids "$n" 2>/dev/null)
    done
    # 2. slurmctld (host namespaces), and srun/sbatch/... left waiting on this cluster.
    # shellcheck disable=SC2046
    kill_wait $(pids_using_conf '^(slurmctld|srun|salloc|sattach|sbcast|sbatch|squeue|scontrol|sinfo|scancel|sstat)$')
    # 3. Links and namespaces. Deleting the host end of a veth removes its peer even if some
    #    stray mount namespace still pins the netns.
    for l in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E "^${name}v[0-9]+$" || true); do
        ip link del "$l" 2>/dev/null || true
    done
    for n in $nodes; do ip netns del "$n" 2>/dev/null || true; done
    ip link show "$bridge" >/dev/null 2>&1 && ip link del "$bridge"
    # 4. Mounts in this namespace under the state dir (none are made, but be sure), deepest first.
    for m in $(awk -v d="$dir" 'index($2, d "/") == 1 || $2 == d {print $2}' /proc/self/mounts | sort -r); do
        umount -l "$m" || rc=1
    done
    # 5. State.
    if [[ -e $dir ]]; then rm -rf --one-file-system "$dir" || rc=1; fi
    # Check.
    [[ -z $(existing_nodes) ]] || { log "netns left: $(existing_nodes | tr '\n' ' ')"; rc=1; }
    ip -o link show | grep -qE ": (${name}v[0-9]+|$bridge)[@:]" && { log "links left"; rc=1; }
    [[ ! -e $dir ]] || { log "$dir left"; rc=1; }
    ((rc == 0)) && log "cluster '$name' down"
    return $rc
}

# ----------------------------------------------------------------------------- env / exec
cmd_env() {
    local nodes; nodes=$(node_list)
    if [[ -f $dir/nodes ]]; then nodes=$(<"$dir/nodes"); fi
    nodes=${nodes% }
    local first=${nodes%% *}
    cat <<EOF
export SLURM_CONF=$conf
export CTRUN_CLUSTER_NAME=$name
export CTRUN_CLUSTER_DIR=$dir
export CTRUN_CLUSTER_NODES=$(wc -w <<<"$nodes")
export CTRUN_CLUSTER_NODE_NAMES='$nodes'
export CTRUN_CLUSTER_FIRST_NODE=$first
export CTRUN_CLUSTER_NODELIST=${name}n[1-$(wc -w <<<"$nodes")]
export CTRUN_CLUSTER_CONTROLLER=$ctl
export CTRUN_CLUSTER_SUBNET=$subnet
export CTRUN_CLUSTER_PORT_BASE=$port
export CTRUN_CLUSTER_SCRATCH=$scratch
export CTRUN_CLUSTER_GPUS=$ngpus
EOF
}

cmd_exec() {
    need_root exec
    [[ $# -ge 2 ]] || die "usage: cluster.sh exec NODE CMD [ARG...]"
    local n=$1; shift
    local pidf=$dir/$n/holder.pid pid
    [[ -f $pidf ]] || die "no node '$n' in cluster '$name' (nodes: $(existing_nodes | tr '\n' ' '))"
    pid=$(<"$pidf")
    [[ -d /proc/$pid ]] || die "node '$n' is not running (holder $pid gone)"
    exec nsenter -t "$pid" --net --uts --mount -- env SLURM_CONF="$conf" "$@"
}

cmd_status() {
    local n pid
    echo "cluster $name: dir $dir, conf $conf"
    pid=$(cat "$dir/slurmctld.wpid" 2>/dev/null || true)
    if [[ -n $pid && -d /proc/$pid ]]; then echo "slurmctld: pid $pid"; else echo "slurmctld: not running"; fi
    for n in $(existing_nodes); do
        echo "$n: $(ip netns pids "$n" 2>/dev/null | wc -l) processes"
    done
    [[ -f $conf ]] && SLURM_CONF=$conf sinfo -N -o '%N %t %c %G' 2>&1 || true
    [[ -f $conf ]] && SLURM_CONF=$conf squeue 2>&1 || true
}

case ${1:-} in
up) cmd_up ;;
down) cmd_down ;;
env) cmd_env ;;
exec) shift; cmd_exec "$@" ;;
status) cmd_status ;;
*) die "usage: cluster.sh up|down|env|exec NODE CMD...|status" ;;
esac
