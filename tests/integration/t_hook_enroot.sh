#!/bin/bash
# The enroot hook, run the way enroot runs hooks: `ctrun hooks install
# enroot` as an HPC user writes ENROOT_CONFIG_PATH/hooks.d/99-ctrun-gpus.sh;
# in each task of `srun -n2 --gpus-per-node=2` (GPUs 2,3: another job holds
# 0,1) the test plays enroot: a user and mount namespace (enroot-unshare
# --user --mount), ENROOT_ROOTFS, ENROOT_ENVIRON (the image's environment,
# with NGC's NVIDIA_VISIBLE_DEVICES=all), an empty ENROOT_MOUNTS, every
# executable hooks.d/*.sh run in turn, then the fstab applied.
#  restricted /dev (ENROOT_RESTRICT_DEV's tmpfs, into which 98-nvidia.sh
#    bound every GPU): the other GPUs' nodes are removed, fstab lines bind
#    exactly the task's GPU and nvidiactl, CUDA_VISIBLE_DEVICES=0;
#  shared /dev (enroot's default rbind of the host's): nothing can be
#    hidden, so no device lines, CUDA_VISIBLE_DEVICES names the host GPU,
#    and task 0 says so once.
# Outside Slurm (no GPU requested) the hook adds nothing.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/hooklib.sh"
hook_requirements
command -v unshare >/dev/null || skip "no unshare (util-linux)"
user=$("$CTRUN_REPO/tests/cluster/ensure-user.sh")
ngpus=${CTRUN_CLUSTER_GPUS:-4}
((ngpus >= 4)) || fail "the test cluster has $ngpus GPUs per node; run.sh gives it 4 (CTRUN_CLUSTER_GPUS)"
hold_gpus 2
export ENROOT_CONFIG_PATH=$TMPD/enroot-config

hookfile=$ENROOT_CONFIG_PATH/hooks.d/99-ctrun-gpus.sh
install() {
	run_rc su "$user" -s /bin/bash -c "ENROOT_CONFIG_PATH='$ENROOT_CONFIG_PATH' '$CTRUN' hooks install enroot"
	assert_eq 0 "$rc" "ctrun hooks install enroot"
	[ -x "$hookfile" ] || fail "no executable $hookfile"
	assert_eq "$user" "$(stat -c %U "$hookfile")" "owner of the installed hook"
}

cat >"$TMPD/enroot-task.sh" <<'EOF'
set -euo pipefail
mode=$1
r=$TMPD/$mode-$SLURM_PROCID
mkdir -p "$r/rootfs/dev" "$r/rootfs/etc" "$r/rootfs/usr/lib64"
echo "$SLURM_STEP_GPUS" >"$r.gpus"
# The image's environment; its last line lacks a newline, as files do.
printf 'NVIDIA_VISIBLE_DEVICES=all\nPATH=/usr/bin:/bin' >"$r/environment"
: >"$r/fstab"
export ENROOT_ROOTFS=$r/rootfs ENROOT_ENVIRON=$r/environment ENROOT_MOUNTS=$r/fstab
unshare --user --map-root-user --mount --propagation private bash -c '
	set -euo pipefail
	export ENROOT_PID=$$
	if [ "$1" = restricted ]; then
		mount -t tmpfs -o mode=755 tmpfs "$ENROOT_ROOTFS/dev"
		for d in /dev/nvidia[0-9]*; do
			: >"$ENROOT_ROOTFS$d"
			mount --bind "$d" "$ENROOT_ROOTFS$d"
		done
	else
		mount --rbind /dev "$ENROOT_ROOTFS/dev"
	fi
	for f in "$ENROOT_CONFIG_PATH"/hooks.d/*.sh; do
		[ -x "$f" ] && "$f" >/dev/null
	done
	if [ "$1" = restricted ]; then
		while read -r src dst type opts; do
			[ -e "$ENROOT_ROOTFS$dst" ] || : >"$ENROOT_ROOTFS$dst"
			mount --bind "$src" "$ENROOT_ROOTFS$dst"
		done <"$ENROOT_MOUNTS"
		for d in "$ENROOT_ROOTFS"/dev/nvidia*; do stat -c "node ${d#$ENROOT_ROOTFS} %t %T" "$d"; done
	fi
' bash "$mode" >"$r.nodes" 2>"$r.err"
EOF

srun_user() {
	su "$user" -s /bin/bash -c "cd '$TMPD' && SLURM_CONF='$SLURM_CONF' TMPD='$TMPD' \
		ENROOT_CONFIG_PATH='$ENROOT_CONFIG_PATH' srun -N1 -w '${NODES[0]}' -n2 \
		--gpus-per-node=2 bash '$TMPD/enroot-task.sh' $1"
}

# enroot_step MODE: the step's two tasks under the hooks; its GPUs into $step.
enroot_step() {
	run_rc srun_user "$1"
	assert_eq 0 "$rc" "enroot-style hooks, $1 /dev"
	IFS=, read -r -a step <"$TMPD/$1-0.gpus"
	assert_eq "2 3" "${step[*]}" "the step's GPUs"
}

restricted() {
	local step t r g
	enroot_step restricted
	for t in 0 1; do
		r=$TMPD/restricted-$t g=${step[$t]}
		note "task $t: environment, fstab, /dev"
		cat "$r/environment" "$r/fstab" "$r.nodes" "$r.err"
		assert_eq "NVIDIA_VISIBLE_DEVICES=all
PATH=/usr/bin:/bin
CUDA_VISIBLE_DEVICES=0
NVIDIA_VISIBLE_DEVICES=$g" "$(cat "$r/environment")" "task $t: ENROOT_ENVIRON"
		assert_eq "/dev/nvidia$g /dev/nvidia$g none x-create=file,bind,ro,nosuid,noexec,private
/dev/nvidiactl /dev/nvidiactl none x-create=file,bind,ro,nosuid,noexec,private" \
			"$(cat "$r/fstab")" "task $t: ENROOT_MOUNTS"
		assert_eq "node /dev/nvidia$g c3 $(printf %x "$g");node /dev/nvidiactl c3 ff;" \
			"$(sort -V "$r.nodes" | tr '\n' ';')" "task $t: GPU nodes left in the container's /dev"
	done
}

shared() {
	local step t r g
	enroot_step shared
	for t in 0 1; do
		r=$TMPD/shared-$t g=${step[$t]}
		assert_eq "CUDA_VISIBLE_DEVICES=$g" "$(grep ^CUDA_VISIBLE_DEVICES= "$r/environment")" \
			"task $t: CUDA_VISIBLE_DEVICES with the host's /dev"
		assert_eq "" "$(cat "$r/fstab")" "task $t: no device lines with the host's /dev"
	done
	grep -q "shares the host's /dev" "$TMPD/shared-0.err" || fail "task 0 did not warn: $(cat "$TMPD/shared-0.err")"
	assert_eq "" "$(cat "$TMPD/shared-1.err")" "task 1's stderr (one warning per step)"
}

no_gpu() {
	mkdir -p "$TMPD/none/rootfs"
	printf 'A=1\n' >"$TMPD/none/env"
	: >"$TMPD/none/fstab"
	run_rc env -i PATH=/usr/bin:/bin ENROOT_ROOTFS="$TMPD/none/rootfs" ENROOT_ENVIRON="$TMPD/none/env" \
		ENROOT_MOUNTS="$TMPD/none/fstab" "$hookfile"
	assert_eq 0 "$rc" "hook without GPUs"
	assert_eq "A=1" "$(cat "$TMPD/none/env")" "ENROOT_ENVIRON without GPUs"
	assert_eq "" "$(cat "$TMPD/none/fstab")" "ENROOT_MOUNTS without GPUs"
}

uninstall() {
	run_rc su "$user" -s /bin/bash -c "ENROOT_CONFIG_PATH='$ENROOT_CONFIG_PATH' '$CTRUN' hooks uninstall enroot"
	assert_eq 0 "$rc" "ctrun hooks uninstall enroot"
	[ ! -e "$hookfile" ] || fail "$hookfile left behind"
}

behaviour "ctrun hooks install enroot as an HPC user" install
behaviour "restricted /dev: exactly the task's GPU bound, CUDA_VISIBLE_DEVICES=0" restricted
behaviour "shared /dev: no device lines, the host's GPU named, one warning" shared
behaviour "no GPU requested: nothing added" no_gpu
behaviour "ctrun hooks uninstall enroot" uninstall
