#!/bin/bash
# Mounts into images: a destination through an image symlink pointing out
# (/mnt/evil -> /etc, /mnt/evil-rel -> ../../../../etc) lands inside the
# container, never on the host; sources and destinations with spaces, '$'
# and quotes arrive intact -- as root and as an unprivileged user (rootless),
# from a rootfs directory and a squashfs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
need_image ROOTFS busybox-rootfs
need_image BUSYBOX busybox.sqsh
user=$("$CTRUN_REPO/tests/cluster/ensure-user.sh")
marker=ctrun-escape-$$
cleanup() { rm -rf "/etc/$marker" "/etc/$marker-rel"; cleanup_tmp; }
trap cleanup EXIT
src="$TMPD/src dir \$HOME 'q'"
mkdir -p "$src"
chmod -R 777 "$TMPD"

check() { # who image
	local who=$1 img=$2 run=()
	[ "$who" = root ] || run=(su "$user" -s /bin/bash -c '"$0" "$@"' --)
	rm -f "$src"/*
	run_rc "${run[@]}" srun -N1 -w "${NODES[0]}" "$CTRUN" --image "$img" \
		--mount "$src:/mnt/evil/$marker" --mount "$src:/mnt/evil-rel/$marker-rel" \
		--mount "$src:/data/in side \$x 'y'" -- \
		sh -c "echo a > /mnt/evil/$marker/a && echo b > /mnt/evil-rel/$marker-rel/b &&
		       echo c > \"/data/in side \\\$x 'y'/c\" && ls /etc/$marker /etc/$marker-rel >/dev/null"
	assert_eq 0 "$rc" "$who, $img: the worker writes through the mounts"
	for f in a b c; do
		[ -f "$src/$f" ] || fail "$who, $img: $f did not reach the mounted source"
	done
	for n in "${NODES[@]}"; do
		"$CLUSTER" exec "$n" test ! -e "/etc/$marker" -a ! -e "/etc/$marker-rel" ||
			fail "$who, $img: a mount point was created in the host's /etc"
	done
	[ ! -e "/etc/$marker" ] && [ ! -e "/etc/$marker-rel" ] || fail "$who: host /etc touched"
}
# Mounting over the image's symlink itself covers the container's /etc, not the host's.
over_symlink() {
	run_rc srun -N1 "$CTRUN" --image "$BUSYBOX" --mount "$src:/mnt/evil" -- sh -c 'touch /etc/x-from-container'
	assert_eq 0 "$rc" "a bind over /mnt/evil"
	[ -f "$src/x-from-container" ] || fail "the bind over /mnt/evil did not land on the image's /etc"
	[ ! -e /etc/x-from-container ] || fail "host /etc written"
}

behaviour "root, rootfs directory: mounts stay in the container, odd paths intact" check root "$ROOTFS"
behaviour "root, squashfs: mounts stay in the container, odd paths intact" check root "$BUSYBOX"
behaviour "$user (rootless), squashfs: mounts stay in the container, odd paths intact" check "$user" "$BUSYBOX"
behaviour "a bind over the image's symlink covers the container's /etc" over_symlink
behaviour "no container is left" assert_no_containers
