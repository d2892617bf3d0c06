#!/bin/bash
# tag: every-slurm
# ctrun-hook with MIG devices, IMEX channels and /proc/driver/nvidia masked
# to the container's GPUs, with real runc running busybox bundles on a test
# node made to look like one with a loaded driver (hooklib.sh
# fake_nvidia_node, in each step's private mount namespace: the driver's
# proc files, mig-minors, the nvidia-caps and IMEX majors, capability and
# channel nodes, NVML in a real ld.so.cache; GPU 1 in MIG mode with MIG
# devices $MIG_A = GI 1/CI 0 and $MIG_B = GI 2/CI 0):
#  a MIG device by UUID (`ctrun hooks configure --gpus MIG-...`, as
#    Slurm's CUDA_VISIBLE_DEVICES names it) with [gpu] imex_channels=1:
#    exactly its parent /dev/nvidia1, nvidiactl, the capability nodes of
#    its GI and CI (nvidia-cap21, 22; not GI 1's 12, 13) and channel1, each
#    openable through the device cgroup; CUDA_VISIBLE_DEVICES its UUID;
#    /proc/driver/nvidia lists only GPU 1 and only GI 2's capabilities,
#    with ModifyDeviceFiles: 0;
#  hooks.d style (podman): NVIDIA_VISIBLE_DEVICES=1:0 (GPU:MIG) and
#    NVIDIA_IMEX_CHANNELS=all in the container's environment;
#  a whole GPU: /proc/driver/nvidia shows that GPU alone, no capability;
#  refusals in one line before the container starts: an unknown MIG
#    device, whole GPUs mixed with MIG, an IMEX channel the node lacks;
#  enroot mode: the same as fstab lines (a tmpfs, then binds) and
#    CUDA_VISIBLE_DEVICES=<MIG UUID> in ENROOT_ENVIRON.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/hooklib.sh"
hook_requirements
command -v cc >/dev/null || fail "no C compiler for the fake NVML (make deps installs gcc)"
export HOOK TMPD CTRUN MIG_A MIG_B

# What the containers print: the NVIDIA nodes (type, major, minor in hex),
# CUDA_VISIBLE_DEVICES, the masked procfs, and what opening the MIG and
# IMEX nodes gives (ENXIO: the cgroup let it through to a fake node).
# shellcheck disable=SC2016
MIGREPORT='for f in /dev/nvidia* /dev/nvidia-caps/* /dev/nvidia-caps-imex-channels/*; do
	[ -c "$f" ] && stat -c "node %n %t %T" "$f"; done
echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-unset}"
ls /proc/driver/nvidia/gpus | sed "s/^/procgpu /"
grep "^ModifyDeviceFiles" /proc/driver/nvidia/params
find /proc/driver/nvidia/capabilities -name access 2>/dev/null | sed "s/^/cap /"
for f in /dev/nvidia-caps/* /dev/nvidia-caps-imex-channels/*; do
	[ -c "$f" ] && echo "open $f: $(head -c1 "$f" 2>&1 >/dev/null)"; done
true'
export MIGREPORT

cat >"$TMPD/inner.sh" <<'INNER'
set -euo pipefail
. "$CTRUN_REPO/tests/integration/hooklib.sh"
case=$1
shift
fake_nvidia_node "$TMPD/fake-$case"
before=$(mount_count)
b=$TMPD/b-$case
if [ "$case" = hooksd ]; then
	make_bundle "$b" "$MIGREPORT" NVIDIA_VISIBLE_DEVICES=1:0 NVIDIA_IMEX_CHANNELS=all
	add_hook "$b"
elif [ "$case" = enroot ]; then
	r=$TMPD/enroot
	mkdir -p "$r/rootfs/dev" "$r/rootfs/proc" "$r/rootfs/etc" "$r/rootfs/usr/lib64"
	mount -t tmpfs -o mode=755 tmpfs "$r/rootfs/dev"
	mount --rbind /proc "$r/rootfs/proc"
	: >"$r/environment"
	: >"$r/fstab"
	ENROOT_ROOTFS=$r/rootfs ENROOT_ENVIRON=$r/environment ENROOT_MOUNTS=$r/fstab ENROOT_PID=$$ \
		"$HOOK" enroot "$@" 2>"$b.err" || { echo "rc=$?" >"$b.rc"; exit 0; }
	echo 0 >"$b.rc"
	exit 0
else
	make_bundle "$b" "$MIGREPORT"
	"$CTRUN" -q hooks configure "$@" "$b"
fi
proc_bind_bundle "$b"
set +e
runc --root "$TMPD/runc" run --bundle "$b" "hk-mig-$case-$SLURM_JOB_ID" >"$b.out" 2>"$b.err"
echo $? >"$b.rc"
set -e
runc --root "$TMPD/runc" delete -f "hk-mig-$case-$SLURM_JOB_ID" 2>/dev/null || true
echo "$(( $(mount_count) - before ))" >"$b.left"
INNER

# in_node CASE [ARG...]: inner.sh CASE in a step on the first node, in a
# mount namespace of its own (the fake driver lives and dies with it).
in_node() {
	run_rc env CTRUN_GPU_IMEX_CHANNELS="${IMEX:-}" srun -N1 -w "${NODES[0]}" \
		unshare -m --propagation private bash "$TMPD/inner.sh" "$@"
	assert_eq 0 "$rc" "the step of case $1"
	b=$TMPD/b-$1
	cat "$b.out" "$b.err" 2>/dev/null || true
}

nodes_of() { grep '^node ' "$1" | LC_ALL=C sort | tr '\n' ';'; }

mig_by_uuid() {
	local out
	IMEX=1 in_node uuid --gpus "$MIG_B"
	out=$TMPD/b-uuid.out
	assert_eq 0 "$(cat "$TMPD/b-uuid.rc")" "runc with MIG device $MIG_B"
	assert_eq "node /dev/nvidia-caps-imex-channels/channel1 ea 1;node /dev/nvidia-caps/nvidia-cap21 eb 15;node /dev/nvidia-caps/nvidia-cap22 eb 16;node /dev/nvidia1 c3 1;node /dev/nvidiactl c3 ff;" \
		"$(nodes_of "$out")" "device nodes: the parent GPU, GI 2's and CI 0's caps, IMEX channel 1"
	grep -qx "CUDA_VISIBLE_DEVICES=$MIG_B" "$out" || fail "CUDA_VISIBLE_DEVICES is not the MIG UUID"
	assert_eq "procgpu 0000:02:00.0" "$(grep '^procgpu' "$out")" "GPUs in /proc/driver/nvidia/gpus"
	grep -qx "ModifyDeviceFiles: 0" "$out" || fail "params not rewritten: $(grep Modify "$out")"
	assert_eq "cap /proc/driver/nvidia/capabilities/gpu1/mig/gi2/access;cap /proc/driver/nvidia/capabilities/gpu1/mig/gi2/ci0/access;" \
		"$(grep '^cap ' "$out" | sort | tr '\n' ';')" "MIG capabilities in /proc"
	assert_eq 3 "$(grep -c '^open ' "$out")" "MIG and IMEX nodes tried"
	if grep '^open ' "$out" | grep -q 'not permitted'; then
		fail "the device cgroup denies a node: $(grep '^open' "$out")"
	fi
	assert_eq 0 "$(cat "$TMPD/b-uuid.left")" "mounts left in the step's namespace"
}

mig_hooksd() {
	local out=$TMPD/b-hooksd.out
	in_node hooksd
	assert_eq 0 "$(cat "$TMPD/b-hooksd.rc")" "runc with NVIDIA_VISIBLE_DEVICES=1:0"
	assert_eq "node /dev/nvidia-caps-imex-channels/channel0 ea 0;node /dev/nvidia-caps-imex-channels/channel1 ea 1;node /dev/nvidia-caps/nvidia-cap12 eb c;node /dev/nvidia-caps/nvidia-cap13 eb d;node /dev/nvidia1 c3 1;node /dev/nvidiactl c3 ff;" \
		"$(nodes_of "$out")" "device nodes of MIG device 1:0 and every IMEX channel"
	grep -qx "CUDA_VISIBLE_DEVICES=unset" "$out" || fail "hooks.d: CUDA_VISIBLE_DEVICES changed?"
	if grep '^open ' "$out" | grep -q 'not permitted'; then
		fail "the hook's device cgroup rules miss a node: $(grep '^open' "$out")"
	fi
}

whole_gpu() {
	local out=$TMPD/b-whole.out
	in_node whole --gpus 2
	assert_eq 0 "$(cat "$TMPD/b-whole.rc")" "runc with GPU 2"
	assert_eq "node /dev/nvidia2 c3 2;node /dev/nvidiactl c3 ff;" "$(nodes_of "$out")" "nodes"
	assert_eq "procgpu 0000:03:00.0" "$(grep '^procgpu' "$out")" "GPUs in /proc/driver/nvidia/gpus"
	assert_eq "" "$(grep '^cap ' "$out" || true)" "no MIG capability for a whole GPU"
	grep -qx "CUDA_VISIBLE_DEVICES=0" "$out" || fail "CUDA_VISIBLE_DEVICES"
}

# refused CASE WANT ARG...: runc fails, the hook's one line names the
# problem, nothing is left mounted.
refused() {
	local c=$1 want=$2
	shift 2
	in_node "$c" "$@"
	[ "$(cat "$TMPD/b-$c.rc")" != 0 ] || fail "$c: the container started"
	grep -q "ctrun-hook: .*$want" "$TMPD/b-$c.err" || fail "$c: no line saying '$want'"
	assert_eq 0 "$(cat "$TMPD/b-$c.left")" "$c: mounts left in the step's namespace"
}
refusals() {
	refused unknown "names MIG device 'MIG-cccccccc-0000-4000-8000-000000000003', which this host does not have" \
		--gpus MIG-cccccccc-0000-4000-8000-000000000003
	refused mixed "mixes whole GPUs and MIG devices" --gpus "0,$MIG_A"
	IMEX=5 refused imex "asks for IMEX channel 5" --gpus 2
}

enroot_mode() {
	local r=$TMPD/enroot l
	in_node enroot --gpus "$MIG_A" --imex 0
	cat "$r/environment" "$r/fstab"
	assert_eq 0 "$(cat "$TMPD/b-enroot.rc")" "ctrun-hook enroot --gpus $MIG_A --imex 0"
	assert_eq "CUDA_VISIBLE_DEVICES=$MIG_A;NVIDIA_VISIBLE_DEVICES=$MIG_A;" \
		"$(tr '\n' ';' <"$r/environment")" "ENROOT_ENVIRON"
	for l in "/dev/nvidia1 /dev/nvidia1 none x-create=file,bind,ro,nosuid,noexec,private" \
		"/dev/nvidia-caps/nvidia-cap12 /dev/nvidia-caps/nvidia-cap12 none x-create=file,bind,ro,nosuid,noexec,private" \
		"/dev/nvidia-caps/nvidia-cap13 /dev/nvidia-caps/nvidia-cap13 none x-create=file,bind,ro,nosuid,noexec,private" \
		"/dev/nvidia-caps-imex-channels/channel0 /dev/nvidia-caps-imex-channels/channel0 none x-create=file,bind,ro,nosuid,noexec,private" \
		"tmpfs /proc/driver/nvidia tmpfs x-create=dir,mode=0555,nosuid,nodev,noexec,private" \
		"/proc/driver/nvidia/params /proc/driver/nvidia/params none x-create=file,bind,ro,nosuid,nodev,noexec,private" \
		"/proc/driver/nvidia/gpus/0000:02:00.0 /proc/driver/nvidia/gpus/0000:02:00.0 none x-create=dir,bind,ro,nosuid,nodev,noexec,private" \
		"/proc/driver/nvidia/capabilities/gpu1/mig/gi1/ci0/access /proc/driver/nvidia/capabilities/gpu1/mig/gi1/ci0/access none x-create=file,bind,ro,nosuid,nodev,noexec,private"; do
		grep -qxF "$l" "$r/fstab" || fail "ENROOT_MOUNTS lacks: $l"
	done
	if grep -q 'nvidia-cap2[12]\|channel1\|gpus/0000:0[134]\|/dev/nvidia[023] ' "$r/fstab"; then
		fail "ENROOT_MOUNTS has another device's lines"
	fi
	# The tmpfs comes before what goes into it (enroot-mount applies in order).
	assert_eq "tmpfs" "$(grep -m1 '/proc/driver/nvidia' "$r/fstab" | cut -d' ' -f1)" "first /proc line"
}

behaviour "a MIG device by UUID, IMEX channel 1: its nodes, its UUID, a masked /proc/driver/nvidia" mig_by_uuid
behaviour "hooks.d style: NVIDIA_VISIBLE_DEVICES=1:0, NVIDIA_IMEX_CHANNELS=all" mig_hooksd
behaviour "a whole GPU: /proc/driver/nvidia shows it alone" whole_gpu
behaviour "refused in one line: unknown MIG device, GPUs mixed with MIG, a missing IMEX channel" refusals
behaviour "enroot mode: MIG, IMEX and the /proc mask as fstab lines" enroot_mode
