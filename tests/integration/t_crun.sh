#!/bin/bash
# --runtime crun: the OCI driver run by crun (runner/container/rt/oci/, one
# line of the driver table), on the test cluster as root.  The plan is the
# oci plan with crun as its binary; DDP 2x2 trains through it, one crun
# container per node, and no container is left behind.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
command -v crun > /dev/null || skip "crun not installed (tests/deps.sh installs it)"
need_image TORCH torch.sqsh
need_image BUSYBOX busybox.sqsh
cd "$TMPD"
cp "$CTRUN_REPO/examples/train_ddp.py" .

# The same plan as --runtime oci, run by crun.
plan() {
	"$CTRUN" --image "$BUSYBOX" --runtime crun --dry-run -- true > crun.plan
	"$CTRUN" --image "$BUSYBOX" --runtime oci --dry-run -- true > oci.plan
	grep -q "^# container: runtime crun ($(command -v crun)), image $BUSYBOX (squashfs)$" crun.plan ||
		fail "dry-run does not name crun: $(grep '^# container' crun.plan)"
	grep -Eq "(^| )$(command -v crun) --root .* run --bundle " crun.plan ||
		fail "crun does not run the bundle: $(tail -1 crun.plan)"
	norm() { sed -E "s#ctrun-[^/ ]*-[0-9]+-[0-9a-f]{8}#ID#g; s#MASTER_PORT=[0-9]+#MASTER_PORT=P#; s#$(command -v crun)|$(command -v runc)#BIN#; s#runtime (crun|oci)#runtime X#; s#, a tmpfs over /sys/fs/cgroup/unified if cgroup2 there holds controllers##" "$1"; }
	diff <(norm oci.plan) <(norm crun.plan) > plan.diff || fail "crun's plan is not oci's: $(cat plan.diff)"
}

ddp() {
	run_rc srun -N2 --ntasks-per-node=1 "$CTRUN" --runtime crun -v --image "$TORCH" --nproc-per-node 2 \
		train_ddp.py --epochs 2 --out "$TMPD" 2> ddp.err
	cat ddp.err >&2
	assert_eq 0 "$rc" "srun exit status (DDP 2x2 under crun)"
	check_ddp "$TMPD" 2 2
	[ "$(grep -c "ctrun: crun container .* ($(command -v crun)), image" ddp.err)" = 2 ] ||
		fail "not one crun container per node: $(grep 'container' ddp.err)"
}

no_leftovers() {
	assert_no_containers
	assert_no_leftovers "crun --root" 1
}

behaviour "the plan of --runtime crun is the oci plan, run by crun" plan
behaviour "DDP 2x2 under crun, one crun container per node" ddp
behaviour "no container and no crun is left" no_leftovers
