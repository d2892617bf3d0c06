#!/bin/bash
# tag: every-slurm
# ctrun-hook pins the step's GPUs, on a 4-GPU node whose GPUs 0,1 another
# job holds, with real runc running busybox bundles:
#  node mode: `srun --gpus-per-node=2`: Slurm gives the step GPUs 2,3;
#    `ctrun hooks configure` wires ctrun-hook into the bundle as ctrun's OCI
#    adapter does.  Inside: exactly /dev/nvidia2 and /dev/nvidia3 (195:2,
#    195:3) plus nvidiactl, CUDA_VISIBLE_DEVICES=0,1, and the device cgroup
#    lets the nodes open.
#  node mode's driver libraries: found through the host's ld.so.cache,
#    bound with their soname links, the image's cache rebuilt: without a
#    driver, a fake one (real ELF libraries, a real cache made by ldconfig,
#    bound over /etc/ld.so.cache in a private mount namespace; a CUDA stub
#    beside it must not be taken); with the NVIDIA driver loaded, the real
#    one, and nvidia-smi in the container lists exactly the pinned GPUs.
#  task mode, one container per Slurm task, each with exactly its one GPU:
#    `srun -n2 --gpus-per-task=1`: task 0 gets GPU 2, task 1 GPU 3;
#    `ctrun hooks configure` in each task pins that GPU, runc runs it.
#  task mode as under podman's hooks.d: `srun -n2 --gpus-per-node=2`, both
#    tasks see GPUs 2,3 and only the hook decides: the bundle carries the
#    org.ctrun.enabled annotation, the hook and the task's Slurm variables,
#    nothing else.  SLURM_LOCALID picks: task 0 gets 2, task 1 gets 3, and
#    the hook's own v1 device-cgroup rules let each open its node (the
#    bundle's runc-spec default denies every device).
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
node_mode() {
	local gpus want g nodes
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
}

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
driver_libraries() {
	local ver
	command -v cc >/dev/null || [ -r /sys/module/nvidia/version ] ||
		fail "no C compiler for the fake driver (make deps installs gcc)"
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
}

cat >"$TMPD/per-task.sh" <<'EOF'
set -euo pipefail
. "$CTRUN_REPO/tests/integration/hooklib.sh"
b=$TMPD/$1-$SLURM_PROCID
echo "$SLURM_STEP_GPUS" >"$b.gpus"
if [ "$1" = configure ]; then
	make_bundle "$b" "$REPORT"
	"$CTRUN" -q hooks configure "$b"
else
	make_bundle "$b" "$REPORT" "SLURM_LOCALID=$SLURM_LOCALID" "SLURM_STEP_GPUS=$SLURM_STEP_GPUS" \
		"CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES" "SLURM_STEP_NUM_TASKS=$SLURM_STEP_NUM_TASKS" \
		"SLURM_STEP_NUM_NODES=$SLURM_STEP_NUM_NODES"
	add_hook "$b"
fi
runc --root "$TMPD/runc" run --bundle "$b" "hk-$1-$SLURM_JOB_ID-$SLURM_PROCID" >"$b.out"
EOF

# task_has_gpu KIND TASK GPU: the container of TASK has exactly GPU and can open it.
task_has_gpu() {
	local out=$TMPD/$1-$2.out want
	sed "s/^/    task $2: /" "$out"
	want="node /dev/nvidia$3 c3 $(printf %x "$3");node /dev/nvidiactl c3 ff;"
	assert_eq "$want" "$(grep '^node /dev/nvidia[0-9c]' "$out" | sort -V | tr '\n' ';')" \
		"$1: device nodes in task $2's container"
	grep -q "^open /dev/nvidia$3:" "$out" || fail "$1: task $2 did not try its GPU"
	if grep "^open /dev/nvidia$3:" "$out" | grep -q 'not permitted'; then
		fail "$1: the device cgroup denies task $2 its GPU"
	fi
}

task_mode_configure() {
	local t g
	run_rc srun -N1 -w "${NODES[0]}" -n2 --gpus-per-task=1 bash "$TMPD/per-task.sh" configure
	assert_eq 0 "$rc" "srun --gpus-per-task=1 of the containers"
	for t in 0 1; do
		g=$(cat "$TMPD/configure-$t.gpus")
		assert_eq "$((t + 2))" "$g" "task $t's GPU from Slurm"
		task_has_gpu configure "$t" "$g"
		grep -qx "CUDA_VISIBLE_DEVICES=0" "$TMPD/configure-$t.out" || fail "task $t: not renumbered"
	done
}

task_mode_hooksd() {
	local step
	run_rc srun -N1 -w "${NODES[0]}" -n2 --gpus-per-node=2 bash "$TMPD/per-task.sh" hooksd
	assert_eq 0 "$rc" "srun --gpus-per-node=2 of the hooks.d-style containers"
	IFS=, read -r -a step <"$TMPD/hooksd-0.gpus"
	((${#step[@]} == 2)) || fail "step GPUs: ${step[*]}"
	task_has_gpu hooksd 0 "${step[0]}"
	task_has_gpu hooksd 1 "${step[1]}"
}

behaviour "node mode: exactly the step's GPUs 2,3, renumbered, openable" node_mode
behaviour "node mode: the driver's libraries through the host's ld.so.cache" driver_libraries
behaviour "task mode: hooks configure pins each task's GPU (--gpus-per-task=1)" task_mode_configure
behaviour "task mode, hooks.d style: SLURM_LOCALID picks each task's GPU" task_mode_hooksd
