#!/bin/bash
# Charliecloud's ch-run as ctrun's runtime (--runtime charliecloud): DDP
# 2 nodes x 2 ranks in the torch image as root (node mode: one container
# per node, its agent starting 2 workers) and as an HPC user (task mode: one
# container per rank, workers as the user's own uid); then a failing
# worker's exit status and root-cause line, a read-only mount, and
# arguments byte for byte through ch-run's argv.  Each behaviour is
# reported on its own line; the test goes on after a failure and fails at
# the end.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
command -v ch-run >/dev/null || skip "no ch-run (tests/deps.sh installs Debian's charliecloud-runtime)"
need_image TORCH torch.sqsh
need_image BUSYBOX busybox.sqsh
user=$("$CTRUN_REPO/tests/cluster/ensure-user.sh")
cd "$TMPD"
cp "$CTRUN_REPO/examples/train_ddp.py" .

ddp_root_node_mode() {
	mkdir -p root && cd root
	run_rc srun -N2 --ntasks-per-node=1 "$CTRUN" --runtime charliecloud --image "$TORCH" \
		--nproc-per-node 2 --python "$PY" "$TMPD/train_ddp.py" --epochs 2 --out "$TMPD/root" \
		2> err.txt
	cat err.txt >&2
	assert_eq 0 "$rc" "srun exit status"
	check_ddp "$TMPD/root" 2 2 || fail "DDP result files"
	assert_eq root "$(stat -c %U rank-3.json)" "owner of the files the workers wrote"
}

ddp_user_task_mode() {
	mkdir -p user && chmod 777 user && cd user
	run_rc su "$user" -s /bin/bash -c "cd '$TMPD/user' && SLURM_CONF='$SLURM_CONF' srun -N2 \
		--ntasks-per-node=2 '$CTRUN' --runtime charliecloud --image '$TORCH' --python '$PY' \
		'$TMPD/train_ddp.py' --epochs 2 --out '$TMPD/user' 2> err.txt"
	cat err.txt >&2
	assert_eq 0 "$rc" "srun exit status as $user"
	check_ddp "$TMPD/user" 2 2 || fail "DDP result files"
	assert_eq "$user" "$(stat -c %U rank-3.json)" "owner of the files the workers wrote"
}

failing_worker() {
	mkdir -p fail && cd fail
	run_rc srun -N2 --ntasks-per-node=1 "$CTRUN" --runtime charliecloud --image "$BUSYBOX" \
		--nproc-per-node 2 -- sh -c 'if [ "$RANK" = 3 ]; then exit 7; fi; sleep 987' 2> err.txt
	cat err.txt >&2
	assert_eq 7 "$rc" "exit status of the step"
	grep -q "rank 3 on host ${NODES[1]} failed first: exited with status 7" err.txt ||
		fail "no root-cause line naming rank 3 on ${NODES[1]}"
	assert_no_leftovers "sleep 987" 10 || fail "workers left"
	run_rc srun -N1 "$CTRUN" --runtime charliecloud --image "$BUSYBOX" -- no-such-command \
		2> err.txt
	assert_eq 127 "$rc" "command not found in the image"
}

read_only_mount() {
	mkdir -p ro/data && cd ro
	run_rc srun -N1 "$CTRUN" --runtime charliecloud --image "$BUSYBOX" \
		--mount "$TMPD/ro/data:/data:ro" -- sh -c 'touch /data/x; id -u > id.txt'
	assert_eq 0 "$rc" "srun exit status"
	[ ! -e data/x ] || fail "a read-only mount was written"
	assert_eq 0 "$(cat id.txt)" "uid of a root run"
}

args_byte_for_byte() {
	local args=("a b" "it's" '"dq"' '$(touch /tmp/ctrun-pwned)' $'line1\nline2' '*' '' '-v' '--'
		'back\slash' '	tab' "--set-env=X='y'")
	mkdir -p args && cd args
	"$PY" -c 'import json,sys; print(json.dumps(sys.argv[1:]))' "${args[@]}" > expected.json
	rm -f /tmp/ctrun-pwned
	cat > dump.py <<'P'
import json, os, sys
with open("argv-%s.json" % os.environ["RANK"], "w") as f:
    json.dump(sys.argv[1:], f)
P
	run_rc srun -N2 --ntasks-per-node=1 "$CTRUN" --runtime charliecloud --image "$TORCH" \
		--nproc-per-node 2 -- "$PY" dump.py "${args[@]}"
	assert_eq 0 "$rc" "srun exit status"
	assert_eq 4 "$(ls argv-*.json | wc -l)" "ranks that reported"
	for f in argv-*.json; do
		"$PY" -c 'import json,sys; sys.exit(json.load(open(sys.argv[1])) != json.load(open(sys.argv[2])))' \
			expected.json "$f" || fail "$f differs: $(cat "$f")"
	done
	[ ! -e /tmp/ctrun-pwned ] || fail "a shell evaluated an argument"
}

behaviour "DDP 2x2 as root, node mode" ddp_root_node_mode
behaviour "DDP 2x2 as $user, task mode" ddp_user_task_mode
behaviour "a failing worker's status and root cause" failing_worker
behaviour "a read-only mount stays read-only" read_only_mount
behaviour "arguments byte for byte" args_byte_for_byte
behaviour "no container left" assert_no_containers
