#!/bin/bash
# Images without the pseudo file systems (issue 33, point 1): a squashfs made
# with `mksquashfs ROOT IMG -e proc sys dev` (the usual way to leave them out
# of an image), and one like a `FROM scratch` image that has no /dev, /proc,
# /sys, /tmp or /etc at all (so no /etc/passwd or /etc/group), run under every
# runtime installed here: runc (oci), crun, charliecloud's ch-run, a real
# enroot (/opt/enroot) and Singularity 3.4.2 (/opt/singularity); through srun
# on both nodes, as root and as the unprivileged test user.  In each the
# command writes to /dev/null and /tmp, reads /proc and /sys, and runs as who
# it should.  The same trees as directory images, under the runtimes that run
# a directory, are unchanged afterwards: the mount points are made in ctrun's
# own layer, never in the image.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
need_image BBDIR busybox-rootfs
user=$("$CTRUN_REPO/tests/cluster/ensure-user.sh")
uid=$(id -u "$user")
command -v ch-run > /dev/null || fail "no ch-run (tests/deps.sh installs charliecloud-runtime)"

cd "$TMPD"
rt_rows_setup "$user" # real enroot and Singularity rows skip alone without /opt's
# nodev: busybox as `mksquashfs root img.sqsh -e proc sys dev` leaves it;
# scratch: nothing but the programs (no /dev /proc /sys /tmp /etc).  gzip:
# Singularity 3.4 reads no other compression.
cp -a "$BBDIR" nodev
rm -rf nodev/dev nodev/proc nodev/sys
cp -a nodev scratch
rm -rf scratch/tmp scratch/etc
[ ! -e scratch/etc ] && [ ! -e nodev/dev ] || fail "the images still have what they must lack"
mksquashfs "$BBDIR" u/nodev.sqsh -comp gzip -noappend -quiet -no-progress -e proc sys dev > /dev/null
mksquashfs scratch u/scratch.sqsh -comp gzip -noappend -quiet -no-progress > /dev/null
chmod 644 u/nodev.sqsh u/scratch.sqsh
unsquashfs -l u/nodev.sqsh > u/nodev.list
! grep -qE '^squashfs-root/(dev|proc|sys)$' u/nodev.list || fail "mksquashfs -e kept /dev, /proc or /sys"
# What the directory images hold before any run (compared after them).
find nodev scratch | sort > before.list

# What each worker checks: /dev/null and a file of its own in /tmp written,
# /proc and /sys there; then its uid.
probe='echo x > /dev/null && test -r /proc/self/status && test -d /sys/class &&
f=/tmp/ctrun-it-bare.$RANK.$$ && echo y > "$f" && rm "$f" && echo "ok uid=$(id -u)"'

runs_bare() { # RUNTIME IMAGE WHO(root|user)
	local rt=$1 img=$2 who=$3 out want
	if [ "$who" = root ]; then want=0; else want=$uid; fi
	out=$("as_$who" srun -N2 -n2 --ntasks-per-node=1 "$CTRUN" -q --no-prefix --runtime "$rt" \
		--image "$img" sh -c "$probe")
	echo "$out"
	assert_eq "ok uid=$want;ok uid=$want;" "$(tr '\n' ';' <<< "$out")" \
		"both workers under $rt from $(basename "$img") as $who"
}

for rt in oci crun charliecloud enroot singularity; do
	for img in nodev scratch; do
		for who in root user; do
			behaviour "$rt: $img.sqsh (no /dev, /proc, /sys$([ $img = scratch ] && echo ", /tmp, /etc")) runs on both nodes as $who" \
				with_rt "$rt" runs_bare "$TMPD/u/$img.sqsh" "$who"
		done
	done
done

# Directory images (root's, as an admin's tree is): enroot and Singularity
# run only files here.
for rt in oci crun charliecloud; do
	for img in nodev scratch; do
		for who in root user; do
			behaviour "$rt: the $img directory runs on both nodes as $who" \
				runs_bare "$rt" "$TMPD/$img" "$who"
		done
	done
done
images_unchanged() {
	find nodev scratch | sort > after.list
	diff before.list after.list || fail "the directory images changed (above: what the runs added)"
}
behaviour "the directory images are as they were: no mount point was made in them" images_unchanged
behaviour "no container left" assert_no_containers
