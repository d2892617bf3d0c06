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
shell() { # what, output file, then the command (ptyrun.py types into the shell)
	local what=$1 out=$2
	shift 2
	"$@" > "$out"
	expect "$what" "$out"
}
from_salloc() {
	shell "ctrun shell from salloc" out4 "$PY" "$pty" "$type" salloc -N2 "$CTRUN" shell --image "$BUSYBOX"
	grep -q "^host=${NODES[0]}" out4 || fail "from salloc the shell ran on $(grep ^host= out4), not ${NODES[0]}"
}
behaviour "ctrun shell" shell "ctrun shell" out1 "$PY" "$pty" "$type" "$CTRUN" shell --image "$BUSYBOX"
behaviour "ctrun --image with no command" shell "ctrun --image with no command" out2 \
	"$PY" "$pty" "$type" "$CTRUN" --image "$BUSYBOX"
behaviour "ctrun shell as $user (rootless)" shell "ctrun shell as $user" out3 \
	su "$user" -s /bin/bash -c '"$0" "$@"' -- "$PY" "$pty" "$type" "$CTRUN" shell --image "$BUSYBOX"
behaviour "ctrun shell from salloc, on the allocation's first node" from_salloc
behaviour "no container is left" assert_no_containers
