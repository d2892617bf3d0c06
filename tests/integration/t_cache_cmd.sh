#!/bin/bash
# `ctrun cache list|create|remove|gc` on a node: every image format unpacks,
# list shows what is there, gc removes least recently used entries first down
# to the budget and never an entry in use, remove takes an image or an id.
. "$(dirname "$0")/lib.sh"
"$CTRUN_REPO/tests/images/build.sh" busybox >/dev/null
I=$(dirname "$("$CTRUN_REPO/tests/images/build.sh" path busybox.sqsh)")
n1=${NODES[0]}
export CTRUN_CACHE_DIR=$CTRUN_CLUSTER_SCRATCH/ctim-cmd
on() { srun -N1 -w "$n1" -n1 "$@"; } # one task on the first node
x() { "$CLUSTER" exec "$n1" "$@"; }  # look at the node's scratch
trap 'x rm -rf "$CTRUN_CACHE_DIR"; cleanup_tmp' EXIT

# Every format, detected from its bytes, unpacked to the same tree.
formats() {
	declare -A root
	for f in busybox.sqsh busybox.sif busybox-docker.tar busybox-oci.tar; do
		root[$f]=$(on "$CTRUN" cache create "$I/$f")
		x test -x "${root[$f]}/bin/busybox" || fail "$f: no /bin/busybox in ${root[$f]}"
		x test -L "${root[$f]}/mnt/evil" || fail "$f: symlink mnt/evil missing"
		assert_eq "$(sha256sum <"$I/busybox-rootfs/bin/busybox")" \
			"$(x sh -c "sha256sum < '${root[$f]}/bin/busybox'")" "$f: busybox binary"
	done
	# The archives' second layer: a whiteout and an opaque directory.
	for f in busybox-docker.tar busybox-oci.tar; do
		x test -f "${root[$f]}/etc/layer2" || fail "$f: layer 2 not applied"
		x test ! -e "${root[$f]}/etc/deleted-by-layer2" || fail "$f: whiteout not applied"
		assert_eq b "$(x ls "${root[$f]}/opt/old" | tr '\n' ' ' | xargs)" "$f: opaque /opt/old"
	done
	# A directory is used where it is.
	assert_eq "$I/busybox-rootfs" "$(on "$CTRUN" cache create "$I/busybox-rootfs")" "directory image"
}
behaviour "every format unpacks to the same tree, the archives' layers applied; a directory is used where it is" formats

list_entries() {
	on "$CTRUN" cache list >"$TMPD/list"
	cat "$TMPD/list" >&2
	assert_eq 4 "$(grep -c '^[0-9a-f]\{32\} ' "$TMPD/list")" "entries listed"
	for f in busybox.sqsh busybox.sif busybox-docker.tar busybox-oci.tar; do
		grep -q " $I/$f\$" "$TMPD/list" || fail "list does not show $f"
	done
}
behaviour "list shows every entry" list_entries

# The entries' ids, for the behaviours below.
ids=()
for f in busybox.sqsh busybox.sif busybox-docker.tar busybox-oci.tar; do ids+=("$("$CTRUN" cache id "$I/$f")"); done

# LRU: make the four last uses distinct, then use the oldest one again.
lru_gc() {
	age=400
	for id in "${ids[@]}"; do
		x touch -d "@$(($(date +%s) - age))" "$CTRUN_CACHE_DIR/entries/$id/last-use"
		age=$((age - 100))
	done
	on "$CTRUN" cache create "$I/busybox.sqsh" >/dev/null # sqsh: oldest -> newest
	order=$(on "$CTRUN" cache list | grep -o '^[0-9a-f]\{32\}' | tr '\n' ' ')
	assert_eq "${ids[1]} ${ids[2]} ${ids[3]} ${ids[0]} " "$order" "list order (least recently used first)"
	# list measured every entry's disk use into entries/<id>/bytes
	bytes() { x cat "$CTRUN_CACHE_DIR/entries/$1/bytes"; }
	total=0
	for id in "${ids[@]}"; do total=$((total + $(bytes "$id"))); done
	# A budget one byte short of everything removes exactly the least recently used (sif).
	on "$CTRUN" cache gc --budget $((total - 1)) >/dev/null
	x test ! -e "$CTRUN_CACHE_DIR/entries/${ids[1]}" || fail "gc kept the least recently used entry"
	for id in "${ids[0]}" "${ids[2]}" "${ids[3]}"; do
		x test -d "$CTRUN_CACHE_DIR/entries/$id" || fail "gc removed $id, which was used more recently"
	done
}
behaviour "gc removes the least recently used entry first, down to the budget" lru_gc

# An entry in use (a container's ctrun holds its use lock shared) survives gc and remove.
# in_use CMD: runs CMD on the node while a holder has the use lock, taken
# before CMD starts (the holder says so with a file) and let go after.
in_use_survives() {
	printf '#!/bin/sh\nexec 9>>"$1"\nflock -s 9\ntouch "$2"\nexec sleep 60\n' > "$TMPD/holder.sh"
	chmod +x "$TMPD/holder.sh"
	in_use() {
		x sh -c "rm -f '$TMPD/held'
		'$TMPD/holder.sh' '$CTRUN_CACHE_DIR/locks/${ids[0]}.use' '$TMPD/held' & holder=\$!
		i=0; until [ -e '$TMPD/held' ] || [ \$i -ge 1000 ]; do i=\$((i+1)); sleep 0.01; done
		CTRUN_CACHE_DIR='$CTRUN_CACHE_DIR' $1; echo rc=\$?
		kill \$holder; wait \$holder" 2>&1 || true
	}
	in_use "'$CTRUN' cache remove '$I/busybox.sqsh'" >"$TMPD/inuse"
	grep -q "in use" "$TMPD/inuse" || fail "remove of an entry in use: $(cat "$TMPD/inuse")"
	grep -q "rc=125" "$TMPD/inuse" || fail "remove of an entry in use should exit 125: $(cat "$TMPD/inuse")"
	in_use "'$CTRUN' cache gc --budget 0" >"$TMPD/gc0"
	grep -q "rc=0" "$TMPD/gc0" || fail "gc --budget 0 with an entry in use: $(cat "$TMPD/gc0")"
	x test -d "$CTRUN_CACHE_DIR/entries/${ids[0]}" || fail "gc removed an entry in use"
	for id in "${ids[2]}" "${ids[3]}"; do
		x test ! -e "$CTRUN_CACHE_DIR/entries/$id" || fail "gc --budget 0 kept $id"
	done
}
behaviour "an entry in use survives gc and remove" in_use_survives

# remove: by image path, by id; errors for unknown ids and non-ids.
remove_entries() {
	on "$CTRUN" cache remove "$I/busybox.sqsh"
	x test ! -e "$CTRUN_CACHE_DIR/entries/${ids[0]}" || fail "remove by image path"
	id=$(on "$CTRUN" cache create "$I/busybox-oci.tar" >/dev/null; "$CTRUN" cache id "$I/busybox-oci.tar")
	on "$CTRUN" cache remove "$id"
	x test ! -e "$CTRUN_CACHE_DIR/entries/$id" || fail "remove by id"
	run_rc on "$CTRUN" cache remove "$id" 2>"$TMPD/err"
	assert_eq 125 "$rc" "remove of a missing entry"
	run_rc on "$CTRUN" cache remove not-an-id 2>"$TMPD/err"
	assert_eq 2 "$rc" "remove of a non-id"
}
behaviour "remove by image path and by id; errors for unknown ids and non-ids" remove_entries

# gc: the budget from config ([cache] budget via CTRUN_CACHE_BUDGET), none at all is a usage error.
gc_budget() {
	on "$CTRUN" cache create "$I/busybox-docker.tar" >/dev/null
	run_rc on "$CTRUN" cache gc 2>"$TMPD/err"
	assert_eq 2 "$rc" "gc without a budget"
	grep -q "budget" "$TMPD/err" || fail "gc without a budget should say so"
	on env CTRUN_CACHE_BUDGET=1K "$CTRUN" cache gc >/dev/null
	assert_eq 0 "$(on "$CTRUN" cache list | grep -c '^[0-9a-f]\{32\} ' || true)" "entries after gc to 1K"
}
behaviour "gc's budget from config; none at all is a usage error" gc_budget
# A stale temp of a dead creator, and trash of a killed gc, are cleaned by gc.
gc_stale() {
	x mkdir -p "$CTRUN_CACHE_DIR/entries/${ids[0]}.ctrun-tmp.$n1.999999/rootfs" "$CTRUN_CACHE_DIR/trash/x.1"
	on "$CTRUN" cache gc --budget 0 >/dev/null
	x test ! -e "$CTRUN_CACHE_DIR/entries/${ids[0]}.ctrun-tmp.$n1.999999" || fail "gc left a stale temp"
	x test ! -e "$CTRUN_CACHE_DIR/trash/x.1" || fail "gc left trash"
}
behaviour "gc cleans a dead creator's stale temp and a killed gc's trash" gc_stale
# Unknown format: exit 125 and a message naming the file.
unknown_format() {
	echo "not an image" >"$TMPD/junk.sqsh"
	run_rc on "$CTRUN" cache create "$TMPD/junk.sqsh" 2>"$TMPD/err"
	assert_eq 125 "$rc" "unknown image format"
	grep -q "junk.sqsh: unknown format" "$TMPD/err" || fail "message: $(cat "$TMPD/err")"
}
behaviour "an unknown format: exit 125 and a message naming the file" unknown_format

# Progress: shown on a tty (a real pty from script(1)), silent otherwise.
export CTRUN_CACHE_DIR=$TMPD/progress-cache
progress() {
	script -qec "'$CTRUN' cache create '$I/busybox-docker.tar'" /dev/null >"$TMPD/tty.out" </dev/null
	grep -q "unpacking busybox-docker.tar: 100%" "$TMPD/tty.out" || fail "no progress on a tty: $(cat -v "$TMPD/tty.out")"
	script -qec "'$CTRUN' cache create '$I/busybox.sif'" /dev/null >"$TMPD/tty2.out" </dev/null
	grep -q "unpacking .*busybox.sif (sif)" "$TMPD/tty2.out" || fail "no progress for a SIF on a tty: $(cat -v "$TMPD/tty2.out")"
	"$CTRUN" cache create "$I/busybox-oci.tar" >/dev/null 2>"$TMPD/notty.err"
	[ ! -s "$TMPD/notty.err" ] || fail "progress without a tty: $(cat "$TMPD/notty.err")"
	script -qec "'$CTRUN' -q cache create '$I/busybox.sqsh'" /dev/null >"$TMPD/tty3.out" </dev/null
	! grep -q unpacking "$TMPD/tty3.out" || fail "-q still shows progress"
}
behaviour "progress shown on a tty, silent otherwise and with -q" progress

# An unprivileged user unpacks every format into its own cache; the image's
# device node (/dev/null) is skipped, not a failure.
"$CTRUN_REPO/tests/cluster/ensure-user.sh" ctrunuser >/dev/null
user_unpacks() {
	for f in busybox.sqsh busybox.sif busybox-docker.tar busybox-oci.tar; do
		r=$(su ctrunuser -s /bin/bash -c "CTRUN_CACHE_DIR='$TMPD/usercache' SLURM_CONF='$SLURM_CONF' \
			srun -N1 -w '$n1' -n1 '$CTRUN' cache create '$I/$f'") || fail "ctrunuser: create $f"
		assert_eq ctrunuser "$(stat -c %U "$r/bin/busybox")" "ctrunuser: owner of $f's files"
		[ ! -c "$r/dev/null" ] || fail "ctrunuser: a device node was created from $f"
	done
}
behaviour "an unprivileged user unpacks every format into its own cache" user_unpacks

# The node's shared cache ([cache] shared): root fills it, then a user's
# container job runs from that entry and makes no cache of its own; a user
# cannot fill it; an entry others could write is refused, by name.
shared_cache() {
	shared=$TMPD/shared
	mkdir -p "$TMPD/userhome" && chown ctrunuser "$TMPD/userhome"
	r=$(CTRUN_CACHE_SHARED=$shared "$CTRUN" cache create --shared "$I/busybox.sqsh")
	assert_eq "$shared/entries" "$(dirname "$(dirname "$r")")" "where the shared entry is"
	assert_eq 755 "$(stat -c %a "$shared")" "the shared cache's mode"
	as_user() { su ctrunuser -s /bin/bash -c "cd '$TMPD/userhome' && CTRUN_CACHE_SHARED='$shared' \
		CTRUN_CACHE_DIR='$TMPD/userhome/cache' $*"; }
	assert_eq "$r" "$(as_user "'$CTRUN' cache create '$I/busybox.sqsh'")" "a user's rootfs of that image"
	[ ! -e "$TMPD/userhome/cache/entries/$(basename "$(dirname "$r")")" ] ||
		fail "the user unpacked the image again"
	assert_eq "hello from busybox" "$(as_user "'$CTRUN' -q --no-prefix --image '$I/busybox.sqsh' -- \
		sh -c 'echo hello from busybox'")" "a user's container from the shared entry"
	run_rc as_user "'$CTRUN' cache create --shared '$I/busybox.sif'" 2> "$TMPD/shared.err"
	assert_eq 2 "$rc" "a user filling the shared cache"
	grep -q "only root fills the node's shared cache" "$TMPD/shared.err" || fail "message: $(cat "$TMPD/shared.err")"
	chmod 777 "$shared/entries"
	run_rc as_user "'$CTRUN' cache create '$I/busybox.sqsh'" 2> "$TMPD/shared.err"
	assert_eq 125 "$rc" "a shared cache others can write"
	grep -q "$shared/entries: writable by group or others" "$TMPD/shared.err" || fail "message: $(cat "$TMPD/shared.err")"
}
behaviour "the node's shared cache: root fills it, a user runs from it, cannot fill it, a writable one is refused" shared_cache
