#!/bin/bash
# tag: every-slurm
# A squashfs or SIF image mounted where it lies instead of unpacked
# (--image-mode auto|mount|unpack): root mounts it with the kernel's
# squashfs, a user with squashfuse_ll in a user namespace (the nodes'
# /dev/fuse is 0666, as on a compute node).  Mount and unpack give the same
# files and the same training; nothing is unpacked, and nothing stays
# mounted or attached after success, kill -9 or scancel; the tasks of a
# step on one node share one mount (task mode); without FUSE a
# user's run unpacks and -v says why; --image-mode mount then fails, naming
# the missing part; another user cannot read the image through the holder.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
need_image BB busybox.sqsh
need_image BBSIF busybox.sif
need_image TORCH torch.sqsh
"$CTRUN_REPO/tests/cluster/ensure-user.sh" ctrunuser >/dev/null
cd "$TMPD"
cp "$BB" mine.sqsh # a file of this test's own: its loop devices are ours
export CTRUN_CACHE_DIR=$TMPD/cache

loops() { losetup -j "$TMPD/mine.sqsh" | wc -l; }
no_loops() {
	local i
	for ((i = 0; i < 100; i++)); do [ "$(loops)" = 0 ] && return 0; sleep 0.05; done
	fail "$1: loop devices still attached: $(losetup -j "$TMPD/mine.sqsh")"
}
sums() { # the files' contents, as the container sees them
	"$CTRUN" -q --no-prefix --image-mode "$1" --image "$2" -- \
		sh -c 'find /bin /etc /usr -xdev -type f 2>/dev/null | sort | xargs md5sum'
}

# Root, standalone: mounted (-v says so), no cache entry, same files.  (Once
# an unpacked entry exists, auto uses it: the fastest start.)
root_standalone() {
	run_rc "$CTRUN" -v --image mine.sqsh -- sh -c 'echo from-mount' > out 2> err
	cat out err
	assert_eq 0 "$rc" "a run from the mounted image"
	grep -q "mine.sqsh mounted (kernel squashfs), not unpacked" err || fail "no mount line: $(cat err)"
	[ -z "$(ls -A cache/entries 2>/dev/null)" ] || fail "a mounted run unpacked: $(ls cache/entries)"
	no_loops "after a run"
	assert_eq "$(sums unpack mine.sqsh)" "$(sums mount mine.sqsh)" "files, mounted vs unpacked (sqsh)"
	assert_eq "$(sums unpack "$BBSIF")" "$(sums mount "$BBSIF")" "files, mounted vs unpacked (SIF)"
	no_loops "after the comparisons"
}
behaviour "root, standalone: mounted, no cache entry, the same files as unpacked (sqsh, SIF)" root_standalone

# kill -9 of ctrun while the container runs from the mount: nothing stays.
# ctrun is started and waited for in the behaviour's own shell.
kill9() {
	local pid i
	"$CTRUN" --image-mode mount --image mine.sqsh -- sh -c "echo up; exec sleep 3003$$" > k.out 2>&1 &
	pid=$!
	wait_lines k.out 1 30 || fail "the container did not start: $(cat k.out)"
	[ "$(loops)" = 1 ] || fail "one loop device while it runs, got $(loops)"
	kill -9 "$pid"
	wait "$pid" 2>/dev/null || true
	for ((i = 0; i < 100; i++)); do pgrep -f "sleep 3003$$" > /dev/null || break; sleep 0.05; done
	! pgrep -f "sleep 3003$$" > /dev/null || fail "the container outlived ctrun"
	no_loops "after kill -9"
	! grep -q "$TMPD" /proc/self/mountinfo || fail "a mount is left: $(grep "$TMPD" /proc/self/mountinfo)"
}
behaviour "kill -9 of ctrun while the container runs from the mount: nothing stays" kill9

# Task mode: the tasks of a step on one node share one mount (one loop
# device), each its own container; the mount goes with the last of them.
# On failure the go file is made anyway (the EXIT trap of the behaviour's
# subshell), so no task waits for ever holding the node.
n1=${NODES[0]}
task_mode() {
	local pid
	trap 'touch "$TMPD/tm.go"' EXIT
	srun -N1 -w "$n1" --ntasks-per-node=3 "$CTRUN" -v --image-mode mount --image mine.sqsh -- \
		sh -c "echo \$RANK >> '$TMPD/tm.up'; until [ -e '$TMPD/tm.go' ]; do sleep 0.05; done; \
		       cat /etc/passwd > /dev/null && echo done \$RANK" > tm.out 2> tm.err &
	pid=$!
	wait_lines tm.up 3 60 || { cat tm.out tm.err; fail "the three tasks did not start"; }
	assert_eq 1 "$(loops)" "loop devices while three tasks of a node run from the mount"
	touch tm.go
	run_rc wait "$pid"
	cat tm.out tm.err
	assert_eq 0 "$rc" "task mode from one shared mount"
	assert_eq 3 "$(grep -c '^\[rank[0-2]\]: done [0-2]$' tm.out)" "tasks that read the image"
	assert_eq 2 "$(grep -c 'mounted (kernel squashfs), not unpacked; the mount of another task' tm.err)" \
		"tasks that used another task's mount"
	no_loops "after task mode"
}
behaviour "task mode: the tasks of a step on one node share one mount" task_mode

# kill -9 of the task whose ctrun started the node's holder: the holder
# goes with it (PDEATHSIG) and its share's lock and socket stay in the run
# directory (here under a TMPDIR of this test, to look into); the next run
# on the node removes them (nobody holds the lock, nobody listens) and runs.
# The go file is made on failure too, as in task mode.
shares() { find "$TMPD/rt" -name 'share-*' | sort; }
in_rt() { env -u XDG_RUNTIME_DIR TMPDIR="$TMPD/rt" "$@"; }
starter_killed() {
	local pid tasks holder starter i left
	trap 'touch "$TMPD/k9.go"' EXIT
	mkdir -m 700 rt
	in_rt srun -N1 -w "$n1" --ntasks-per-node=2 "$CTRUN" --image-mode mount --image mine.sqsh -- \
		sh -c "echo \$RANK >> '$TMPD/k9.up'; until [ -e '$TMPD/k9.go' ]; do sleep 0.05; done" \
		> k9.out 2>&1 &
	pid=$!
	wait_lines k9.up 2 60 || { cat k9.out; fail "the two tasks did not start"; }
	tasks=$(pgrep -d, -f "^$CTRUN .*$TMPD/k9.go")
	holder=$(pgrep -P "$tasks" -x ctrun | head -1)
	[ -n "$holder" ] || fail "no image holder under the tasks' ctruns $tasks"
	starter=$(ps -o ppid= -p "$holder" | tr -d ' ')
	assert_eq 2 "$(shares | grep -c '\.[ls]ock$')" "share files while the step runs: $(shares)"
	kill -9 "$starter"
	touch k9.go # the other task ends by itself
	run_rc wait "$pid"
	cat k9.out
	[ "$rc" -ne 0 ] || fail "the step succeeded although a task was killed"
	for ((i = 0; i < 200; i++)); do pgrep -f "$TMPD/k9.go" > /dev/null || break; sleep 0.05; done
	! pgrep -f "$TMPD/k9.go" > /dev/null || fail "processes left: $(pgrep -af "$TMPD/k9.go")"
	no_loops "after kill -9 of the starting task"
	left=$(shares)
	assert_eq 2 "$(grep -c . <<< "$left")" "share files left by the kill -9: $left"
	run_rc in_rt srun -N1 -w "$n1" --ntasks-per-node=2 "$CTRUN" --image-mode mount --image mine.sqsh \
		-- true
	assert_eq 0 "$rc" "the next task-mode run on the node"
	assert_eq "" "$(shares)" "share files after the next run on the node (were: $left)"
	no_loops "after the next run"
}
behaviour "kill -9 of the task that started the holder: the next run on the node cleans up and runs" starter_killed

# Another user cannot reach root's mounted image through the holder.
other_user() {
	local pid holder
	"$CTRUN" --image-mode mount --image mine.sqsh -- sh -c "echo up; exec sleep 3004$$" > h.out 2>&1 &
	pid=$!
	wait_lines h.out 1 30 || fail "the container did not start: $(cat h.out)"
	holder=$(pgrep -P "$pid" -x ctrun | head -1)
	[ -n "$holder" ] || fail "no image holder under ctrun $pid"
	run_rc su ctrunuser -s /bin/bash -c "ls /proc/$holder/root/ >/dev/null 2>&1"
	[ "$rc" -ne 0 ] || fail "ctrunuser read root's image holder's namespace"
	kill "$pid"
	wait "$pid" 2>/dev/null || true
	no_loops "after SIGTERM"
}
behaviour "another user cannot reach root's mounted image through the holder" other_user

# A user on a node: squashfuse_ll in a user namespace; DDP from the mount
# gives the same weights as from an unpacked image.
mkdir -p m u && chmod 777 m u
cp "$CTRUN_REPO/examples/train_ddp.py" .
as_user() { su ctrunuser -s /bin/bash -c "cd '$TMPD' && SLURM_CONF='$SLURM_CONF' \
	CTRUN_CACHE_DIR='$TMPD/usercache' $*"; }
user_mount() {
	run_rc as_user srun -N1 -w "$n1" "'$CTRUN'" -v --image-mode mount --image mine.sqsh -- true 2> uerr
	cat uerr
	assert_eq 0 "$rc" "a user's run from the mount"
	grep -q "mounted (squashfuse_ll), not unpacked" uerr || fail "no FUSE mount for ctrunuser: $(cat uerr)"
	assert_no_leftovers squashfuse 10
}
behaviour "a user's run: squashfuse_ll in a user namespace" user_mount
# Task mode as the user: the node's tasks share one squashfuse_ll.
user_task_mode() {
	local pid
	trap 'touch "$TMPD/u.go"' EXIT
	as_user srun -N1 -w "$n1" --ntasks-per-node=2 "'$CTRUN'" --image-mode mount --image mine.sqsh -- \
		sh -c "'echo \$RANK >> $TMPD/u.up; until [ -e $TMPD/u.go ]; do sleep 0.05; done'" > u.out 2>&1 &
	pid=$!
	wait_lines u.up 2 60 || { cat u.out; fail "the user's two tasks did not start"; }
	assert_eq 1 "$(pgrep -c -f "squashfuse_ll.*$TMPD")" "squashfuse_ll processes for two tasks of a node"
	touch u.go
	run_rc wait "$pid"
	assert_eq 0 "$rc" "the user's tasks from one FUSE mount"
	assert_no_leftovers squashfuse 10
}
behaviour "task mode as the user: the node's tasks share one squashfuse_ll" user_task_mode
# DDP from the mount gives the same weights as from an unpacked image.
user_ddp() {
	local mode
	for mode in mount unpack; do
		run_rc as_user srun -N2 --ntasks-per-node=1 "'$CTRUN'" --image-mode "$mode" --image "'$TORCH'" \
			--nproc-per-node 2 train_ddp.py --epochs 1 \
			--out "'$TMPD/$([ $mode = mount ] && echo m || echo u)'"
		assert_eq 0 "$rc" "DDP as ctrunuser, image $mode"
	done
	check_ddp m 2 2
	assert_eq "$(grep -ho '"weights": "[0-9a-f]*"' m/rank-0.json)" \
		"$(grep -ho '"weights": "[0-9a-f]*"' u/rank-0.json)" "weights, mounted vs unpacked"
	assert_no_leftovers squashfuse 10
}
behaviour "DDP as the user: the same weights from the mount as unpacked" user_ddp

# No FUSE for a user (here: a root-only file over /dev/fuse, in a private
# mount namespace): auto unpacks and says why under -v; mount fails, naming it.
nofuse_user() {
	local why
	touch nofuse && chmod 600 nofuse
	no_fuse() { unshare -m --propagation private sh -c 'mount --bind "$1" /dev/fuse && shift && "$@"' \
		sh "$TMPD/nofuse" "$@"; }
	why="/dev/fuse cannot be opened"
	run_rc no_fuse su ctrunuser -s /bin/bash -c "cd '$TMPD' && CTRUN_CACHE_DIR='$TMPD/usercache' \
		'$CTRUN' -v --image mine.sqsh -- true" 2> ferr
	cat ferr
	assert_eq 0 "$rc" "a user's run without FUSE"
	grep -q "unpacking .*mine.sqsh, not mounting it: $why" ferr || fail "no reason given: $(cat ferr)"
	run_rc no_fuse su ctrunuser -s /bin/bash -c "cd '$TMPD' && CTRUN_CACHE_DIR='$TMPD/usercache' \
		'$CTRUN' --image-mode mount --image mine.sqsh -- true" 2> ferr
	assert_eq 125 "$rc" "--image-mode mount without FUSE"
	grep -q "image-mode mount: .*mine.sqsh: $why" ferr || fail "message: $(cat ferr)"
	assert_eq 1 "$(wc -l < ferr)" "lines of error"
}
behaviour "no FUSE for a user: auto unpacks and says why, mount fails naming it" nofuse_user
