#!/bin/bash
# cluster.sh — a real multi-node Slurm cluster on this one machine, for ctrun's integration
# tests: Debian's Slurm 22.05 by default, or any other install (CTRUN_SLURM_PREFIX).
#
#   cluster.sh up            start slurmctld + N slurmd nodes, wait until all are idle
#   cluster.sh down          remove everything `up` made (safe after a failed up, safe twice)
#   cluster.sh env           print `export` lines for tests (eval "$(cluster.sh env)")
#   cluster.sh exec NODE CMD...   run CMD inside NODE's net+uts+mount+pid namespaces
#   cluster.sh slurmd NODE   start NODE's slurmd again after a crash killed it (kill -9 -1 in
#                            the node spares only its init), as the node's init started it
#   cluster.sh status        show what is running
#
# Each node is a network namespace (veth on a bridge, own IP), a UTS namespace (own hostname),
# a mount namespace (private /etc/hosts, node-local scratch tmpfs, private /dev with fake GPUs)
# and a PID namespace (ps shows the node's processes only), running `slurmd -N NODE`.
# slurmctld runs in the machine's network namespace on the bridge address under the
# controller's hostname. Clients (srun, sbatch, ...) run anywhere with
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
#   CTRUN_CLUSTER_PLUGSTACK  (none)       lines added to the cluster's plugstack.conf (after the
#                                         machine's plugstack.conf.d), e.g. "required
#                                         /path/build/spank_ctrun.so ctrun=/path/build/ctrun":
#                                         a cluster of its own loads a SPANK plugin, the
#                                         machine's /etc/slurm is never touched
#   CTRUN_SLURM_PREFIX       (PATH's)     a Slurm install (PREFIX/sbin/slurmctld, PREFIX/bin/srun):
#                                         its daemons run the cluster, `env` puts its commands
#                                         first on PATH (e.g. /opt/slurm-new, a 26.05 build)
#   CTRUN_CLUSTER_PLUGINDIR  (none)       with CTRUN_SLURM_PREFIX: a directory of plugins the
#                                         cluster loads after PREFIX/lib/slurm's (PluginDir),
#                                         e.g. the mpi/pmix slurm-pmix.sh built for that install
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
prefix=${CTRUN_SLURM_PREFIX:-}
plugstack=${CTRUN_CLUSTER_PLUGSTACK:-}
plugindir=${CTRUN_CLUSTER_PLUGINDIR:-}

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
[[ $ngpus =~ ^[0-9]+$ && $ngpus -le 64 ]] || die "CTRUN_CLUSTER_GPUS '$ngpus': 0..64"
[[ $ncpus =~ ^[1-9][0-9]*$ ]] || die "CTRUN_CLUSTER_CPUS '$ncpus': a positive number"
[[ $timeout =~ ^[0-9]+$ ]] || die "CTRUN_CLUSTER_TIMEOUT '$timeout': seconds"
[[ $dir == /* && $dir != / ]] || die "CTRUN_CLUSTER_DIR '$dir' must be an absolute path"
if [[ -n $prefix ]]; then
    [[ -x $prefix/sbin/slurmctld && -x $prefix/sbin/slurmd && -x $prefix/bin/srun ]] ||
        die "CTRUN_SLURM_PREFIX '$prefix' has no sbin/slurmctld, sbin/slurmd and bin/srun"
    # Daemons and clients of that install, for everything this script starts.
    export PATH=$prefix/sbin:$prefix/bin:$PATH
fi
[[ -z $plugindir || ( -n $prefix && $plugindir == /* && -d $plugindir ) ]] ||
    die "CTRUN_CLUSTER_PLUGINDIR '$plugindir' needs CTRUN_SLURM_PREFIX and must be an existing absolute directory"

node_name() { echo "${name}n$1"; }
node_ip() { echo "$subnet.$((10 + $1))"; }
node_list() { local i; for ((i = 1; i <= nnodes; i++)); do printf '%s ' "$(node_name "$i")"; done; }

# Nodes that exist now, whatever CTRUN_CLUSTER_NODES says: recorded ones plus any netns of
# ours (so `down` cleans up after an `up` with another node count or one that died half way).
existing_nodes() {
    {
        if [[ -f $dir/nodes ]]; then tr ' ' '\n' < "$dir/nodes"; fi
        ip netns list 2>/dev/null | awk '{print $1}'
    } | grep -E "^${name}n[0-9]+$" | sort -u || true
}

need_root() { [[ $(id -u) == 0 ]] || die "$1 needs root (namespaces, mounts, links)"; }

# write_config: slurm.conf, gres.conf, plugstack.conf and the nodes' /etc/hosts
# shellcheck source-path=SCRIPTDIR source=config.sh
. "$here/config.sh"

# ------------------------------------------------------------------------------------- up
check_free() {
    [[ ! -e $dir ]] || die "cluster '$name' is already up or left over ($dir exists): run 'cluster.sh down' first"
    ip link show "$bridge" >/dev/null 2>&1 && die "cluster '$name' is already up or left over (bridge $bridge exists): run 'cluster.sh down' first"
    [[ -z $(existing_nodes) ]] || die "cluster '$name' is already up or left over (netns $(existing_nodes | tr '\n' ' ')): run 'cluster.sh down' first"
    ip -4 -o addr show | grep -qF " inet $subnet." && die "subnet $subnet.0/24 is already in use on this machine: set CTRUN_CLUSTER_SUBNET"
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
    disown
}

start_nodes() {
    local i n
    local -a upids=()
    for ((i = 1; i <= nnodes; i++)); do
        n=$(node_name "$i")
        # Only the network namespace is entered (ip netns exec would remount /sys and break
        # slurmd's cgroup setup); UTS, mount and PID namespaces are new and private.
        setsid nsenter --net="/run/netns/$n" -- \
            unshare --uts --mount --pid --fork --mount-proc --propagation private -- \
            /bin/bash "$here/node-init.sh" "$n" "$dir" "$scratch" "$conf" "$ngpus" \
            </dev/null >"$dir/$n/node.out" 2>&1 &
        upids[i]=$!
        disown   # not our job any more: no "Killed" notices when down ends it
    done
    # Record each node's init (the child unshare forked; PID 1 inside) as the machine sees it:
    # `exec` enters its namespaces.
    local kids t
    for ((i = 1; i <= nnodes; i++)); do
        n=$(node_name "$i")
        for ((t = 0; t < 100; t++)); do
            kids=$(cat "/proc/${upids[i]}/task/${upids[i]}/children" 2>/dev/null || true)
            [[ -z $kids ]] || break
            sleep 0.05
        done
        [[ -n $kids ]] || die "node $n did not start"
        echo "${kids%% *}" > "$dir/$n/init.pid"
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

# Poll sinfo until every node is idle; give up early when a daemon or node init has died.
wait_ready() {
    local deadline=$((SECONDS + timeout)) states pid n
    export SLURM_CONF=$conf
    while ((SECONDS < deadline)); do
        states=$(sinfo -h -N -o '%t' 2>/dev/null | sort | uniq -c | tr -s ' ' | tr '\n' ',' || true)
        if [[ $states == " $nnodes idle," ]]; then return 0; fi
        pid=$(cat "$dir/slurmctld.wpid" 2>/dev/null || true)
        if [[ -n $pid ]] && ! alive "$pid"; then log "slurmctld exited"; return 1; fi
        for n in $(node_list); do
            alive "$(<"$dir/$n/init.pid")" || { log "node $n exited (see $dir/$n/node.out)"; return 1; }
        done
        sleep 0.2
    done
    log "nodes not idle after ${timeout}s (sinfo: ${states:-no answer})"
    return 1
}

cmd_up() {
    need_root up
    check_free
    local t0=$EPOCHREALTIME
    # Any failure from here on: show the logs and remove the half-built cluster.
    trap 'rc=$?; trap - ERR EXIT; if ((rc)); then show_logs; log "up failed; cleaning up"; cmd_down >&2 || true; fi; exit $rc' EXIT
    mkdir -p "$dir"
    write_config
    start_network
    start_slurmctld
    start_nodes
    wait_ready
    trap - EXIT
    log "cluster '$name' up in $(awk "BEGIN{printf \"%.1f\", $EPOCHREALTIME - $t0}")s: nodes $(node_list)"
    cmd_env
}

# ------------------------------------------------------------------------------------ down
# True while PID exists and is not a zombie (killed node processes are reaped by init a bit later).
alive() { local st; st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) && [[ $st != Z ]]; }

# kill_wait GRACE PID... — SIGTERM, up to GRACE seconds for them to go, then SIGKILL (GRACE 0:
# SIGKILL at once). Returns when all are gone.
kill_wait() {
    local grace=$1 sig i p left n
    shift
    [[ $# -gt 0 ]] || return 0
    killed+=("$@")
    for sig in TERM KILL; do
        [[ $sig == TERM && $grace == 0 ]] && continue
        kill -"$sig" "$@" 2>/dev/null || true
        if [[ $sig == TERM ]]; then n=$((grace * 20)); else n=100; fi
        for ((i = 0; i < n; i++)); do
            left=""
            for p in "$@"; do alive "$p" && left+=" $p"; done
            [[ -n $left ]] || return 0
            sleep 0.05
        done
        # shellcheck disable=SC2086
        set -- $left
    done
    log "processes survived SIGKILL:$left"
}

# PIDs (in this machine's view) with SLURM_CONF=our slurm.conf in their environment whose
# command matches the regex $1: our slurmctld, and clients (srun, ...) still talking to us.
pids_using_conf() {
    local f p comm
    # One grep over all environments: a few forks per process would take a second.
    for f in $(grep -lzxF "SLURM_CONF=$conf" /proc/[0-9]*/environ 2>/dev/null); do
        p=${f#/proc/}
        p=${p%/environ}
        [[ $p != "$$" ]] || continue
        { read -r comm < "/proc/$p/comm"; } 2>/dev/null || continue
        [[ $comm =~ $1 ]] && echo "$p"
    done
    return 0
}

cmd_down() {
    need_root down
    local n l m p i left rc=0
    local nodes; nodes=$(existing_nodes)
    killed=()
    # 1. Everything inside the nodes (node init, slurmd, slurmstepd, job tasks, exec'd
    #    commands) lives in the node's network namespace. No grace: nothing needs saving, and
    #    SIGKILL to a node's init ends its whole PID namespace at once.
    for n in $nodes; do
        [[ -e /run/netns/$n ]] || continue
        # shellcheck disable=SC2046
        kill_wait 0 $(ip netns pids "$n" 2>/dev/null)
    done
    # 2. slurmctld (host namespaces), and srun/sbatch/... left waiting on this cluster.
    p=$(cat "$dir/slurmctld.wpid" 2>/dev/null || true)
    [[ -n $p && $(cat "/proc/$p/comm" 2>/dev/null) == slurmctld ]] || p=""
    # shellcheck disable=SC2046
    kill_wait 1 $p $(pids_using_conf '^(slurmctld|slurmscriptd|srun|salloc|sattach|sbcast|sbatch|squeue|scontrol|sinfo|scancel|sstat)$' | grep -vx "$p")
    # 3. Links and namespaces. Deleting the host end of a veth removes its peer even if some
    #    stray mount namespace still pins the netns.
    for l in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E "^${name}v[0-9]+$" || true); do
        ip link del "$l" 2>/dev/null || true
    done
    for n in $nodes; do ip netns del "$n" 2>/dev/null || true; done
    if ip link show "$bridge" >/dev/null 2>&1; then ip link del "$bridge" || rc=1; fi
    # 4. Mounts in this namespace under the state dir (none are made, but be sure), deepest first.
    for m in $(awk -v d="$dir" 'index($2, d "/") == 1 || $2 == d {print $2}' /proc/self/mounts | sort -r); do
        umount -l "$m" || rc=1
    done
    # 5. Our daemons were orphans, so the machine's init reaps them, and it takes its time
    #    (~2 s here); wait so that `ps` looks as before `up`, zombies included.
    for ((i = 0; i < 100; i++)); do
        left=""
        for p in "${killed[@]}"; do [[ -e /proc/$p ]] && left+=" $p"; done
        [[ -n $left ]] || break
        sleep 0.05
    done
    # 6. State.
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
    local nodes count hostlist
    nodes=$(node_list)
    if [[ -f $dir/nodes ]]; then nodes=$(<"$dir/nodes"); fi
    nodes=${nodes% }
    count=$(wc -w <<<"$nodes")
    hostlist=${name}n[1-$count]
    ((count > 1)) || hostlist=${name}n1
    cat <<EOF
export SLURM_CONF=$conf
export CTRUN_CLUSTER_NAME=$name
export CTRUN_CLUSTER_DIR=$dir
export CTRUN_CLUSTER_NODES=$count
export CTRUN_CLUSTER_NODE_NAMES='$nodes'
export CTRUN_CLUSTER_FIRST_NODE=${nodes%% *}
export CTRUN_CLUSTER_NODELIST=$hostlist
export CTRUN_CLUSTER_CONTROLLER=$ctl
export CTRUN_CLUSTER_SUBNET=$subnet
export CTRUN_CLUSTER_PORT_BASE=$port
export CTRUN_CLUSTER_SCRATCH=$scratch
export CTRUN_CLUSTER_GPUS=$ngpus
export CTRUN_CLUSTER_SLURM='$(slurmctld -V 2>/dev/null || echo unknown)'
EOF
    if [[ -n $prefix ]]; then
        echo "export CTRUN_SLURM_PREFIX=$prefix"
        echo "export PATH=$prefix/bin:\$PATH"
    fi
}

# node_init NODE: the machine's pid of NODE's init (the way into its namespaces), or die.
node_init() {
    local pidf=$dir/$1/init.pid pid
    [[ -f $pidf ]] || die "no node '$1' in cluster '$name' (nodes: $(existing_nodes | tr '\n' ' '))"
    pid=$(<"$pidf")
    alive "$pid" || die "node '$1' is not running (its init, pid $pid, is gone)"
    echo "$pid"
}

cmd_exec() {
    need_root exec
    [[ $# -ge 2 ]] || die "usage: cluster.sh exec NODE CMD [ARG...]"
    local n=$1 pid; shift
    pid=$(node_init "$n")
    # --wd: entering a mount namespace resets the working directory to /; keep the caller's
    # (the shared file system is the same path in the nodes).
    exec nsenter -t "$pid" --net --uts --mount --pid --wd="$PWD" -- env SLURM_CONF="$conf" "$@"
}

# The node's slurmd as node-init.sh starts it: a daemon in its own session (not the caller's:
# a test's leftover check and clean-up go by session), default signals, in /.
cmd_slurmd() {
    need_root slurmd
    [[ $# -eq 1 ]] || die "usage: cluster.sh slurmd NODE"
    local n=$1 pid
    pid=$(node_init "$n")
    nsenter -t "$pid" --net --uts --mount --pid --wd=/ -- setsid -f env --default-signal \
        SLURM_CONF="$conf" slurmd -D -N "$n" -f "$conf" </dev/null >/dev/null 2>&1
}

cmd_status() {
    local n pid
    echo "cluster $name: dir $dir, conf $conf"
    pid=$(cat "$dir/slurmctld.wpid" 2>/dev/null || true)
    if [[ -n $pid && -d /proc/$pid ]]; then echo "slurmctld: pid $pid"; else echo "slurmctld: not running"; fi
    for n in $(existing_nodes); do
        echo "$n: $(ip netns pids "$n" 2>/dev/null | wc -l) processes"
    done
    if [[ -f $conf ]]; then
        SLURM_CONF=$conf sinfo -N -o '%N %t %c %G' 2>&1 || true
        SLURM_CONF=$conf squeue 2>&1 || true
    fi
}

case ${1:-} in
up) cmd_up ;;
down) cmd_down ;;
env) cmd_env ;;
exec) shift; cmd_exec "$@" ;;
slurmd) shift; cmd_slurmd "$@" ;;
status) cmd_status ;;
*) die "usage: cluster.sh up|down|env|exec NODE CMD...|slurmd NODE|status" ;;
esac
