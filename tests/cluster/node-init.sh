#!/bin/bash
# node-init.sh — first process of one test node; cluster.sh starts it as
#   nsenter --net=/run/netns/NODE -- unshare --uts --mount --pid --fork --mount-proc \
#       --propagation private -- node-init.sh ...
# so it already sits in the node's network namespace and in fresh, private UTS and mount
# namespaces, as PID 1 of a new PID namespace with its own /proc. It makes the node look like a
# compute node (hostname, /etc/hosts, local scratch, a /dev with GPUs), starts slurmd and stays
# on as the node's init.
#
# Usage: node-init.sh NODE STATE_DIR SCRATCH SLURM_CONF NGPUS
# Nothing here touches the machine's own /etc/hosts or /dev: every mount below lives only in
# this node's mount namespace and disappears with its last process.
set -euo pipefail

node=$1 dir=$2 scratch=$3 conf=$4 ngpus=$5
ndir=$dir/$node

# Own hostname: slurmd -N NODE also wants gethostname() to agree for tools run in the node.
hostname "$node"

# Our mount namespace began as a copy of the machine's, which includes the nsfs bind mounts
# under /run/netns of every cluster that was up at that moment. A copy pins that network
# namespace (and its veth) after `ip netns del` in the machine, so drop them all here.
while read -r _ mnt _; do
    case $mnt in /run/netns/*) umount -l "$mnt" 2>/dev/null || true ;; esac
done < /proc/self/mounts

# Private /etc/hosts listing the controller and all nodes (PyTorch resolves MASTER_ADDR).
# A bind mount, never an edit of the machine's file.
mount --bind "$dir/etc/hosts" /etc/hosts

# Node-local scratch: same path on every node, different content, like a local disk.
mount -t tmpfs -o mode=1777,size=2g "ctrun-scratch-$node" "$scratch"

# Private /dev: copy the machine's /dev into a tmpfs (-x: not the contents of pts/shm, which
# are other file systems), add fake NVIDIA device nodes for Slurm's gres/gpu, then move it over
# /dev and give it its own devpts and shm. The machine's /dev is never written.
mount -t tmpfs -o mode=755,size=16m "ctrun-dev-$node" "$ndir/dev"
cp -a -x /dev/. "$ndir/dev/"
# On a machine with real NVIDIA GPUs the copy already holds the real nodes: keep them.
for ((g = 0; g < ngpus; g++)); do
    [[ -e $ndir/dev/nvidia$g ]] || mknod -m 666 "$ndir/dev/nvidia$g" c 195 "$g"
done
[[ -e $ndir/dev/nvidiactl ]] || mknod -m 666 "$ndir/dev/nvidiactl" c 195 255
# /dev/fuse is 0666 on a compute node (udev's rule); a build machine may keep it 0600.
[[ -e $ndir/dev/fuse ]] && chmod 666 "$ndir/dev/fuse"
mount --move "$ndir/dev" /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts -o newinstance,ptmxmode=0666,mode=620,gid=5 devpts /dev/pts
rm -f /dev/ptmx && ln -s pts/ptmx /dev/ptmx
mount -t tmpfs -o mode=1777,nosuid,nodev shm /dev/shm
# enroot's restricted /dev (ENROOT_RESTRICT_DEV, set with GPUs and CDI device nodes) binds
# the node's /dev/mqueue and /dev/log (10-devices.sh, without nofail): a compute node has
# syslog's socket there; the test node, no syslog, an empty file in its private /dev.
mkdir -p /dev/mqueue && { mount -t mqueue mqueue /dev/mqueue 2>/dev/null || true; }
[[ -e /dev/log || -L /dev/log ]] || : > /dev/log

# We are PID 1 of the node's PID namespace (unshare --pid --fork --mount-proc), so `ps` in the
# node shows only the node's processes, as on a real one, and killing us from the machine ends
# every process of the node at once. We stay PID 1: we keep the namespaces enterable for
# `cluster.sh exec` even if slurmd dies, and we reap orphans (bash reaps every child that
# exits while it waits), which slurmd would not.
#
# We were started as a background job of a non-interactive shell, which ignores SIGINT and
# SIGQUIT; slurmd would pass that on to every task. Reset all signals to their defaults.
#
# Nothing in the loop may end us: a node crash (`kill -9 -1` in the node, t_faults.sh) spares
# PID 1 but kills our `sleep`, and under `set -e` its status 137 would end PID 1 and with it
# the node. Once slurmd has been restarted from outside (not our job, so `wait` returns at
# once) we spend nearly all our time in that `sleep`: the second crash always hit it.
export SLURM_CONF=$conf
env --default-signal slurmd -D -N "$node" -f "$conf" </dev/null &
set +e
while :; do
    wait
    sleep 1
done
