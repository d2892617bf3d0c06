# Sourced by the t_hook_*.sh tests (after lib.sh) and by the step scripts
# they run inside Slurm tasks: busybox OCI bundles for real runc, and jobs
# that hold GPUs so a test's own step gets GPUs other than 0.
# Functions only: nothing here runs when it is sourced.

HOOK=${HOOK:-$CTRUN_REPO/build/ctrun-hook}
BUSYBOX=${BUSYBOX:-/bin/busybox}
PY=${PY:-/usr/bin/python3}

# Skips (exit 77) when the machine lacks what the hook tests run on.
hook_requirements() {
	command -v runc >/dev/null || skip "runc is not installed (Debian package runc)"
	"$BUSYBOX" --list >/dev/null 2>&1 || skip "no $BUSYBOX (Debian package busybox-static)"
	[ -x "$HOOK" ] || fail "$HOOK is missing: run make"
}

# make_rootfs DIR: a busybox root file system (static, so it needs no libc).
make_rootfs() {
	local a
	mkdir -p "$1/bin" "$1/proc" "$1/sys" "$1/dev" "$1/etc" "$1/tmp"
	cp "$BUSYBOX" "$1/bin/busybox"
	for a in $("$1/bin/busybox" --list); do
		[ -e "$1/bin/$a" ] || ln -s busybox "$1/bin/$a"
	done
}

# make_bundle DIR SCRIPT [KEY=VALUE...]: `runc spec` with SCRIPT as the
# container's process (/bin/sh -c) and the given environment.
make_bundle() {
	local dir=$1 script=$2
	shift 2
	mkdir -p "$dir"
	make_rootfs "$dir/rootfs"
	(cd "$dir" && runc spec)
	"$PY" - "$dir/config.json" "$script" "$@" <<'EOF'
import json, sys
path, script, env = sys.argv[1], sys.argv[2], sys.argv[3:]
c = json.load(open(path))
c["process"]["terminal"] = False
c["process"]["args"] = ["/bin/sh", "-c", script]
c["process"]["env"] = ["PATH=/bin"] + env
c["root"]["readonly"] = False
json.dump(c, open(path, "w"), indent=1)
EOF
}

# add_hook DIR [ANNOTATION=VALUE...]: what a hooks.d runtime (podman) does
# for a container carrying org.ctrun.enabled=true: the annotation and the
# hook at createContainer, nothing else (no device rules, no renumbering).
add_hook() {
	local dir=$1
	shift
	"$PY" - "$dir/config.json" "$HOOK" "$@" <<'EOF'
import json, sys
path, hook, anns = sys.argv[1], sys.argv[2], sys.argv[3:]
c = json.load(open(path))
a = c.setdefault("annotations", {})
a["org.ctrun.enabled"] = "true"
for kv in anns:
    k, v = kv.split("=", 1)
    a[k] = v
c.setdefault("hooks", {}).setdefault("createContainer", []).append(
    {"path": hook, "args": ["ctrun-hook", "createContainer"]})
json.dump(c, open(path, "w"), indent=1)
EOF
}

# What the test containers print: each /dev/nvidia* node with its major and
# minor (hex, as stat %t %T), the GPU variables, and what opening each GPU
# node gives (the fake GPUs have no driver: ENXIO when the device cgroup
# lets the open through, EPERM when it does not).
# shellcheck disable=SC2016
REPORT='for f in /dev/nvidia*; do [ -e "$f" ] && stat -c "node %n %t %T" "$f"; done
echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-unset}"
echo "NVIDIA_VISIBLE_DEVICES=${NVIDIA_VISIBLE_DEVICES-unset}"
for f in /dev/nvidia[0-9]*; do [ -e "$f" ] && echo "open $f: $(head -c1 "$f" 2>&1 >/dev/null)"; done
true'

# hold_gpus N: a batch job holding N GPUs of the first node for the rest of
# the test, so the test's own steps get the next ones (2,3 after 0,1).
hold_gpus() {
	local id i
	id=$(sbatch --parsable -N1 -w "${NODES[0]}" --gpus-per-node="$1" -o /dev/null \
		--wrap "sleep 300")
	for ((i = 0; i < 200; i++)); do
		[ "$(squeue -h -j "$id" -o %T)" = RUNNING ] && return 0
		sleep 0.1
	done
	fail "job $id holding $1 GPUs did not start"
}

# mount_count: mounts in this process's mount namespace.
mount_count() {
	wc -l </proc/self/mountinfo
}

# fake_nvidia_node DIR: makes the node, as this process's private mount
# namespace sees it (run it under `unshare -m --propagation private`), look
# like one with a loaded NVIDIA driver 999.12.3 that has MIG and IMEX: the
# driver's /proc/driver/nvidia (params, version, registry, gpus/BUS of
# GPUs 0-3) and /proc/driver/nvidia-caps/mig-minors on a tmpfs over
# /proc/driver; /proc/devices with the nvidia-caps (235) and
# nvidia-caps-imex-channels (234) majors; a private copy of /dev with
# /dev/nvidia-caps/nvidia-cap{12,13,21,22} and IMEX channels 0 and 1; and
# NVML (libnvidia-ml.so.999.12.3, a real library in a real ld.so.cache
# bound over /etc/ld.so.cache) answering as a GPU 1 in MIG mode with two
# MIG devices: index 0 = GI 1 CI 0 (MIG-aaaaaaaa-...), index 2 = GI 2
# CI 0 (MIG-bbbbbbbb-...); index 1 is an empty slot.  The formats are the
# driver's as libnvidia-container and nvidia-container-toolkit read them.
MIG_A=MIG-aaaaaaaa-0000-4000-8000-000000000001
MIG_B=MIG-bbbbbbbb-0000-4000-8000-000000000002
fake_nvidia_node() {
	local d=$1 g
	mkdir -p "$d/lib" "$d/dev"
	cat >"$d/nvml.c" <<'NVML'
#include <stdio.h>
typedef struct { unsigned minor, mode, gi, ci; const char *uuid; } dev;
static dev gpus[4] = { { 0, 0, 0, 0, "GPU-00000000-0000-4000-8000-000000000000" },
		       { 1, 1, 0, 0, "GPU-11111111-0000-4000-8000-000000000000" },
		       { 2, 0, 0, 0, "GPU-22222222-0000-4000-8000-000000000000" },
		       { 3, 0, 0, 0, "GPU-33333333-0000-4000-8000-000000000000" } };
static dev migs[7] = { [0] = { 1, 0, 1, 0, "MIG-aaaaaaaa-0000-4000-8000-000000000001" },
		       [2] = { 1, 0, 2, 0, "MIG-bbbbbbbb-0000-4000-8000-000000000002" } };
int nvmlInit_v2(void) { return 0; }
int nvmlShutdown(void) { return 0; }
int nvmlDeviceGetCount_v2(unsigned *n) { *n = 4; return 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned i, void **d) { if (i >= 4) return 2; *d = &gpus[i]; return 0; }
int nvmlDeviceGetMinorNumber(void *d, unsigned *m) { *m = ((dev *)d)->minor; return 0; }
int nvmlDeviceGetUUID(void *d, char *b, unsigned l) { snprintf(b, l, "%s", ((dev *)d)->uuid); return 0; }
int nvmlDeviceGetMigMode(void *d, unsigned *c, unsigned *p) { *c = *p = ((dev *)d)->mode; return 0; }
int nvmlDeviceGetMaxMigDeviceCount(void *d, unsigned *n) { *n = ((dev *)d)->mode ? 7 : 0; return 0; }
int nvmlDeviceGetMigDeviceHandleByIndex(void *d, unsigned i, void **m)
{ if (!((dev *)d)->mode || i >= 7 || !migs[i].uuid) return 6; *m = &migs[i]; return 0; }
int nvmlDeviceGetGpuInstanceId(void *d, unsigned *x) { *x = ((dev *)d)->gi; return 0; }
int nvmlDeviceGetComputeInstanceId(void *d, unsigned *x) { *x = ((dev *)d)->ci; return 0; }
NVML
	cc -shared -fPIC -Wl,-soname,libnvidia-ml.so.1 -o "$d/lib/libnvidia-ml.so.999.12.3" "$d/nvml.c"
	echo "$d/lib" >"$d/ld.so.conf"
	ldconfig -C "$d/ld.so.cache" -f "$d/ld.so.conf"
	mount --bind "$d/ld.so.cache" /etc/ld.so.cache
	mount -t tmpfs -o mode=755 fake-nvidia-driver /proc/driver
	mkdir -p /proc/driver/nvidia/gpus /proc/driver/nvidia-caps
	printf 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  999.12.3  Thu Jan  1 00:00:00 UTC 2026\n' \
		>/proc/driver/nvidia/version
	printf 'ResmanDebugLevel: 4294967295\nModifyDeviceFiles: 1\nDeviceFileUID: 0\n' \
		>/proc/driver/nvidia/params
	printf 'Binary: ""\n' >/proc/driver/nvidia/registry
	for g in 0 1 2 3; do
		mkdir -p "/proc/driver/nvidia/gpus/0000:0$((g + 1)):00.0"
		printf 'Model: \t\t Fake\nGPU UUID: \t GPU-%s-0000-4000-8000-000000000000\nDevice Minor: \t %s\n' \
			"$g$g$g$g$g$g$g$g" "$g" >"/proc/driver/nvidia/gpus/0000:0$((g + 1)):00.0/information"
	done
	mkdir -p /proc/driver/nvidia/capabilities/gpu1/mig/gi1/ci0 /proc/driver/nvidia/capabilities/gpu1/mig/gi2/ci0
	for c in gi1:12 gi1/ci0:13 gi2:21 gi2/ci0:22; do
		printf 'DeviceFileMinor: %s\nDeviceFileMode: 292\nDeviceFileModify: 1\n' "${c#*:}" \
			>"/proc/driver/nvidia/capabilities/gpu1/mig/${c%:*}/access"
	done
	printf 'config 1\nmonitor 2\ngpu1/gi1/access 12\ngpu1/gi1/ci0/access 13\ngpu1/gi2/access 21\ngpu1/gi2/ci0/access 22\n' \
		>/proc/driver/nvidia-caps/mig-minors
	awk '/^Block devices:/ { print "234 nvidia-caps-imex-channels"; print "235 nvidia-caps" } { print }' \
		/proc/devices >"$d/devices"
	mount --bind "$d/devices" /proc/devices
	mount -t tmpfs -o mode=755 fake-nvidia-dev "$d/dev"
	cp -a -x /dev/. "$d/dev/"
	for g in 0 1 2 3; do [ -e "$d/dev/nvidia$g" ] || mknod -m 666 "$d/dev/nvidia$g" c 195 "$g"; done
	[ -e "$d/dev/nvidiactl" ] || mknod -m 666 "$d/dev/nvidiactl" c 195 255
	mkdir -p "$d/dev/nvidia-caps" "$d/dev/nvidia-caps-imex-channels"
	for c in 12 13 21 22; do mknod -m 444 "$d/dev/nvidia-caps/nvidia-cap$c" c 235 "$c"; done
	for c in 0 1; do mknod -m 666 "$d/dev/nvidia-caps-imex-channels/channel$c" c 234 "$c"; done
	mount --move "$d/dev" /dev
	mkdir -p /dev/pts /dev/shm
	mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts /dev/pts
	mount -t tmpfs -o mode=1777,nosuid,nodev shm /dev/shm
}

# proc_bind_bundle DIR: the bundle's /proc a bind of this namespace's, so
# the container sees fake_nvidia_node's /proc/driver as a node with the
# driver shows its own (runc mounts a fresh procfs otherwise, in which a
# machine without the driver has no /proc/driver/nvidia to mask).
proc_bind_bundle() {
	"$PY" - "$1/config.json" <<'PYEOF'
import json, sys
c = json.load(open(sys.argv[1]))
for m in c["mounts"]:
    if m["destination"] == "/proc":
        m.update(type="bind", source="/proc", options=["rbind", "nosuid", "noexec", "nodev"])
json.dump(c, open(sys.argv[1], "w"), indent=1)
PYEOF
}
