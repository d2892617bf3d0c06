#!/bin/bash
# The node cache under races: 8 tasks per node on a cold cache create each
# node's entry exactly once (the others wait and say so), also across two
# concurrent steps; a creator killed with -9 mid-way leaves nothing that looks
# valid and the next run recovers; a replaced image gets a new entry.
. "$(dirname "$0")/lib.sh"
"$CTRUN_REPO/tests/images/build.sh" busybox >/dev/null
bb=$("$CTRUN_REPO/tests/images/build.sh" path busybox-rootfs)
scratch=$CTRUN_CLUSTER_SCRATCH

# A squashfs slow enough to unpack that 8 tasks really overlap: busybox plus
# 160 MB of compressible data (gzip: ~0.5 s to unpack here, 3 s to build).
make_image() { # out marker
	local root=$TMPD/root.$$
	rm -rf "$root"; cp -a "$bb" "$root"
	base64 -w0 /dev/urandom | head -c $((160 << 20)) >"$root/big" || true
	echo "$2" >"$root/marker"
	mksquashfs "$root" "$1.new" -noappend -quiet -no-progress >/dev/null
	mv -f "$1.new" "$1"
	rm -rf "$root"
}
img=$TMPD/race.sqsh
make_image "$img" first

# Creations recorded in each node's cache log (node-local tmpfs).
creations() { # cache-dir node
	"$CLUSTER" exec "$2" sh -c "cat '$1/log' 2>/dev/null | grep -c ' created ' || true"
}

# 1. 8 tasks per node on a cold cache, three times.
cold_cache() {
	waits=0
	for rep in 1 2 3; do
		cache=$scratch/ctim-race-$rep
		run_rc env CTRUN_CACHE_DIR="$cache" srun -N2 --ntasks-per-node=8 \
			"$CTRUN" cache create "$img" >"$TMPD/out.$rep" 2>"$TMPD/err.$rep"
		cat "$TMPD/err.$rep" >&2
		assert_eq 0 "$rc" "rep $rep: 16 racing tasks"
		assert_eq 16 "$(wc -l <"$TMPD/out.$rep")" "rep $rep: rootfs lines"
		assert_eq 1 "$(sort -u "$TMPD/out.$rep" | wc -l)" "rep $rep: one rootfs path for everyone"
		for n in "${NODES[@]}"; do
			assert_eq 1 "$(creations "$cache" "$n")" "rep $rep: creations on $n"
			"$CLUSTER" exec "$n" test -f "$(cat "$TMPD/out.$rep" | head -1)/marker" ||
				fail "rep $rep: no unpacked rootfs on $n"
		done
		w=$(grep -c "^ctrun: waiting for ${CTRUN_CLUSTER_NAME}n[0-9]* cache entry [0-9a-f]\{32\} being created by pid [1-9]" \
			"$TMPD/err.$rep" || true)
		# no task says it more than once, and only waiters say it
		[ "$w" -le 14 ] || fail "rep $rep: $w waiting messages for 14 waiters"
		waits=$((waits + w))
		"$CLUSTER" exec "${NODES[0]}" rm -rf "$cache"; "$CLUSTER" exec "${NODES[1]}" rm -rf "$cache"
	done
	note "waiting messages over 3 reps: $waits"
	[ "$waits" -ge 1 ] || fail "no task ever waited: the race did not happen"
}
behaviour "8 tasks per node on a cold cache: one creation per node, three times; the others wait and say so" cold_cache

# 2. Two steps at once (two jobs, 4 tasks per node each) share one creation per node.
two_steps() {
	cache=$scratch/ctim-race-steps
	env CTRUN_CACHE_DIR="$cache" srun -N2 --ntasks-per-node=4 "$CTRUN" cache create "$img" \
		>"$TMPD/s1" 2>/dev/null & p1=$!
	env CTRUN_CACHE_DIR="$cache" srun -N2 --ntasks-per-node=4 "$CTRUN" cache create "$img" \
		>"$TMPD/s2" 2>/dev/null & p2=$!
	wait $p1 || fail "step 1 failed"
	wait $p2 || fail "step 2 failed"
	for n in "${NODES[@]}"; do
		assert_eq 1 "$(creations "$cache" "$n")" "two steps: creations on $n"
	done
	assert_eq 1 "$(sort -u "$TMPD/s1" "$TMPD/s2" | wc -l)" "two steps: one rootfs path"
	"$CLUSTER" exec "${NODES[0]}" rm -rf "$cache"; "$CLUSTER" exec "${NODES[1]}" rm -rf "$cache"
}
behaviour "two concurrent steps share one creation per node" two_steps

# 3. kill -9 of the creator in the middle of unpacking.  A watcher inside the
# node sees the temp appear and kills the pid the creator wrote into its lock
# file 0.1 s later.  If the kill came too late (the entry got published), that
# says nothing about ctrun: try again, up to 3 times.
# (the cache, node and id of this behaviour and the next)
cache=$scratch/ctim-race-kill
n1=${NODES[0]}
id=$("$CTRUN" cache id "$img")
killed_creator() {
	killed=
	for try in 1 2 3; do
		"$CLUSTER" exec "$n1" rm -rf "$cache"
		"$CLUSTER" exec "$n1" sh -c "
			for i in \$(seq 1000); do
				pid=\$(cat '$cache/locks/$id.lock' 2>/dev/null)
				if [ -n \"\$pid\" ] && ls -d '$cache/entries/$id.ctrun-tmp.'* >/dev/null 2>&1; then
					sleep 0.1; kill -9 \$pid; echo \$pid; exit 0
				fi
				sleep 0.01
			done; exit 1" >"$TMPD/watch" & wp=$!
		sleep 0.2 # the watcher is polling
		run_rc env CTRUN_CACHE_DIR="$cache" srun -N1 -w "$n1" -n1 "$CTRUN" cache create "$img" \
			>/dev/null 2>"$TMPD/killed.err"
		wait $wp || fail "the watcher never saw the creator's pid and temp"
		note "try $try: killed creator pid $(cat "$TMPD/watch"), srun exit $rc"
		if "$CLUSTER" exec "$n1" test -e "$cache/entries/$id"; then
			note "try $try: the creator had published before the kill; again"
			continue
		fi
		killed=1
		break
	done
	[ -n "$killed" ] || fail "could not kill a creator mid-way in 3 tries"
	[ "$rc" -ne 0 ] || fail "srun of the killed creator exited 0"
	assert_eq 0 "$(creations "$cache" "$n1")" "creations logged by the killed creator"
	"$CLUSTER" exec "$n1" sh -c "ls -d '$cache/entries/$id.ctrun-tmp.'*" >/dev/null ||
		fail "no stale temp: was the creator really killed mid-way?"
	assert_no_leftovers unsquashfs 5 # the killed creator's unsquashfs died with it
	run_rc env CTRUN_CACHE_DIR="$cache" srun -N1 -w "$n1" -n4 "$CTRUN" cache create "$img" \
		>"$TMPD/recovered" 2>/dev/null
	assert_eq 0 "$rc" "run after kill -9"
	assert_eq 1 "$(creations "$cache" "$n1")" "creations after recovery"
	"$CLUSTER" exec "$n1" sh -c "! ls -d '$cache/entries/'*.ctrun-tmp.* 2>/dev/null" ||
		fail "stale temp not cleaned"
	root=$(sort -u "$TMPD/recovered")
	assert_eq $((160 << 20)) "$("$CLUSTER" exec "$n1" stat -c %s "$root/big")" "size of the recovered big file"
	assert_eq "$(sha256sum <"$bb/bin/busybox")" "$("$CLUSTER" exec "$n1" sh -c "sha256sum < '$root/bin/busybox'")" \
		"busybox in the recovered rootfs"
}
behaviour "a creator killed with -9 mid-way leaves nothing that looks valid; the next run recovers" killed_creator

# 4. The same path with new content is a new entry, never the stale one.
replaced_image() {
	root=$(sort -u "$TMPD/recovered") # the recovered entry of the behaviour before
	make_image "$img" second
	run_rc env CTRUN_CACHE_DIR="$cache" srun -N1 -w "$n1" -n4 "$CTRUN" cache create "$img" \
		>"$TMPD/replaced" 2>/dev/null
	assert_eq 0 "$rc" "run after replacing the image"
	new=$(sort -u "$TMPD/replaced")
	[ "$new" != "$root" ] || fail "replaced image reused the old entry $root"
	assert_eq second "$("$CLUSTER" exec "$n1" cat "$new/marker")" "content of the new entry"
	assert_eq 2 "$(creations "$cache" "$n1")" "creations after replacement"
}
behaviour "a replaced image gets a new entry" replaced_image
"$CLUSTER" exec "$n1" rm -rf "$cache"
