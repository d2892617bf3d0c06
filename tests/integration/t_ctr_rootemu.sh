#!/bin/bash
# Root emulation for `ctrun --image` (core/rootemu.h): where the container
# runs in a user namespace (an unprivileged user's runc, crun and enroot
# containers), its processes run under a seccomp filter that makes chown
# and the set*id calls succeed without changing anything, as enroot does
# for its own containers: a package whose files belong to an id the
# namespace does not map installs (dpkg chowns them), and a tool that drops
# privileges as the mapped root goes on.  Through srun on the test
# cluster, as the unprivileged test user, for every runtime installed here.
# Every runtime here starts the agent with no_new_privs set (ctrun's OCI
# config asks for it; ch-run and Singularity set it), so the filter needs
# no capability there; enroot has its own filter, and passes before too.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
need_image BB busybox.sqsh
need_image BBDIR busybox-rootfs
user=$("$CTRUN_REPO/tests/cluster/ensure-user.sh")
uid=$(id -u "$user")
cd "$TMPD"
rt_rows_setup "$user"
# Singularity 3.4.2 without setuid: no device nodes, gzip (t_ctr_identity).
mksquashfs "$BBDIR" u/bb-nodev.sqsh -comp gzip -noappend -quiet -no-progress -e dev/null > /dev/null
chmod 644 u/bb-nodev.sqsh
image_of() { if [ "$1" = singularity ]; then echo "$TMPD/u/bb-nodev.sqsh"; else echo "$BB"; fi; }

# What the worker sees: its filter, a chown of its own file to an id the
# namespace does not map, the file's owner after it, and (as root) busybox
# su dropping to nobody (setgroups, setgid, setuid).
cat > u/probe.sh <<'SH'
grep "^Seccomp:" /proc/self/status | tr -d "\t"
f=$(mktemp -p .)
chown 42:42 "$f" 2> /dev/null && echo chown=ok || echo chown=refused
echo "owner=$(stat -c %u "$f") me=$(id -u)"
[ "$(id -u)" != 0 ] || su -s /bin/sh nobody -c 'echo su=$(id -u)' 2>&1 | sed 's/^su: .*/su=refused/'
rm -f "$f"
SH
chmod 644 u/probe.sh

probe() { # RUNTIME [CTRUN OPTION...]
	local rt=$1
	shift
	as_user srun -N1 -n1 "$CTRUN" -q --no-prefix --runtime "$rt" "$@" --image "$(image_of "$rt")" \
		sh "$TMPD/u/probe.sh" | tr '\n' ';'
}

emulated_as_user() { # RUNTIME
	assert_eq "Seccomp:2;chown=ok;owner=$uid me=$uid;" "$(probe "$1")" "as the user ($1)"
}
emulated_as_root() { # RUNTIME
	assert_eq "Seccomp:2;chown=ok;owner=0 me=0;su=0;" "$(probe "$1" --root)" "--root ($1)"
}
for rt in oci crun enroot; do
	behaviour "$rt: chown and set*id succeed and change nothing, as the user" with_rt "$rt" emulated_as_user
	behaviour "$rt: the same with --root (su drops to nobody and stays root)" with_rt "$rt" emulated_as_root
done
for rt in charliecloud singularity; do
	behaviour "$rt: chown and set*id succeed and change nothing, as the user" with_rt "$rt" emulated_as_user
done

shell() {
	assert_eq "Seccomp:2;" "$(as_user srun -N1 -n1 "$CTRUN" -q shell --runtime oci --image "$BB" \
		sh -c 'grep "^Seccomp:" /proc/self/status | tr -d "\t"' | tr '\n' ';')" "ctrun shell"
	assert_eq "Seccomp:2;" "$(as_user srun -N1 -n1 "$CTRUN" -q shell --root --runtime oci --image "$BB" \
		sh -c 'grep "^Seccomp:" /proc/self/status | tr -d "\t"' | tr '\n' ';')" "ctrun shell --root"
}
behaviour "oci: ctrun shell runs under it too" shell

# A package whose program belongs to uid 42 (as apt's own files are
# _apt's): dpkg chowns it as it unpacks, which a one-uid user namespace
# refuses without the filter ("error setting ownership ... Invalid
# argument").
need_image TORCH torch.sqsh
mkdir -p deb/pkg/DEBIAN deb/pkg/usr/bin
printf '%s\n' 'Package: ctrun-it-owned' 'Version: 1.0' 'Architecture: all' \
	'Maintainer: ctrun tests <root@localhost>' 'Description: a probe' > deb/pkg/DEBIAN/control
printf '#!/bin/sh\necho owned-probe-ok\n' > deb/pkg/usr/bin/ctrun-it-owned
chmod 755 deb/pkg/usr/bin/ctrun-it-owned
chown -R 0:0 deb/pkg
chown 42:42 deb/pkg/usr/bin/ctrun-it-owned
dpkg-deb --build deb/pkg u/owned.deb > /dev/null
chmod 644 u/owned.deb
apt_install_owned() { # RUNTIME
	local rt=$1 out
	out=$(as_user srun -N1 -n1 "$CTRUN" -q --no-prefix --root --writable --runtime "$rt" \
		--image "$TORCH" sh -c 'apt-get install -y ./owned.deb > apt.log.$$ 2>&1 || grep "^dpkg: error\|^ \|^E:" apt.log.$$;
			rm -f apt.log.$$; ctrun-it-owned')
	echo "$out"
	assert_eq "owned-probe-ok" "$out" "apt-get install of a package with a file of uid 42 ($rt)"
}
for rt in oci crun charliecloud enroot; do
	behaviour "$rt: --root --writable: a package with files of another id installs" with_rt "$rt" apt_install_owned
done
behaviour "no container left" assert_no_containers
