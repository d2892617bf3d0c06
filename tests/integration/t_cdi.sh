#!/bin/bash
# CDI devices (--device vendor.com/class=name) against the reference: the
# same specs and device names under Debian's podman 4.3 (which applies CDI
# with the CDI project's own library) and under ctrun with runc: the
# container sees the same device nodes (type, numbers, mode), environment,
# mounts and hook effects, for every spec of the set (a YAML and a JSON
# spec of two fake vendors: renamed host nodes, nodes made from numbers
# with a narrowed device cgroup, binds and a tmpfs with options, hooks at
# createContainer and poststop).  Then every runtime row on the test
# cluster (crun as root, runc as a user, charliecloud, enroot and
# Singularity where installed): what the runtime can apply, and a one-line
# refusal naming the edit it cannot; bad input (an unknown name, two specs
# of one device, a spec that does not parse, a hook that is not an
# executable, a spec another user could write): one line, exit 2 or 125,
# nothing started.  Last, [gpu] source: the node's fake GPUs as CDI devices
# of an nvidia.com/gpu spec written as nvidia-ctk writes one, pinned per
# worker as ctrun-hook pins them, and -v saying which source ran and why.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
command -v podman >/dev/null || fail "podman is not installed (tests/deps.sh installs it)"
need_image BB busybox.sqsh
ROOTFS=$("$CTRUN_REPO/tests/images/build.sh" path busybox-rootfs)
[ -d "$ROOTFS" ] || skip "test image busybox-rootfs missing (run: tests/images/build.sh busybox)"
user=$("$CTRUN_REPO/tests/cluster/ensure-user.sh")
cd "$TMPD"
rt_rows_setup "$user"
chmod 755 "$TMPD"
mkdir -p cdi hostdev vendorlib out bad gpucdi
chmod 777 out
echo lib > vendorlib/libfake.so
mknod hostdev/null0 c 1 3 && chmod 666 hostdev/null0
mknod hostdev/zero0 c 1 5 && chmod 666 hostdev/zero0
mknod hostdev/null640 c 1 3 && chmod 640 hostdev/null640

# The hook: logs its stage and arguments; at createContainer it leaves a
# file in the container's root, found through the bundle's config.json as
# NVIDIA's nvidia-cdi-hook finds it.
cat > hook.py <<PY
#!/usr/bin/python3
import json, os, sys
st = json.load(sys.stdin)
cfg = json.load(open(os.path.join(st["bundle"], "config.json")))
root = cfg["root"]["path"]
if not root.startswith("/"):
    root = os.path.join(st["bundle"], root)
with open("$TMPD/out/hooks.log", "a") as f:
    f.write("%s args=%s var=%s\n" % (sys.argv[1], " ".join(sys.argv[1:]), os.environ.get("HOOKVAR", "")))
if sys.argv[1] == "cc":
    with open(os.path.join(root, "hook-made"), "w") as f:
        f.write("made at createContainer\n")
PY
chmod 755 hook.py
cat > cdi/fake.yaml <<EOF
---
cdiVersion: 0.5.0
kind: example.com/fake
containerEdits:
  env: [FAKE_SPEC=1]
devices:
- name: dev0
  containerEdits:
    env: [FAKE_DEV=0]
    deviceNodes:
    - {path: /dev/fake0, hostPath: $TMPD/hostdev/null0}
    mounts:
    - {hostPath: $TMPD/vendorlib, containerPath: /opt/fakelib, options: [ro, nosuid, nodev, bind]}
    hooks:
    - {hookName: createContainer, path: $TMPD/hook.py, args: [hook.py, cc, dev0], env: [HOOKVAR=dev0]}
    - {hookName: poststop, path: $TMPD/hook.py, args: [hook.py, ps]}
- name: dev1
  containerEdits:
    deviceNodes:
    - {path: /dev/fake1, type: c, major: 240, minor: 7, fileMode: 0600, permissions: r}
- name: plain
  containerEdits:
    env: [FAKE_PLAIN=1]
    deviceNodes:
    - {path: /dev/fakeplain, hostPath: $TMPD/hostdev/zero0}
    mounts:
    - {hostPath: $TMPD/vendorlib, containerPath: /opt/plainlib, options: [ro, nosuid, nodev, bind]}
- name: shared
  containerEdits:
    env: [FAKE_SHARED=1]
    deviceNodes:
    - {path: /dev/zero}
    mounts:
    - {hostPath: $TMPD/vendorlib, containerPath: /opt/sharedlib, options: [ro, nosuid, nodev, bind]}
- name: hostmode
  containerEdits:
    deviceNodes:
    - {path: /dev/fakehm, hostPath: $TMPD/hostdev/null640}
EOF
cat > cdi/acc.json <<EOF
{"cdiVersion": "0.5.0", "kind": "other.org/acc",
 "devices": [{"name": "all", "containerEdits": {
   "env": ["ACC=all"],
   "deviceNodes": [{"path": "/dev/acc0", "hostPath": "$TMPD/hostdev/null0"},
                   {"path": "/dev/acc1", "hostPath": "$TMPD/hostdev/zero0"}],
   "mounts": [{"hostPath": "tmpfs", "containerPath": "/opt/accscratch", "type": "tmpfs",
               "options": ["nosuid", "nodev", "size=1m"]}]}}]}
EOF
export CTRUN_CDI_SPEC_DIRS=$TMPD/cdi

# What a container shows of its devices, environment, mounts and hooks.
cat > probe.sh <<'SH'
for f in /dev/fake0 /dev/fake1 /dev/fakeplain /dev/fakehm /dev/acc0 /dev/acc1 /dev/zero; do
	[ -e "$f" ] || continue
	stat -c "node %n %F %t %T %a" "$f"
	echo "write $f: $( (echo x > "$f") 2>&1 | sed 's/.*: //')"
	echo "read $f: $( (head -c0 < "$f") 2>&1 | sed 's/.*: //')"
done
env | grep -E '^(FAKE_|ACC=)' | sort
for m in /opt/fakelib /opt/plainlib /opt/sharedlib /opt/accscratch; do
	[ -d "$m" ] || continue
	echo "mount $m [$(ls "$m" | tr '\n' ' ')] $(touch "$m/w" 2>/dev/null && echo rw || echo ro) $(grep " $m " /proc/self/mounts | cut -d' ' -f3)"
done
[ ! -e /hook-made ] || echo "hook: $(cat /hook-made)"
SH
cp probe.sh u/probe.sh && chmod 644 u/probe.sh

# podman as design.md says it runs here; specs only from /etc/cdi in podman
# 4.3, so a private mount namespace with an overlay over /etc holds them.
cat > containers.conf <<'EOF'
[containers]
default_ulimits = []
pids_limit = 0
EOF
podman_run() { # DEVICE...: the probe under podman, into out/podman
	local args=() d
	for d; do args+=(--device "$d"); done
	rm -rf prootfs && cp -a "$ROOTFS" prootfs && mkdir -p pup pwork && : > out/hooks.log
	unshare -m --propagation private sh -ec '
		t=$1
		shift
		mount -t overlay overlay -o lowerdir=/etc,upperdir="$t/pup",workdir="$t/pwork" /etc
		mkdir -p /etc/cdi && cp "$t"/cdi/*.yaml "$t"/cdi/*.json /etc/cdi/
		CONTAINERS_CONF="$t/containers.conf" podman --runtime runc --cgroup-manager cgroupfs \
			--events-backend none --storage-driver vfs --root "$t/pstore" \
			--runroot "$t/prun" run --rm --network host "$@" --rootfs "$t/prootfs" \
			sh -c "$(cat "$t/probe.sh")"' sh "$TMPD" "${args[@]}" > out/podman
	cat out/hooks.log >> out/podman
}
ctrun_run() { # DEVICE...: the probe under ctrun (runc, root), into out/ctrun
	local args=() d
	for d; do args+=(--device "$d"); done
	: > out/hooks.log
	"$CTRUN" -q --no-prefix --runtime oci --image "$ROOTFS" "${args[@]}" -- \
		sh "$TMPD/probe.sh" > out/ctrun
	cat out/hooks.log >> out/ctrun
}
same_as_podman() { # DEVICE...
	podman_run "$@"
	ctrun_run "$@"
	cat out/ctrun
	grep -q '^node ' out/podman || fail "podman showed no device node: $(cat out/podman)"
	assert_eq "$(cat out/podman)" "$(cat out/ctrun)" "what the container sees, podman vs ctrun ($*)"
}
trap 'podman --storage-driver vfs --root "$TMPD/pstore" --runroot "$TMPD/prun" rm -af \
	>/dev/null 2>&1 || true; cleanup_tmp' EXIT
behaviour "fake.yaml dev0 (renamed host node, ro bind, createContainer + poststop hooks): as podman" \
	same_as_podman example.com/fake=dev0
behaviour "fake.yaml dev1 + plain (a node made from its numbers, mode 0600, access r): as podman" \
	same_as_podman example.com/fake=dev1 example.com/fake=plain
behaviour "acc.json all (two nodes, a tmpfs with options): as podman" same_as_podman other.org/acc=all
behaviour "every device of both specs at once: as podman" same_as_podman example.com/fake=dev0 \
	example.com/fake=dev1 example.com/fake=plain other.org/acc=all
spot_checks() { # what the comparison stands on, so an empty match cannot pass
	ctrun_run example.com/fake=dev0 example.com/fake=dev1 other.org/acc=all
	grep -qx 'node /dev/fake0 character special file 1 3 666' out/ctrun || fail "fake0"
	grep -qx 'node /dev/fake1 character special file f0 7 600' out/ctrun || fail "fake1"
	grep -qx 'write /dev/fake1: Operation not permitted' out/ctrun || fail "fake1's cgroup: r only"
	grep -qx 'read /dev/fake1: No such device or address' out/ctrun || fail "fake1's cgroup: r"
	grep -q '^mount /opt/fakelib \[libfake.so \] ro ' out/ctrun || fail "the ro bind"
	grep -qx 'mount /opt/accscratch \[\] rw tmpfs' out/ctrun || fail "the tmpfs"
	grep -qx 'FAKE_SPEC=1' out/ctrun || fail "the spec's own env"
	grep -qx 'hook: made at createContainer' out/ctrun || fail "the createContainer hook's file"
	grep -qx 'cc args=cc dev0 var=dev0' out/ctrun || fail "the hook's args and env"
	grep -qx 'ps args=ps var=' out/ctrun || fail "the poststop hook"
}
behaviour "the comparison's facts: nodes, access, binds, tmpfs, env, hooks" spot_checks
host_mode() { # the current library's rule: no fileMode, the host node's mode (podman 4.3: 0666)
	ctrun_run example.com/fake=hostmode
	grep -qx 'node /dev/fakehm character special file 1 3 640' out/ctrun || fail "$(cat out/ctrun)"
}
behaviour "a node without fileMode gets the host node's mode (the CDI library's rule)" host_mode

# ---- every runtime row, on the test cluster ----
node=${NODES[0]}
# Singularity as a user unpacks a squashfs, and cannot make its /dev/null.
mksquashfs "$ROOTFS" u/bb-nodev.sqsh -comp gzip -noappend -quiet -no-progress -e dev/null > /dev/null
chmod 644 u/bb-nodev.sqsh
srun_probe() { # as_user|as_root RUNTIME DEVICE...
	local who=$1 rt=$2 args=() d img=$BB
	shift 2
	for d; do args+=(--device "$d"); done
	[ "$rt" != singularity ] || img=$TMPD/u/bb-nodev.sqsh
	: > out/hooks.log
	"$who" env CTRUN_CDI_SPEC_DIRS="$CTRUN_CDI_SPEC_DIRS" srun -N1 -n1 -w "$node" "$CTRUN" -q \
		--no-prefix --runtime "$rt" --image "$img" "${args[@]}" -- sh "$TMPD/u/probe.sh"
}
crun_root() {
	ctrun_run example.com/fake=dev0 example.com/fake=dev1 other.org/acc=all
	srun_probe as_root crun example.com/fake=dev0 example.com/fake=dev1 other.org/acc=all > out/crun
	cat out/hooks.log >> out/crun
	assert_eq "$(cat out/ctrun)" "$(cat out/crun)" "crun as runc"
}
behaviour "crun (root): the same as runc" crun_root
applies_binds() { # RUNTIME WHO DEVICE NODE MAJOR:MINOR MOUNT: the device's node, env and ro bind
	local out var
	out=$(srun_probe "$2" "$1" "example.com/fake=$3")
	echo "$out"
	var=FAKE_$(tr '[:lower:]' '[:upper:]' <<<"$3")=1
	grep -qx "node $4 character special file ${5%:*} ${5#*:} 666" <<<"$out" || fail "the node ($1)"
	grep -qx "write $4: " <<<"$out" || fail "the node opens for writing ($1)"
	grep -qx "$var" <<<"$out" || fail "the env ($1)"
	grep -qx 'FAKE_SPEC=1' <<<"$out" || fail "the spec's env ($1)"
	grep -q "^mount $6 \[libfake.so \] ro " <<<"$out" || fail "the ro bind ($1)"
}
refuses() { # RUNTIME WHO DEVICE PATTERN: one line, exit 2, nothing left
	run_rc srun_probe "$2" "$1" "$3" 2> err
	assert_eq 2 "$rc" "exit status ($1 $3)"
	assert_eq 1 "$(grep -v -c '^srun: ' err)" "one line: $(cat err)"
	grep -q -- "$4" err || fail "the line ($1): $(cat err)"
}
applies_fs() { # RUNTIME WHO: acc's tmpfs with its options, its two renamed nodes
	local out
	out=$(srun_probe "$2" "$1" other.org/acc=all)
	echo "$out"
	grep -qx 'node /dev/acc0 character special file 1 3 666' <<<"$out" || fail "acc0 ($1)"
	grep -qx 'node /dev/acc1 character special file 1 5 666' <<<"$out" || fail "acc1 ($1)"
	grep -qx 'mount /opt/accscratch \[\] rw tmpfs' <<<"$out" || fail "the tmpfs ($1)"
	grep -qx 'ACC=all' <<<"$out" || fail "the env ($1)"
}
behaviour "oci as a user: plain's renamed node bound, env, bind" with_rt oci applies_binds as_user \
	plain /dev/fakeplain 1:5 /opt/plainlib
behaviour "oci as a user: dev1 refused (no host node to bind)" with_rt oci refuses as_user \
	example.com/fake=dev1 "oci: device node /dev/fake1 of example.com/fake=dev1: the host has no such node"
behaviour "charliecloud: shared applied as binds" with_rt charliecloud applies_binds as_user \
	shared /dev/zero 1:5 /opt/sharedlib
behaviour "charliecloud: plain's renamed node under its host /dev refused in one line" with_rt \
	charliecloud refuses as_user example.com/fake=plain "charliecloud shares the host's /dev"
behaviour "charliecloud: acc's renamed nodes refused in one line" with_rt charliecloud refuses \
	as_user other.org/acc=all "charliecloud: device node /dev/acc0 of other.org/acc=all: charliecloud shares the host's /dev"
behaviour "enroot: plain's renamed node bound (its own /dev), env, bind" with_rt enroot applies_binds \
	as_user plain /dev/fakeplain 1:5 /opt/plainlib
behaviour "enroot: dev0's hook refused in one line" with_rt enroot refuses as_user \
	example.com/fake=dev0 "enroot: createContainer hook .*hook.py of example.com/fake=dev0: enroot runs no OCI hooks"
behaviour "enroot: acc's tmpfs mounted (its fstab), its renamed nodes bound" with_rt enroot \
	applies_fs as_user
behaviour "singularity: shared applied as binds" with_rt singularity applies_binds as_user \
	shared /dev/zero 1:5 /opt/sharedlib
behaviour "singularity: dev1 refused in one line" with_rt singularity refuses as_user \
	example.com/fake=dev1 "the host has no such node"

# ---- bad input: one line, exit 2 or 125, before any container ----
bad_run() { # SPECDIR DEVICE: as root on the host
	CTRUN_CDI_SPEC_DIRS=$1 "$CTRUN" -q --runtime oci --image "$ROOTFS" --device "$2" -- true
}
bad() { # SPECDIR DEVICE CODE PATTERN
	run_rc bad_run "$1" "$2" 2> err
	assert_eq "$3" "$rc" "exit status"
	assert_eq 1 "$(wc -l < err)" "one line: $(cat err)"
	grep -q -- "$4" err || fail "the line: $(cat err)"
}
mkdir -p bad/dup bad/broken bad/hook bad/open
cp cdi/fake.yaml bad/dup/a.yaml && cp cdi/fake.yaml bad/dup/b.yaml
printf 'cdiVersion: 0.5.0\nkind: example.com/fake\ndevices:\n- name: d\n  containerEdits: {env: [A=1]\n' > bad/broken/x.yaml
sed "s|$TMPD/hook.py|$TMPD/vendorlib/libfake.so|" cdi/fake.yaml > bad/hook/fake.yaml
cp cdi/acc.json bad/open/acc.json && chmod 666 bad/open/acc.json
behaviour "an unknown device: exit 2, the names the spec has" bad "$TMPD/cdi" example.com/fake=dev9 2 \
	"unknown CDI device example.com/fake=dev9 (its specs define: example.com/fake=dev0, example.com/fake=dev1, example.com/fake=plain, example.com/fake=shared, example.com/fake=hostmode)"
behaviour "not a CDI name: exit 2" bad "$TMPD/cdi" /dev/null 2 "is not a CDI device name"
behaviour "two specs of one directory define it: exit 2, both named" bad "$TMPD/bad/dup" \
	example.com/fake=dev0 2 "defined by two specs, .*/a.yaml and .*/b.yaml"
behaviour "a spec that does not parse: exit 2, file and line" bad "$TMPD/bad/broken" \
	example.com/fake=d 2 "bad/broken/x.yaml:6: does not parse as YAML"
behaviour "a hook that is not an executable: exit 2" bad "$TMPD/bad/hook" example.com/fake=dev0 2 \
	"hook .*libfake.so is not an executable file"
behaviour "a spec another user could write: exit 125" bad "$TMPD/bad/open" other.org/acc=all 125 \
	"acc.json is not trusted: writable by .*only root could write"
behaviour "no container left" assert_no_containers

# ---- [gpu] source: the fake GPUs as CDI devices ----
{
	echo "cdiVersion: 0.5.0"
	echo "kind: nvidia.com/gpu"
	echo "containerEdits:"
	echo "  env: [NVIDIA_VISIBLE_DEVICES=void]"
	echo "  deviceNodes: [{path: /dev/nvidiactl}]"
	echo "  hooks: [{hookName: createContainer, path: $TMPD/hook.py, args: [nvidia-cdi-hook, gpu]}]"
	echo "devices:"
	for g in 0 1 2 3; do echo "- {name: \"$g\", containerEdits: {deviceNodes: [{path: /dev/nvidia$g}]}}"; done
	echo "- name: all"
	echo "  containerEdits:"
	echo "    deviceNodes: [{path: /dev/nvidia0}, {path: /dev/nvidia1}, {path: /dev/nvidia2}, {path: /dev/nvidia3}]"
} > gpucdi/nvidia.yaml
cat > u/gpu.sh <<'SH'
for f in /dev/nvidia*; do [ -e "$f" ] && stat -c "node %n %t %T" "$f"; done
echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-unset}"
echo "NVIDIA_VISIBLE_DEVICES=${NVIDIA_VISIBLE_DEVICES-unset}"
SH
chmod 644 u/gpu.sh
gpu_run() { # SOURCE SPECDIR [CTRUN OPTION...]: as root, 2 GPUs of the node
	local src=$1 dir=$2
	shift 2
	CTRUN_GPU_SOURCE=$src CTRUN_CDI_SPEC_DIRS=$dir srun -N1 -n1 -w "$node" --gpus-per-node=2 \
		"$CTRUN" -v --runtime oci --image "$BB" --no-python --nproc-per-node 1 "$@" -- \
		sh "$TMPD/u/gpu.sh"
}
gpus_from_cdi() {
	gpu_run auto "$TMPD/gpucdi" > out/gpu 2> err
	cat out/gpu err
	grep -q "ctrun: GPUs from CDI (source auto: an nvidia.com/gpu spec has them): 0,1" err ||
		fail "-v: $(cat err)"
	assert_eq "node /dev/nvidia0 c3 0;node /dev/nvidia1 c3 1;node /dev/nvidiactl c3 ff;" \
		"$(grep '^node' out/gpu | sort -V | tr '\n' ';')" "exactly the step's GPUs"
	grep -qx 'CUDA_VISIBLE_DEVICES=0,1' out/gpu || fail "renumbered"
	grep -qx 'NVIDIA_VISIBLE_DEVICES=void' out/gpu || fail "the spec's env"
}
behaviour "source auto with an nvidia.com/gpu spec: the step's GPUs as CDI devices" gpus_from_cdi
gpus_isolated() {
	gpu_run cdi "$TMPD/gpucdi" --nproc-per-node 2 --gpu-isolation --prefix > out/gpu 2> err
	cat out/gpu
	grep -qx '\[rank0\]: CUDA_VISIBLE_DEVICES=0' out/gpu || fail "rank 0's GPU"
	grep -qx '\[rank1\]: CUDA_VISIBLE_DEVICES=1' out/gpu || fail "rank 1's GPU"
}
behaviour "source cdi, --gpu-isolation: each worker its own GPU" gpus_isolated
gpus_from_hook() {
	gpu_run hook "$TMPD/gpucdi" > out/gpu 2> err
	grep -q "ctrun: GPUs from ctrun-hook: \[gpu\] source = hook" err || fail "-v: $(cat err)"
	grep -qx 'NVIDIA_VISIBLE_DEVICES=0,1' out/gpu || fail "ctrun-hook's: $(cat out/gpu)"
	gpu_run auto "$TMPD/vendorlib" > out/gpu 2> err
	grep -q "GPUs from ctrun-hook: no CDI spec of kind nvidia.com/gpu" err || fail "-v: $(cat err)"
}
behaviour "source hook, or auto without a spec: ctrun-hook, and -v says why" gpus_from_hook
gpus_cdi_missing() {
	run_rc gpu_run cdi "$TMPD/vendorlib" 2> err
	assert_eq 125 "$rc" "exit status"
	grep -q "\[gpu\] source = cdi, but no CDI spec of kind nvidia.com/gpu" err || fail "$(cat err)"
}
behaviour "source cdi without a spec: exit 125, one line" gpus_cdi_missing
gpus_auto_fallback() { # NVIDIA's spec has hooks, which ch-run runs not: auto takes ctrun-hook
	CTRUN_CDI_SPEC_DIRS=$TMPD/gpucdi srun -N1 -n1 -w "$node" --gpus-per-node=2 "$CTRUN" -v \
		--dry-run --runtime charliecloud --image "$BB" --no-python --nproc-per-node 1 -- true \
		> out/gpu 2> err || fail "auto: $(cat err)"
	grep -q "GPUs from ctrun-hook: the GPUs' CDI devices cannot be applied here (charliecloud: createContainer hook .* charliecloud runs no OCI hooks" err ||
		fail "-v: $(cat err)"
	run_rc env CTRUN_GPU_SOURCE=cdi CTRUN_CDI_SPEC_DIRS="$TMPD/gpucdi" srun -N1 -n1 -w "$node" \
		--gpus-per-node=2 "$CTRUN" -q --dry-run --runtime charliecloud --image "$BB" --no-python \
		-- true 2> err
	assert_eq 2 "$rc" "source cdi under charliecloud"
	grep -q "charliecloud runs no OCI hooks" err || fail "$(cat err)"
}
behaviour "source auto where the runtime cannot apply the spec: ctrun-hook, -v says why" gpus_auto_fallback
behaviour "no container left at the end" assert_no_containers
