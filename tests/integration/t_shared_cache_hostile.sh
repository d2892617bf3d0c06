#!/bin/bash
# The node's shared cache against another local user (issue 19, points 1-3),
# on a node of the cluster: ctrunevil is the attacker, ctrunuser and root
# the victims.
#  - An image whose files belong to the attacker's uid (most real images have
#    such trees: /home/ubuntu, conda) gives the attacker nothing in the
#    shared entry: every inode there is root's and nothing is writable.
#  - The attacker holding an entry's use lock exclusively (flock works on
#    the 0644 file's read-only descriptor) stalls no one: the victims' runs
#    go on from their own caches, saying who holds the lock; root's remove
#    says who holds it too.
#  - A root run's host binds (/tmp here, which the machine mounts without
#    nosuid) are nosuid,nodev in the container.
. "$(dirname "$0")/lib.sh"
I=$(dirname "$("$CTRUN_REPO/tests/images/build.sh" path busybox.sqsh)")
n1=${NODES[0]}
"$CTRUN_REPO/tests/cluster/ensure-user.sh" ctrunuser >/dev/null
evil=$("$CTRUN_REPO/tests/cluster/ensure-user.sh" ctrunevil)
evil_uid=$(id -u "$evil")
shared=$TMPD/shared
stop_attacker() {
	pkill -KILL -u "$evil" 2>/dev/null || true
	"$CLUSTER" exec "$n1" pkill -KILL -u "$evil" 2>/dev/null || true
}
trap 'stop_attacker; cleanup_tmp' EXIT
on() { srun -N1 -w "$n1" -n1 "$@"; }

# An image every file of which the attacker's uid owns.
mksquashfs "$I/busybox-rootfs" "$TMPD/owned.sqsh" -force-uid "$evil_uid" -force-gid "$evil_uid" \
	-noappend -quiet -no-progress >/dev/null
chmod 644 "$TMPD/owned.sqsh"
unsquashfs -lln "$TMPD/owned.sqsh" >"$TMPD/owned.list" # not piped: grep -q would SIGPIPE it
grep -q " $evil_uid/$evil_uid " "$TMPD/owned.list" ||
	fail "the test image's files are not the attacker's"
r=$(CTRUN_CACHE_SHARED=$shared on "$CTRUN" cache create --shared "$TMPD/owned.sqsh")
id=$(basename "$(dirname "$r")")

# 1. Nothing in the entry is the attacker's, or writable by anyone but root.
entry_is_roots() {
	find "$shared" ! -uid 0 -o ! -gid 0 -o -perm /022 ! -type l >"$TMPD/unfit"
	[ ! -s "$TMPD/unfit" ] ||
		fail "not root's or writable by others in the shared entry: $(head -3 "$TMPD/unfit")"
	run_rc su "$evil" -s /bin/sh -c "echo pwned >> '$r/bin/busybox'" 2>/dev/null
	[ "$rc" -ne 0 ] || fail "the attacker rewrote /bin/busybox of the shared entry"
	run_rc su "$evil" -s /bin/sh -c "touch '$r/bin/planted'" 2>/dev/null
	[ "$rc" -ne 0 ] && [ ! -e "$r/bin/planted" ] || fail "the attacker added a file to the shared entry"
	# ... and root calls it valid when asked again.
	CTRUN_CACHE_SHARED=$shared on "$CTRUN" cache create --shared "$TMPD/owned.sqsh" >/dev/null ||
		fail "root's second create --shared refused its own entry"
}
behaviour "an image of the attacker's files: nothing in the shared entry is theirs or writable" entry_is_roots

# 2. The attacker takes the entry's use lock, exclusively, and keeps it.
# On the node, as the victims' runs are (its PID namespace shows them the holder).
# Started, stopped and waited for at the top level (a behaviour's subshell
# cannot wait for it); the victims' runs are behaviours.
"$CLUSTER" exec "$n1" su "$evil" -s /bin/sh -c \
	"exec flock -x '$shared/locks/$id.use' -c 'touch $TMPD/held; exec sleep 600'" &
for ((i = 0; i < 600; i++)); do [ -e "$TMPD/held" ] && break; sleep 0.05; done
[ -e "$TMPD/held" ] || fail "the attacker did not get the lock"
mkdir -p "$TMPD/home" && chown ctrunuser "$TMPD/home"
# A user's run (timeout: the guard against the old wait for ever, not a timing).
user_run() {
	run_rc timeout 120 su ctrunuser -s /bin/bash -c "cd '$TMPD/home' && SLURM_CONF='$SLURM_CONF' \
		CTRUN_CACHE_SHARED='$shared' CTRUN_CACHE_DIR='$TMPD/home/cache' srun -N1 -w '$n1' -n1 \
		'$CTRUN' --no-prefix --image '$TMPD/owned.sqsh' --image-mode unpack -- echo ran" \
		>"$TMPD/user.out" 2>"$TMPD/user.err"
	assert_eq 0 "$rc" "a user's run while another user holds the shared entry's lock ($(cat "$TMPD/user.err"))"
	assert_eq ran "$(cat "$TMPD/user.out")" "the user's container"
	grep -q "locked by pid [0-9]* (uid $evil_uid)" "$TMPD/user.err" ||
		fail "the run does not say who holds the lock: $(cat "$TMPD/user.err")"
}
behaviour "the attacker holds the lock: a user's run goes on from its own cache, naming the holder" user_run
# Root's run, the same.
root_run() {
	run_rc timeout 120 env CTRUN_CACHE_SHARED="$shared" CTRUN_CACHE_DIR="$TMPD/rootcache" \
		srun -N1 -w "$n1" -n1 "$CTRUN" -q --no-prefix --image "$TMPD/owned.sqsh" --image-mode unpack \
		-- echo ran >"$TMPD/root.out"
	assert_eq 0 "$rc" "root's run while a user holds the shared entry's lock"
}
behaviour "the attacker holds the lock: root's run goes on" root_run
# root's remove names the holder, and does not wait for it.
root_remove() {
	run_rc timeout 60 env CTRUN_CACHE_SHARED="$shared" "$CTRUN" cache remove --shared "$TMPD/owned.sqsh" \
		2>"$TMPD/rm.err"
	assert_eq 125 "$rc" "remove of an entry whose lock a user holds"
	grep -q "(uid $evil_uid) holds its use lock" "$TMPD/rm.err" || fail "remove: $(cat "$TMPD/rm.err")"
}
behaviour "the attacker holds the lock: root's remove names the holder and does not wait" root_remove
stop_attacker
wait || true

# 3. A root run's host binds are nosuid,nodev (the machine's /tmp is not).
host_binds() {
	local opts
	opts=$(on "$CTRUN" -q --no-prefix --image "$I/busybox.sqsh" -- awk '$2 == "/tmp" { print $4 }' \
		/proc/self/mounts)
	case ",$opts," in *,nosuid,*) ;; *) fail "/tmp in a root container: $opts (no nosuid)" ;; esac
	case ",$opts," in *,nodev,*) ;; *) fail "/tmp in a root container: $opts (no nodev)" ;; esac
}
behaviour "a root run's host binds are nosuid,nodev" host_binds
