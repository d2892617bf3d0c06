#!/bin/bash
# A real enroot (4.1.2, built from NVIDIA's source by
# ../shared/tools/build-enroot.sh into /opt/enroot) under ctrun's enroot
# adapter on the test cluster.  --image-mode mount (and auto without an
# unpacked entry): enroot starts the squashfs itself (runtime::start with a
# file: squashfuse + fuse-overlayfs), nothing unpacked; --image-mode unpack:
# `enroot create` into the node cache, then start.  The same files either
# way, the env contract on two nodes, and no FUSE process left after
# success or after kill -9 of ctrun.  (The root's file system type tells
# the two apart: the unpacked entry is a directory of the node's cache.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
[ -x /opt/enroot/bin/enroot ] ||
	skip "no real enroot in /opt/enroot (../shared/tools/build-enroot.sh builds 4.1.2 there)"
need_image BB busybox.sqsh
cd "$TMPD"
cp "$BB" mine.sqsh
# The nodes' GPUs are fakes: enroot's 98-nvidia.sh would need nvidia-container-cli.
export CTRUN_NV=false PATH=/opt/enroot/bin:$PATH CTRUN_CACHE_DIR=$TMPD/cache ENROOT_RUNTIME_PATH=$TMPD/enroot-run
cat > report.sh <<'SH'
root=$(awk '$2 == "/" { t = $3 } END { print t }' /proc/self/mounts)
echo "rank $RANK of $WORLD_SIZE node $NODE_RANK root $root"
SH
fuse_of_test() { pgrep -f "squashfuse.*$TMPD|fuse-overlayfs.*$TMPD"; }
no_fuse() {
	local i
	for ((i = 0; i < 100; i++)); do fuse_of_test > /dev/null || return 0; sleep 0.05; done
	fail "$1: FUSE processes left: $(fuse_of_test | xargs -r ps -o pid,args -p)"
}

# One srun -N2 run per mode (unpack also leaves an entry in the node cache).
run_mode() { # mount|unpack
	local mode=$1 want
	run_rc srun -N2 --ntasks-per-node=1 "$CTRUN" -v --no-prefix --runtime enroot \
		--image-mode "$mode" --image mine.sqsh -- sh "$TMPD/report.sh" > "$mode.out" 2> "$mode.err"
	cat "$mode.out" "$mode.err"
	assert_eq 0 "$rc" "srun -N2 ctrun --runtime enroot --image-mode $mode"
	want=$(grep -o 'root .*' "$mode.out" | sort -u | cut -d' ' -f2)
	if [ "$mode" = mount ]; then
		# enroot 4 overlays the squashfuse mount with the kernel's overlayfs
		# (ENROOT_NATIVE_OVERLAYFS, its default), enroot 3 with fuse-overlayfs.
		case $want in overlay | fuse.fuse-overlayfs) ;; *) fail "root from the file is '$want'" ;; esac
		grep -q "enroot starts .*mine.sqsh from the file" "$mode.err" || fail "-v does not say mount"
	else
		case $want in overlay | fuse.* | "") fail "unpacked root is '$want'" ;; esac
	fi
	assert_eq "rank 0 of 2 node 0 root $want;rank 1 of 2 node 1 root $want;" \
		"$(sort "$mode.out" | tr '\n' ';')" "both nodes' workers ($mode)"
	no_fuse "after a run ($mode)"
	if [ "$mode" = unpack ]; then
		ls cache/enroot-data/ctrun-* > /dev/null 2>&1 || fail "--image-mode unpack created no enroot entry"
	fi
}
behaviour "--image-mode mount: enroot starts the squashfs on both nodes, no FUSE left" run_mode mount
behaviour "--image-mode unpack: enroot create into the node cache, then start, on both nodes" run_mode unpack

sums() {
	"$CTRUN" -q --no-prefix --runtime enroot --image-mode "$1" --image mine.sqsh -- \
		sh -c 'find /bin /sbin /usr -xdev 2>/dev/null | sort; find /bin /usr -xdev -type f | sort | xargs md5sum'
}
same_files() {
	local m u
	m=$(sums mount) u=$(sums unpack)
	[ "$(echo "$m" | wc -l)" -gt 100 ] || fail "too few paths in the mounted image: $m"
	assert_eq "$u" "$m" "files, started from the squashfs vs unpacked"
	no_fuse "after the comparison"
}
behaviour "the same files, started from the squashfs or unpacked" same_files

# kill -9 of ctrun while enroot runs from the squashfs: nothing stays.
# ctrun is started and waited for in the behaviour's own shell.
kill9() {
	local pid i
	"$CTRUN" --runtime enroot --image-mode mount --image mine.sqsh -- \
		sh -c "echo up; exec sleep 3005$$" > k.out 2>&1 &
	pid=$!
	wait_lines k.out 1 30 || fail "the container did not start: $(cat k.out)"
	fuse_of_test > /dev/null || fail "no squashfuse while the container runs from the squashfs"
	kill -9 "$pid"
	wait "$pid" 2>/dev/null || true
	for ((i = 0; i < 100; i++)); do pgrep -f "sleep 3005$$" > /dev/null || break; sleep 0.05; done
	! pgrep -f "sleep 3005$$" > /dev/null || fail "the container outlived ctrun"
	no_fuse "after kill -9 of ctrun"
}
behaviour "kill -9 of ctrun while enroot runs from the squashfs: nothing stays" kill9
