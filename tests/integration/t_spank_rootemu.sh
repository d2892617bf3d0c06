#!/bin/bash
# tag: every-slurm
# Root emulation through the SPANK plugin (core/rootemu.h), as pyxis's
# remap_root.bats checks it: every task of an unprivileged user's step runs
# under a seccomp filter ("Seccomp: 2"), with and without
# --container-remap-root, and the entrypoint too.  Under it chown and the
# set*id calls succeed and change nothing, so a tool that drops privileges
# as the mapped root goes on where it failed ("su: can't set groups", a
# chown to an id the namespace does not map: EINVAL), as under enroot.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
. "$(dirname "$0")/spanklib.sh"
need_image BB busybox.sqsh
need_image BBDIR busybox-rootfs
spank_cluster_up
cd "$TMPD"
chmod 777 "$TMPD"
uid=$(id -u "$SPANK_USER")
# An image whose entrypoint (enroot's /etc/rc) says what filter it runs under.
cp -a "$BBDIR" img
printf 'grep "^Seccomp:" /proc/self/status | sed "s/^/entrypoint /"\nexec "$@"\n' > img/etc/rc
mksquashfs img ep.sqsh -noappend -quiet -no-progress > /dev/null
chmod 644 ep.sqsh
run() { as_user srun -N1 --container-image="$BB" "$@"; }

# What a task sees: its filter, a chown to an unmapped id, the file's owner
# after it, and busybox su dropping to nobody (setgroups, setgid, setuid).
probe='grep "^Seccomp:" /proc/self/status | tr -d "\t"
f=$(mktemp -p "${DIR:-/tmp}")
chown 42:42 "$f" && echo chown=ok
echo owner=$(stat -c %u "$f") me=$(id -u)
su -s /bin/sh nobody -c "echo su=\$(id -u)"
rm -f "$f"'

remapped() {
	assert_eq "Seccomp:2;chown=ok;owner=0 me=0;su=0;" \
		"$(run --container-remap-root --container-writable env DIR=/ sh -c "$probe" | tr '\n' ';')" \
		"the filter, chown and su as the mapped root (the file stays root's, su stays root)"
	assert_eq "Seccomp:2;chown=ok;owner=0 me=0;su=0;" \
		"$(run --container-remap-root sh -c "$probe" | tr '\n' ';')" "the same in a read-only container (/tmp)"
}
behaviour "--container-remap-root: chown and set*id succeed and change nothing" remapped

as_self() {
	# (busybox su itself refuses a caller that is not root.)
	assert_eq "Seccomp:2;chown=ok;owner=$uid me=$uid;" \
		"$(run --no-container-remap-root sh -c "$probe" 2> /dev/null | tr '\n' ';')" \
		"the filter and chown as the user"
}
behaviour "--no-container-remap-root: the same filter" as_self

tasks() {
	local out
	out=$(as_user srun -N2 --ntasks-per-node=2 --container-image="$BB" \
		sh -c 'grep "^Seccomp:" /proc/self/status | tr -d "\t"')
	assert_eq "4 Seccomp:2" "$(sort <<<"$out" | uniq -c | awk '{print $1, $2}')" \
		"the filter in each of 2 nodes x 2 tasks"
}
behaviour "every task of a 2 x 2 step" tasks

entrypoint() {
	as_user srun -N1 --container-image="$TMPD/ep.sqsh" --container-entrypoint \
		--container-entrypoint-log true > out 2> err || fail "srun: $(cat err)"
	grep -q "^entrypoint Seccomp:.2$" out err || fail "the entrypoint's filter: $(cat out err)"
}
behaviour "the entrypoint runs under it" entrypoint
