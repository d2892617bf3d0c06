#!/bin/bash
# [fabric] rdma: the node's RDMA devices in the container, every runtime,
# with GPUs and without, and `ctrun check` reporting them.  This machine
# has no RDMA: each step makes its node look like a ConnectX node in a
# mount namespace of its own (fabriclib.sh fake_rdma_node: sysfs's
# class/infiniband, infiniband_verbs and infiniband_mad in the kernel's
# layout, /dev/infiniband/uverbs0-1, umad0-1, rdma_cm and /dev/gdrdrv);
# ctrun reads them where it always does (/sys/class, /dev).
#  runc and crun as root: the nodes made with their numbers, the device
#    cgroup letting them open (a fake node answers ENXIO, a denied one
#    EPERM); /dev/gdrdrv only with GPUs; rdma = false: none;
#  runc as a user: the host's nodes bound;
#  enroot with its restricted /dev (ENROOT_RESTRICT_DEV=y, a fresh tmpfs:
#    what ctrun asks for with device nodes), the nodes bound through its
#    fstab as its 99-mellanox.sh binds them;
#  Singularity and charliecloud: there (they bind the host's /dev);
#  rdma = true on a node without RDMA: exit 125, one line, nothing started;
#  `ctrun check` in a container: one fabric line per node, each port with
#    its state and link layer, "received" (and "NOT received" with
#    rdma = false); a 2-node check, each node its own fabric.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
. "$(dirname "$0")/fabriclib.sh"
command -v runc >/dev/null || skip "runc is not installed (Debian package runc)"
ROOTFS=$("$CTRUN_REPO/tests/images/build.sh" path busybox-rootfs)
[ -d "$ROOTFS" ] || skip "test image busybox-rootfs missing (run: tests/images/build.sh busybox)"
need_image BB busybox.sqsh
user=$("$CTRUN_REPO/tests/cluster/ensure-user.sh")
cd "$TMPD"
rt_rows_setup "$user"
chmod 755 "$TMPD"
glibc_image "$TMPD/glibc"
export ROOTFS BB TMPD CTRUN user

# What the containers print: each fabric node (type, major and minor in
# hex) and what opening two of them gives.
cat >"$TMPD/u/probe.sh" <<'EOF2'
for f in /dev/infiniband/* /dev/gdrdrv; do [ -c "$f" ] && stat -c "node %n %t %T" "$f"; done
for f in /dev/infiniband/uverbs0 /dev/infiniband/rdma_cm; do
	[ -c "$f" ] && echo "open $f: $(head -c1 "$f" 2>&1 >/dev/null)"; done
true
EOF2
chmod 644 "$TMPD/u/probe.sh"

# The step: a fake fabric in the step's own mount namespace (unless the
# first word is "bare"), then the command as root or as the user.
cat >"$TMPD/step.sh" <<'EOF2'
set -euo pipefail
. "$CTRUN_REPO/tests/integration/fabriclib.sh"
if [ "$1" = fake ]; then
	fake_rdma_node "$(mktemp -d "$TMPD/fake.XXXXXX")"
fi
shift
if [ "$1" = as_user ]; then
	shift
	exec su "$user" -s /bin/bash -c "cd '$TMPD/u' && $(printf '%q ' "$@")"
fi
shift
cd "$TMPD/u"
exec "$@"
EOF2

# in_step fake|bare as_user|as_root ENV... -- CMD...: the step on node 0.
in_step() {
	local kind=$1 who=$2
	shift 2
	srun -N1 -n1 -w "${NODES[0]}" unshare -m --propagation private \
		env TMPD="$TMPD" user="$user" CTRUN_REPO="$CTRUN_REPO" \
		bash "$TMPD/step.sh" "$kind" "$who" env $RT_ENV "$@"
}

RDMA_NODES="node /dev/infiniband/rdma_cm a 3a;node /dev/infiniband/umad0 e7 0;node /dev/infiniband/umad1 e7 1;node /dev/infiniband/uverbs0 e7 c0;node /dev/infiniband/uverbs1 e7 c1;"
nodes_of() { grep '^node ' <<<"$1" | LC_ALL=C sort | tr '\n' ';'; }
# Only the fabric's nodes: a runtime that shares the host's /dev shows
# gdrdrv too, whoever asked.
ib_nodes_of() { grep '^node /dev/infiniband/' <<<"$1" | LC_ALL=C sort | tr '\n' ';'; }
opens_ok() { # OUT WHAT: both tried, none denied by a device cgroup
	assert_eq 2 "$(grep -c '^open ' <<<"$1")" "nodes tried ($2)"
	if grep '^open ' <<<"$1" | grep -q 'not permitted'; then
		fail "$2: the device cgroup denies a node: $(grep '^open ' <<<"$1")"
	fi
}
probe() { # fake|bare as_user|as_root RUNTIME [ENV...]
	local kind=$1 who=$2 rt=$3
	shift 3
	in_step "$kind" "$who" "$@" "$CTRUN" -q --no-prefix --runtime "$rt" --image "$IMG" -- \
		sh "$TMPD/u/probe.sh"
}

oci_root() { # RUNTIME
	local out
	IMG=$ROOTFS
	out=$(probe fake as_root "$1" CTRUN_NV=false)
	echo "$out"
	assert_eq "$RDMA_NODES" "$(nodes_of "$out")" "$1: the RDMA nodes, made with their numbers"
	opens_ok "$out" "$1"
	out=$(probe fake as_root "$1" CTRUN_NV=auto)
	assert_eq "node /dev/gdrdrv 1ff 0;$RDMA_NODES" "$(nodes_of "$out")" \
		"$1 with the node's GPUs: GDRCopy's node too"
	out=$(probe fake as_root "$1" CTRUN_NV=false CTRUN_FABRIC_RDMA=false)
	assert_eq "" "$(nodes_of "$out")" "$1 with rdma = false: no node"
}
behaviour "runc as root: the RDMA nodes, openable; gdrdrv with GPUs; none with rdma = false" oci_root oci
behaviour "crun as root: the same" oci_root crun

oci_user() {
	local out
	IMG=$ROOTFS
	out=$(probe fake as_user oci CTRUN_NV=false)
	echo "$out"
	assert_eq "$RDMA_NODES" "$(nodes_of "$out")" "rootless runc: the host's nodes bound"
}
behaviour "runc as a user: the host's nodes bound" oci_user

bind_rt() { # RUNTIME [ENV...]: the nodes there, as the host's
	local rt=$1 out
	shift
	IMG=$BB
	[ "$rt" != singularity ] || IMG=$ROOTFS
	out=$(probe fake as_root "$rt" CTRUN_NV=false "$@")
	echo "$out"
	assert_eq "$RDMA_NODES" "$(ib_nodes_of "$out")" "$rt: the RDMA nodes"
}
behaviour "enroot: restricted /dev, the nodes through its fstab" with_rt enroot bind_rt
behaviour "singularity: the nodes" with_rt singularity bind_rt
behaviour "charliecloud: the nodes" with_rt charliecloud bind_rt

rdma_required() {
	local err
	IMG=$ROOTFS
	run_rc probe bare as_root oci CTRUN_FABRIC_RDMA=true 2>"$TMPD/err"
	err=$(grep -v '^srun: ' "$TMPD/err" || true)
	assert_eq 125 "$rc" "exit status of rdma = true without RDMA"
	assert_eq "ctrun: [fabric] rdma = true, but this node has no RDMA device (/sys/class/infiniband is empty or missing): set rdma = auto to run without one" \
		"$err" "the one line"
	assert_no_containers
}
behaviour "rdma = true on a node without RDMA: exit 125, one line, nothing started" rdma_required

# ctrun check in a container: the report's fabric line for the node.
check_fabric() {
	local out
	IMG=$TMPD/glibc
	out=$(in_step fake as_root CTRUN_NV=false "$CTRUN" --runtime oci --image "$IMG" check)
	echo "$out"
	grep -qx "fabric: ${NODES[0]}: RDMA mlx5_0:1 ACTIVE IB 200 Gb/sec (4X HDR) (received), mlx5_1:1 DOWN RoCE 100 Gb/sec (2X EDR) (received); libraries: -; NCCL: not run" <<<"$out" ||
		fail "no fabric line with both ports received"
	grep -qx "check: ok" <<<"$out" || fail "check did not pass"
	out=$(in_step fake as_root CTRUN_NV=false CTRUN_FABRIC_RDMA=false "$CTRUN" --runtime oci --image "$IMG" check)
	grep -q "^fabric: ${NODES[0]}: RDMA mlx5_0:1 ACTIVE IB 200 Gb/sec (4X HDR) (NOT received)," <<<"$out" ||
		fail "rdma = false: the report does not say the ports were not received: $out"
}
behaviour "ctrun check in a container: the node's ports, received or not" check_fabric

check_two_nodes() {
	local out
	out=$(srun -N2 --ntasks-per-node=1 bash -c '
		if [ "$SLURM_NODEID" = 0 ]; then
			exec unshare -m --propagation private bash "$0" fake as_root env CTRUN_NV=false \
				"$1" --runtime oci --image "$2" check
		fi
		exec env CTRUN_NV=false "$1" --runtime oci --image "$2" check' \
		"$TMPD/step.sh" "$CTRUN" "$TMPD/glibc")
	echo "$out"
	grep -q "^fabric: ${NODES[0]}: RDMA mlx5_0:1 ACTIVE IB" <<<"$out" || fail "node 0's fabric"
	grep -qx "fabric: ${NODES[1]}: RDMA none; libraries: -; NCCL: not run" <<<"$out" ||
		fail "node 1 has no RDMA"
}
behaviour "a 2-node check: a fabric line per node" check_two_nodes
behaviour "no container left" assert_no_containers
