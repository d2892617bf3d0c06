#!/bin/bash
# tag: every-slurm
# Node mode: `srun --gpus-per-node=2` on a 4-GPU node whose GPUs 0,1 another
# job holds.  Slurm gives the step GPUs 2,3; `ctrun hooks configure` wires
# ctrun-hook into a busybox bundle as ctrun's OCI adapter does; real runc
# runs it.  Inside: exactly /dev/nvidia2 and /dev/nvidia3 (195:2, 195:3)
# plus nvidiactl, CUDA_VISIBLE_DEVICES=0,1, and the device cgroup lets the
# nodes open.  Then the driver's libraries, found through the host's
# ld.so.cache, bound with their soname links, the image's cache rebuilt:
# without a driver, a fake one (real ELF libraries, a real cache made by
# ldconfig, bound over /etc/ld.so.cache in a private mount namespace; a
# CUDA stub beside it must not be taken); with the NVIDIA driver loaded,
# the real one, and nvidia-smi in the container lists exactly the pinned
# GPUs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/hooklib.sh"
hook_requirements
export HOOK TMPD CTRUN
ngpus=${CTRUN_CLUSTER_GPUS:-4}
((ngpus >= 4)) || fail "the test cluster has $ngpus GPUs per node; run.sh gives it 4 (CTRUN_CLUSTER_GPUS)"
hold_gpus 2

cat >"$TMPD/step.sh" <<'EOF'
set -euo pipefail
. "$CTRUN_REPO/tests/integration/hooklib.sh"
echo "$SLURM_STEP_GPUS" >"$TMPD/step.gpus"
before=$(mount_count)
make_bundle "$TMPD/node" "$REPORT"
"$CTRUN" hooks configure "$TMPD/node"
runc --root "$TMPD/runc" run --bundle "$TMPD/node" "hk-node-$SLURM_JOB_ID" >"$TMPD/node.out"
echo "$(( $(mount_count) - before ))" >"$TMPD/left"
EOF
run_rc srun -N1 -w "${NODES[0]}" --gpus-per-node=2 bash "$TMPD/step.sh"
assert_eq 0 "$rc" "srun of the node-mode container"
cat "$TMPD/node.out"
gpus=$(cat "$TMPD/step.gpus")
assert_eq "2,3" "$gpus" "SLURM_STEP_GPUS next to the job holding 0,1"
want=""
for g in ${gpus//,/ }; do want+="node /dev/nvidia$g c3 $(printf %x "$g");"; done
want+="node /dev/nvidiactl c3 ff;"
nodes=$(grep '^node /dev/nvidia[0-9c]' "$TMPD/node.out" | sort -V | tr '\n' ';')
assert_eq "$want" "$nodes" "device nodes in the container (exactly the step's GPUs, major 195)"
grep -qx "CUDA_VISIBLE_DEVICES=0,1" "$TMPD/node.out" || fail "CUDA_VISIBLE_DEVICES not renumbered"
grep -qx "NVIDIA_VISIBLE_DEVICES=$gpus" "$TMPD/node.out" || fail "NVIDIA_VISIBLE_DEVICES not the host's"
# The device cgroup lets the opens through: a fake GPU (no driver behind
# major 195) answers ENXIO, a real one opens; EPERM would be the cgroup.
assert_eq 2 "$(grep -c '^open /dev/nvidia[0-9]*:' "$TMPD/node.out")" "GPU nodes tried"
if grep '^open' "$TMPD/node.out" | grep -q 'not permitted'; then
	fail "the device cgroup denies the GPUs: $(grep '^open' "$TMPD/node.out")"
fi
assert_eq 0 "$(cat "$TMPD/left")" "mounts left in the node's namespace"

note "driver libraries through the host's ld.so.cache"
cat >"$TMPD/driver.sh" <<'EOF'
set -euo pipefail
. "$CTRUN_REPO/tests/integration/hooklib.sh"
d=$TMPD/driver
mkdir -p "$d/lib" "$d/stubs" "$d/bin"
if [ -r /sys/module/nvidia/version ]; then
	# The real driver: pin up to two GPUs that really exist (a test cluster
	# on a GPU machine may pad its nodes with fake ones).
	ver=$(cat /sys/module/nvidia/version)
	smi='/usr/bin/nvidia-smi -L'
	gpus=$(sed -n 's/^Device Minor:[[:space:]]*//p' /proc/driver/nvidia/gpus/*/information |
		sort -n | head -2 | paste -sd,)
	configure=(--gpus "$gpus")
	awk -F, '{print NF}' <<<"$gpus" >"$TMPD/driver.ngpus"
else
	# No driver: a fake one, real files in a real cache (this namespace only).
	ver=999.12.3
	echo 'int cuInit(unsigned f) { return (int)f; }' >"$d/cuda.c"
	cc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$d/lib/libcuda.so.$ver" "$d/cuda.c"
	cc -shared -fPIC -Wl,-soname,libnvidia-ml.so.1 -o "$d/lib/libnvidia-ml.so.$ver" "$d/cuda.c"
	cc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$d/stubs/libcuda.so" "$d/cuda.c"
	printf '#!/bin/sh\necho "GPU 0: fake"\necho "GPU 1: fake"\n' >"$d/bin/nvidia-smi"
	chmod 755 "$d/bin/nvidia-smi"
	printf '%s\n' "$d/lib" "$d/stubs" >"$d/ld.so.conf"
	ldconfig -C "$d/ld.so.cache" -f "$d/ld.so.conf"
	mount --bind "$d/ld.so.cache" /etc/ld.so.cache
	smi=/usr/bin/nvidia-smi
	configure=()
	echo 2 >"$TMPD/driver.ngpus"
fi
echo "$ver" >"$TMPD/driver.version"
lib=$(ldconfig -p | awk '$1 == "libcuda.so.1" && /x86-64/ && !n++ {print $NF}')
md5sum "$(readlink -f "$lib")" | cut -d' ' -f1 >"$TMPD/host.md5"
make_bundle "$TMPD/drv" "ls -l /usr/lib64; md5sum /usr/lib64/libcuda.so.$ver; $smi"
PATH=$d/bin:$PATH "$CTRUN" hooks configure "${configure[@]}" "$TMPD/drv"
runc --root "$TMPD/runc" run --bundle "$TMPD/drv" "hk-drv-$SLURM_JOB_ID" >"$TMPD/drv.out"
ldconfig -p -C "$TMPD/drv/rootfs/etc/ld.so.cache" >"$TMPD/drv.cache" || true
# What apptainer's isolation mode binds: the same files, sonames as files.
"$HOOK" driver-files /.singularity.d/libs >"$TMPD/files.out"
readlink -f "$lib" >"$TMPD/host.lib"
EOF
command -v cc >/dev/null || [ -r /sys/module/nvidia/version ] || fail "no C compiler for the fake driver (make deps installs gcc)"
run_rc srun -N1 -w "${NODES[0]}" --gpus-per-node=2 unshare -m --propagation private \
	bash "$TMPD/driver.sh"
assert_eq 0 "$rc" "srun of the container with a driver"
cat "$TMPD/drv.out"
ver=$(cat "$TMPD/driver.version")
grep -q " libcuda.so.$ver\$" "$TMPD/drv.out" || fail "libcuda not bound under its real name"
grep -q " libcuda.so.1 -> libcuda.so.$ver\$" "$TMPD/drv.out" || fail "no libcuda.so.1 soname link"
grep -q ' libcuda.so -> libcuda.so.1$' "$TMPD/drv.out" || fail "no libcuda.so link"
grep -q " libnvidia-ml.so.1 -> libnvidia-ml.so.$ver\$" "$TMPD/drv.out" || fail "no NVML"
assert_eq "$(cat "$TMPD/driver.ngpus")" "$(grep -c '^GPU [0-9]*:' "$TMPD/drv.out")" \
	"GPUs nvidia-smi lists in the container"
assert_eq "$(cat "$TMPD/host.md5")" "$(awk -v f="/usr/lib64/libcuda.so.$ver" '$2 == f {print $1}' \
	"$TMPD/drv.out")" "libcuda in the container is the host's file"
grep -q 'libcuda.so.1 (libc6,x86-64) => /usr/lib64/libcuda.so.1' "$TMPD/drv.cache" ||
	fail "the image's ld.so.cache was not rebuilt: $(cat "$TMPD/drv.cache")"
if grep -q 'stubs' "$TMPD/drv.out"; then fail "the CUDA stub was bound"; fi
grep -qx "$(cat "$TMPD/host.lib") /.singularity.d/libs/libcuda.so.1" "$TMPD/files.out" ||
	fail "ctrun-hook driver-files: $(cat "$TMPD/files.out")"
