#!/bin/bash
# tag: every-slurm
# The SPANK plugin in sbatch and salloc: `sbatch --container-image` and
# `#SBATCH --container-image` run the batch script inside the container
# (the script bound from slurmd's spool); a bad value fails sbatch at
# submission; `srun --pty --container-image` gives an interactive shell
# in the container with a terminal; nothing is left.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
. "$(dirname "$0")/spanklib.sh"
need_image BB busybox.sqsh
need_image TORCH torch.sqsh
spank_cluster_up
cd "$TMPD"
chmod 777 "$TMPD"
inside='test ! -e /usr/bin/python3 && test -x /bin/busybox && echo "inside as $(id -u)"'

option() {
	run_rc as_user sbatch --wait -o "$TMPD/opt.out" --container-image="$BB" --wrap "$inside"
	assert_eq 0 "$rc" "sbatch --wait status"
	assert_eq "inside as $(id -u "$SPANK_USER")" "$(cat opt.out)" "the batch script's output"
}
behaviour "sbatch --container-image runs the script in the container" option

directive() {
	printf '#!/bin/sh\n#SBATCH --container-image=%s\n%s\n' "$BB" "$inside" > script.sh
	run_rc as_user sbatch --wait -o "$TMPD/dir.out" script.sh
	assert_eq 0 "$rc" "sbatch --wait status"
	assert_eq "inside as $(id -u "$SPANK_USER")" "$(cat dir.out)" "the batch script's output"
}
behaviour "#SBATCH --container-image runs the script in the container" directive

# srun in the script (in the container, which has no Slurm) is the host's,
# and its step runs in the job's image, one container per node.
srun_inside() {
	printf '#!/bin/sh\n#SBATCH -N2 --container-image=%s\n%s\n' "$BB" \
		'echo "srun is $(command -v srun)"
srun --ntasks-per-node=1 sh -c "test ! -e /usr/bin/python3 && echo step on \$(hostname) in the image"
echo "srun status $?"' > srun.sh
	run_rc as_user sbatch --wait -o "$TMPD/srun.out" srun.sh
	cat srun.out
	assert_eq 0 "$rc" "sbatch --wait status"
	grep -q '^srun is /.ctrun/bin/srun$' srun.out || fail "srun in the script: $(head -1 srun.out)"
	assert_eq "step on ${NODES[0]} in the image;step on ${NODES[1]} in the image;" \
		"$(grep '^step on' srun.out | sort | tr '\n' ';')" "the step's tasks"
	grep -q '^srun status 0$' srun.out || fail "srun's status in the script"
}
behaviour "srun in a containerised batch script runs the host's, its step in the image" srun_inside

ddp_from_batch() {
	mkdir -p ddp && chmod 777 ddp
	cp "$CTRUN_REPO/examples/train_ddp.py" .
	printf '#!/bin/sh\n#SBATCH -N2 --ntasks-per-node=2 --container-image=%s\n%s\n' "$TORCH" \
		"srun python3 $TMPD/train_ddp.py --epochs 1 --out $TMPD/ddp" > ddp.sh
	run_rc as_user sbatch --wait -o "$TMPD/ddp.out" ddp.sh
	cat ddp.out
	assert_eq 0 "$rc" "sbatch --wait status"
	check_ddp "$TMPD/ddp" 2 2
}
behaviour "DDP 2x2 from a #SBATCH --container-image script's srun" ddp_from_batch

bad_in_sbatch() {
	run_rc as_user sbatch --container-image="$BB" --container-mounts=/tmp: --wrap true 2> err
	[ "$rc" -ne 0 ] || fail "sbatch took a bad --container-mounts"
	grep -qF "sbatch: error: ctrun: --container-mounts: invalid format: /tmp:" err ||
		fail "no line naming the option: $(cat err)"
	! grep -q "Submitted batch job" err || fail "a job was submitted"
}
behaviour "a bad value fails sbatch at submission" bad_in_sbatch

pty_shell() {
	local type='echo answer=$((6*7)); [ -t 0 ] && echo tty=yes; test ! -e /usr/bin/python3 && echo image=yes; exit 3\n'
	as_user "$PY" "$CTRUN_REPO/tests/integration/ptyrun.py" "$type" \
		srun -N1 --pty --container-image="$BB" sh > pty.out
	grep -q '^answer=42' pty.out || fail "no output of the typed command: $(cat pty.out)"
	grep -q '^tty=yes' pty.out || fail "no terminal in the container: $(cat pty.out)"
	grep -q '^image=yes' pty.out || fail "the shell is not in the image: $(cat pty.out)"
	grep -q '^status 3$' pty.out || fail "exit status: $(tail -1 pty.out)"
}
behaviour "srun --pty --container-image: a shell in the container" pty_shell

nothing_left() {
	assert_no_leftovers "ctrun __hold" 10
	assert_no_leftovers "/.ctrun/agent" 2
	assert_no_rundirs
}
behaviour "nothing is left" nothing_left
