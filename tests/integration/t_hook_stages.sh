#!/bin/bash
# The hook where runtimes run it, each time with exactly the step's GPUs:
#  1. rootless runc as an HPC user (`runc spec --rootless`): the
#     createContainer hook runs as root of the container's user namespace;
#  2. root runc with the hook at prestart (the stage older runtimes know):
#     it runs in the runtime's namespaces and enters the container's mount
#     namespace through the state's pid.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/hooklib.sh"
hook_requirements
user=$("$CTRUN_REPO/tests/cluster/ensure-user.sh")
export HOOK TMPD CTRUN

cat >"$TMPD/stage.sh" <<'EOF'
set -euo pipefail
. "$CTRUN_REPO/tests/integration/hooklib.sh"
b=$TMPD/$1
echo "$SLURM_STEP_GPUS" >"$b.gpus"
mkdir -p "$b"
make_rootfs "$b/rootfs"
(cd "$b" && runc spec ${2:+--rootless})
"$PY" - "$b/config.json" "$REPORT" <<'PYEOF'
import json, sys
c = json.load(open(sys.argv[1]))
c["process"].update(terminal=False, args=["/bin/sh", "-c", sys.argv[2]], env=["PATH=/bin"])
c["root"]["readonly"] = False
json.dump(c, open(sys.argv[1], "w"))
PYEOF
"$CTRUN" -q hooks configure "$b"
if [ "$1" = prestart ]; then
	"$PY" - "$b/config.json" <<'PYEOF'
import json, sys
c = json.load(open(sys.argv[1]))
h = c["hooks"].pop("createContainer")
for x in h:
    x["args"] = ["ctrun-hook", "prestart"]
c["hooks"]["prestart"] = h
json.dump(c, open(sys.argv[1], "w"))
PYEOF
fi
runc --root "$TMPD/runc-$1" run --bundle "$b" "hk-$1-$SLURM_JOB_ID" >"$b.out"
EOF

check() {
	local out=$TMPD/$1.out want="" g
	sed "s/^/    $1: /" "$out"
	for g in $(tr , ' ' <"$TMPD/$1.gpus"); do want+="node /dev/nvidia$g c3 $(printf %x "$g");"; done
	assert_eq "${want}node /dev/nvidiactl c3 ff;" \
		"$(grep '^node /dev/nvidia[0-9c]' "$out" | sort -V | tr '\n' ';')" "$1: device nodes"
	grep -qx "CUDA_VISIBLE_DEVICES=0,1" "$out" || fail "$1: CUDA_VISIBLE_DEVICES not renumbered"
	if grep '^open' "$out" | grep -q 'not permitted'; then fail "$1: the GPUs do not open"; fi
}

rootless() {
	run_rc su "$user" -s /bin/bash -c "cd '$TMPD' && SLURM_CONF='$SLURM_CONF' TMPD='$TMPD' \
		CTRUN='$CTRUN' HOOK='$HOOK' srun -N1 -w '${NODES[0]}' --gpus-per-node=2 \
		bash '$TMPD/stage.sh' rootless rootless"
	assert_eq 0 "$rc" "rootless runc as $user"
	check rootless
}

prestart() {
	run_rc srun -N1 -w "${NODES[0]}" --gpus-per-node=2 bash "$TMPD/stage.sh" prestart
	assert_eq 0 "$rc" "root runc with the hook at prestart"
	check prestart
}

behaviour "rootless runc as $user: createContainer in the user namespace" rootless
behaviour "root runc with the hook at prestart" prestart
