#!/bin/bash
# tag: every-slurm
# Signals and ctrun's own failures with the workers in a container (no
# Slurm, so nothing but ctrun forwards anything): SIGTERM and SIGUSR1 reach
# the worker through runc and the agent; after kill -9 of ctrun nothing is
# left running and the next ctrun removes the dead one's run directory;
# --nv without a GPU and a runtime that is not installed exit 125.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
need_image BUSYBOX busybox.sqsh
cd "$TMPD"

wait_for() { # file text
	for _ in $(seq 100); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
	fail "no '$2' in $1: $(cat "$1")"
}
gone() { # pattern
	for _ in $(seq 50); do pgrep -f -- "$1" >/dev/null || return 0; sleep 0.1; done
	fail "still running: $(pgrep -af -- "$1")"
}

signals() {
	"$CTRUN" --image "$BUSYBOX" -- sh -c 'trap "echo got-usr1" USR1; trap "echo got-term; exit 9" TERM;
		echo ready; while :; do sleep 0.1; done' > out 2>&1 &
	pid=$!
	wait_for out ready
	kill -USR1 "$pid"
	wait_for out got-usr1
	kill -TERM "$pid"
	run_rc wait "$pid"
	cat out
	assert_eq 9 "$rc" "exit status after SIGTERM"
	grep -q got-term out || fail "the worker did not get SIGTERM"
}

killed_ctrun() {
	"$CTRUN" --image "$BUSYBOX" -- sh -c "echo ready; sleep 4242$$" > out2 2>&1 &
	pid=$!
	wait_for out2 ready
	runc=$(pgrep -P "$pid" runc)
	agent=$(pgrep -P "$runc")
	[ -n "$agent" ] || fail "no agent under runc $runc"
	kill -KILL "$pid"
	gone "sleep 4242$$"
	for _ in $(seq 50); do kill -0 "$runc" "$agent" 2>/dev/null || break; sleep 0.1; done
	! kill -0 "$runc" 2>/dev/null || fail "runc ($runc) survived ctrun"
	! kill -0 "$agent" 2>/dev/null || fail "the agent ($agent) survived ctrun"
	base=${TMPDIR:-/tmp}/ctrun-$(id -u)
	dead=$(grep -l " $pid\$" "$base"/ctrun-*/owner 2>/dev/null || true)
	[ -n "$dead" ] || fail "the killed ctrun left no run directory (test assumption)"
	"$CTRUN" -q --image "$BUSYBOX" -- true
	[ ! -e "$dead" ] || fail "the next ctrun did not remove $(dirname "$dead")"
}

nv() {
	if ! ls /dev/nvidia[0-9]* >/dev/null 2>&1; then
		run_rc "$CTRUN" --nv --image "$BUSYBOX" -- true 2> err
		assert_eq 125 "$rc" "--nv without a GPU"
		grep -q "GPU passthrough was requested" err || fail "--nv message: $(cat err)"
		run_rc "$CTRUN" --image "$BUSYBOX" -- true
		assert_eq 0 "$rc" "no GPU, not requested: skipped quietly"
	else
		# A GPU machine: the same request is granted.
		run_rc "$CTRUN" --nv --image "$BUSYBOX" -- true
		assert_eq 0 "$rc" "--nv on a machine with GPUs"
	fi
}

no_runtime() {
	run_rc env PATH=/usr/bin:/bin "$CTRUN" --runtime enroot --image "$BUSYBOX" -- true 2> err
	assert_eq 125 "$rc" "--runtime enroot, not installed"
	grep -q "enroot not found in PATH" err || fail "message: $(cat err)"
}

behaviour "SIGUSR1 and SIGTERM reach the worker through runc and the agent" signals
behaviour "after kill -9 of ctrun nothing is left; the next ctrun removes its run directory" killed_ctrun
behaviour "--nv: 125 without a GPU, granted with one" nv
behaviour "a runtime that is not installed: 125" no_runtime
