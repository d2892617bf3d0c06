#!/bin/bash
# pyxis's tmpfs: and umount: mount entries as ctrun's own --mount forms,
# for every runtime installed here, through srun as the unprivileged test
# user:
#   - --mount tmpfs:/mytmpfs is a tmpfs at /mytmpfs (its file system type in
#     the container's mount table), and its options (huge=within_size,
#     size=) are the mount's (runc, crun, a real enroot);
#   - --mount umount:$HOME removes the home ctrun (runc, crun) or enroot's
#     hook (enroot) put there: no mount at the home, its files not there;
#   - ch-run and Singularity 3.4.2 cannot mount a tmpfs: one line naming
#     the runtime, exit 2, nothing run.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
need_image BB busybox.sqsh
user=$("$CTRUN_REPO/tests/cluster/ensure-user.sh")
home=$(getent passwd "$user" | cut -d: -f6)
[ -d "$home" ] || fail "test user $user has no home directory $home"
cd "$TMPD"
rt_rows_setup "$user"
trap cleanup_tmp EXIT
# The field of the container's mount table for a mount point (fstype,
# options), "none" when nothing is mounted there.
cat > u/mnt.sh <<'SH'
awk -v d="$1" -v f="$2" '$2 == d { v = $f } END { print (v == "" ? "none" : v) }' /proc/self/mounts
SH
chmod 644 u/mnt.sh

ctr() { # RUNTIME ctrun-options... -- command...
	local rt=$1
	shift
	as_user srun -N1 -n1 "$CTRUN" -q --no-prefix --runtime "$rt" --image "$BB" "$@"
}

tmpfs_is_a_tmpfs() { # RUNTIME
	local rt=$1 opts
	assert_eq tmpfs "$(ctr "$rt" --mount tmpfs:/mytmpfs -- sh "$TMPD/u/mnt.sh" /mytmpfs 3)" \
		"the file system at /mytmpfs ($rt)"
	opts=$(ctr "$rt" --mount tmpfs:/mytmpfs:huge=within_size,size=8m -- sh "$TMPD/u/mnt.sh" /mytmpfs 4)
	echo "$rt: $opts"
	case ",$opts," in *,huge=within_size,*) ;; *) fail "huge=within_size not in /mytmpfs's options ($rt): $opts" ;; esac
	case ",$opts," in *,size=8192k,*) ;; *) fail "size=8m not in /mytmpfs's options ($rt): $opts" ;; esac
	# Written by the user, gone with the container.
	ctr "$rt" --mount tmpfs:/mytmpfs -- sh -c 'echo x > /mytmpfs/f && test -s /mytmpfs/f'
}

umount_removes_the_home() { # RUNTIME
	local rt=$1
	[ "$(ctr "$rt" -- sh "$TMPD/u/mnt.sh" "$home" 3)" != none ] || fail "no home mounted by default ($rt)"
	assert_eq none "$(ctr "$rt" --mount "umount:$home" -- sh "$TMPD/u/mnt.sh" "$home" 3)" \
		"a mount at the home after umount:$home ($rt)"
}

tmpfs_refused() { # RUNTIME name-in-the-line
	local rt=$1 name=$2
	run_rc ctr "$rt" --mount tmpfs:/mytmpfs -- touch "$TMPD/u/ran-$rt" 2> "$TMPD/u/err-$rt"
	assert_eq 2 "$rc" "exit of tmpfs: under $rt"
	# srun adds its own "task 0: Exited with exit code 2".
	assert_eq 1 "$(grep -vc '^srun: ' "$TMPD/u/err-$rt")" "one line: $(cat "$TMPD/u/err-$rt")"
	grep -q "$name cannot mount a tmpfs" "$TMPD/u/err-$rt" || fail "the line names no runtime: $(cat "$TMPD/u/err-$rt")"
	[ ! -e "$TMPD/u/ran-$rt" ] || fail "the command ran under $rt"
}

for rt in oci crun enroot; do
	behaviour "$rt: --mount tmpfs:/mytmpfs[:huge=within_size,size=8m] is a tmpfs with those options" \
		with_rt "$rt" tmpfs_is_a_tmpfs
	behaviour "$rt: --mount umount:HOME leaves no mount at the home" with_rt "$rt" umount_removes_the_home
done
behaviour "charliecloud: tmpfs: is one line naming ch-run, exit 2" \
	with_rt charliecloud tmpfs_refused ch-run
behaviour "singularity: tmpfs: is one line naming singularity, exit 2" \
	with_rt singularity tmpfs_refused singularity
