#!/bin/bash
# tag: every-slurm
# `ctrun shell --image IMG` through a real pseudo-terminal: an interactive
# shell in the container (a terminal inside, the typed command's output,
# its exit status), the same with `ctrun --image IMG` and no command, as an
# unprivileged user (rootless), and from an salloc shell, where it must go
# through `srun --pty` to the allocation's first node.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
need_image BUSYBOX busybox.sqsh
user=$("$CTRUN_REPO/tests/cluster/ensure-user.sh")
pty=$CTRUN_REPO/tests/integration/ptyrun.py
cd "$TMPD"
chmod 777 "$TMPD"
type='echo answer=$((6*7)); [ -t 0 ] && echo tty=yes; echo host=$(hostname); exit 3\n'

expect() { # what, output file
	grep -q '^answer=42' "$2" || fail "$1: no output of the typed command: $(cat "$2")"
	grep -q '^tty=yes' "$2" || fail "$1: no terminal in the container"
	grep -q '^status 3$' "$2" || fail "$1: exit status: $(tail -1 "$2")"
}
"$PY" "$pty" "$type" "$CTRUN" shell --image "$BUSYBOX" > out1
expect "ctrun shell" out1
"$PY" "$pty" "$type" "$CTRUN" --image "$BUSYBOX" > out2
expect "ctrun --image with no command" out2
su "$user" -s /bin/bash -c '"$0" "$@"' -- "$PY" "$pty" "$type" "$CTRUN" shell --image "$BUSYBOX" > out3
expect "ctrun shell as $user" out3
"$PY" "$pty" "$type" salloc -N2 "$CTRUN" shell --image "$BUSYBOX" > out4
expect "ctrun shell from salloc" out4
grep -q "^host=${NODES[0]}" out4 || fail "from salloc the shell ran on $(grep ^host= out4), not ${NODES[0]}"
assert_no_containers
