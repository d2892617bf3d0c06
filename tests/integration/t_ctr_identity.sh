#!/bin/bash
# Identity and home (issue 24): a user is themselves inside the container,
# root only with --root, for every runtime installed here: runc (oci), crun,
# a real enroot (/opt/enroot) and charliecloud's ch-run; through srun on the
# test cluster, as the unprivileged test user and as root.
#   - as the user: `id -u`, `id -g`, `whoami`, $HOME, $USER are the user's
#     (the name resolves: /etc/passwd has them), a file written to $HOME is
#     the user's inside and outside, and the home's own files are there;
#   - --root: `id -u` is 0, HOME=/root, and a file it creates in the working
#     directory (a bind) is the user's outside;
#   - --no-home: the home's files are not in the container;
#   - `ctrun shell` (no agent) is the same user;
#   - the image's /.singularity.d/env scripts and its entrypoint run as the
#     user (runc, ch-run: the agent sources and runs them);
#   - as root: root stays root (uid 0, whoami root, HOME=/root).
# Singularity 3.4.2 (/opt/singularity) too; its --root (--fakeroot) without
# the user's /etc/subuid range is one line, exit 125.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
need_image BB busybox.sqsh
user=$("$CTRUN_REPO/tests/cluster/ensure-user.sh")
uid=$(id -u "$user")
gid=$(id -g "$user")
home=$(getent passwd "$user" | cut -d: -f6)
[ -d "$home" ] || fail "test user $user has no home directory $home"

# Real enroot and Singularity rows skip alone without /opt's (ctrlib.sh).
runtimes=(oci crun charliecloud enroot singularity)
# Every runtime of tests/deps.sh must be here: runc, crun and ch-run are
# Debian packages; enroot is built by ../shared/tools/build-enroot.sh.
command -v ch-run > /dev/null || fail "no ch-run (tests/deps.sh installs charliecloud-runtime)"

cd "$TMPD"
rt_rows_setup "$user"
# A file of the home that the container shows only when the home is bound.
marker=.ctrun-it-identity-$$
install -o "$user" -g "$gid" -m 644 /dev/null "$home/$marker"
cleanup_identity() {
	rm -f "$home/$marker" "$home"/.ctrun-it-identity-f-*-$$
	# The user's own ~/.profile, as it was (profile_stays_out).
	if [ -e "$TMPD/profile.saved" ]; then
		mv -f "$TMPD/profile.saved" "$home/.profile"
	elif [ -e "$TMPD/profile.none" ]; then
		rm -f "$home/.profile"
	fi
	cleanup_tmp
}
trap cleanup_identity EXIT

# Runs in the container: who it is, and a file written into the home.
cat > u/probe.sh <<'SH'
f=$HOME/$1
echo "uid=$(id -u) gid=$(id -g) name=$(whoami) home=$HOME user=$USER logname=$LOGNAME"
if [ -e "$HOME/$2" ]; then echo "home bound"; else echo "home not bound"; fi
if [ -n "$1" ]; then echo x > "$f" && echo "owner inside=$(stat -c %u "$f")"; fi
SH
# --root: who it is, and a file made in the working directory (a bind).
cat > u/probe_root.sh <<'SH'
echo "uid=$(id -u) home=$HOME user=$USER"
touch "./$1" && echo "owner inside=$(stat -c %u "./$1")"
SH
chmod 644 u/probe.sh u/probe_root.sh

# Singularity 3.4.2 without setuid extracts a squashfs as the user, and a
# user cannot make the image's /dev/null: its image is the same busybox
# without device nodes (gzip: 3.4 reads no other compression).
need_image BBDIR busybox-rootfs
mksquashfs "$BBDIR" u/bb-nodev.sqsh -comp gzip -noappend -quiet -no-progress -e dev/null > /dev/null
chmod 644 u/bb-nodev.sqsh
image_of() { if [ "$1" = singularity ]; then echo "$TMPD/u/bb-nodev.sqsh"; else echo "$BB"; fi; }

user_is_themselves() { # RUNTIME
	local rt=$1 out f=.ctrun-it-identity-f-$1-$$
	out=$(as_user srun -N1 -n1 "$CTRUN" -q --no-prefix --runtime "$rt" --image "$(image_of "$rt")" \
		sh "$TMPD/u/probe.sh" "$f" "$marker")
	echo "$out"
	assert_eq "uid=$uid gid=$gid name=$user home=$home user=$user logname=$user" \
		"$(sed -n 1p <<< "$out")" "identity inside ($rt)"
	assert_eq "home bound" "$(sed -n 2p <<< "$out")" "the home's own file inside ($rt)"
	assert_eq "owner inside=$uid" "$(sed -n 3p <<< "$out")" "owner of the file inside ($rt)"
	assert_eq "$user" "$(stat -c %U "$home/$f")" "owner of the file outside ($rt)"
}

root_option_is_root() { # RUNTIME
	local rt=$1 out f=root-file-$1
	# Singularity 3.x maps --fakeroot without setuid through the user's
	# /etc/subuid range: without one, one line naming the release, exit 125.
	if [ "$rt" = singularity ] && ! grep -q "^$user:" /etc/subuid 2>/dev/null; then
		run_rc as_user srun -N1 -n1 "$CTRUN" -q --no-prefix --root --runtime "$rt" \
			--image "$(image_of "$rt")" true 2> "$TMPD/u/fakeroot.err"
		assert_eq 125 "$rc" "exit of --root under Singularity 3.4.2 without subuid"
		assert_eq 1 "$(grep -c . "$TMPD/u/fakeroot.err")" "one line: $(cat "$TMPD/u/fakeroot.err")"
		grep -q "3.4.2" "$TMPD/u/fakeroot.err" || fail "the line names no release: $(cat "$TMPD/u/fakeroot.err")"
		return 0
	fi
	out=$(as_user srun -N1 -n1 "$CTRUN" -q --no-prefix --root --runtime "$rt" --image "$(image_of "$rt")" \
		sh "$TMPD/u/probe_root.sh" "$f")
	echo "$out"
	assert_eq "uid=0 home=/root user=root" "$(sed -n 1p <<< "$out")" "identity inside ($rt --root)"
	assert_eq "owner inside=0" "$(sed -n 2p <<< "$out")" "owner of the file inside ($rt --root)"
	assert_eq "$user" "$(stat -c %U "$TMPD/u/$f")" "owner of the file outside ($rt --root)"
}

no_home_is_not_bound() { # RUNTIME
	local rt=$1 out
	out=$(as_user srun -N1 -n1 "$CTRUN" -q --no-prefix --no-home --runtime "$rt" --image "$(image_of "$rt")" \
		sh "$TMPD/u/probe.sh" "" "$marker")
	echo "$out"
	assert_eq "home not bound" "$(sed -n 2p <<< "$out")" "the home's own file ($rt --no-home)"
	# HOME still names it, as apptainer's --no-home and enroot without its bind.
	assert_eq "uid=$uid gid=$gid name=$user home=$home user=$user logname=$user" \
		"$(sed -n 1p <<< "$out")" "identity inside ($rt --no-home)"
}

shell_is_the_user() { # RUNTIME
	local rt=$1 out
	out=$(as_user srun -N1 -n1 "$CTRUN" -q shell --runtime "$rt" --image "$(image_of "$rt")" \
		sh "$TMPD/u/probe.sh" "" "$marker")
	echo "$out"
	assert_eq "uid=$uid gid=$gid name=$user home=$home user=$user logname=$user" \
		"$(sed -n 1p <<< "$out")" "identity in ctrun shell ($rt)"
	[ "$rt" != singularity ] || return 0 # --root: root_option_is_root
	out=$(as_user srun -N1 -n1 "$CTRUN" -q shell --root --runtime "$rt" --image "$(image_of "$rt")" \
		sh -c 'echo "uid=$(id -u) home=$HOME"')
	assert_eq "uid=0 home=/root" "$out" "identity in ctrun shell --root ($rt)"
}

root_stays_root() { # RUNTIME
	local rt=$1 out
	out=$(as_root srun -N1 -n1 "$CTRUN" -q --no-prefix --runtime "$rt" --image "$(image_of "$rt")" \
		sh "$TMPD/u/probe.sh" "" "$marker")
	echo "$out"
	assert_eq "uid=0 gid=0 name=root home=/root user=root logname=root" \
		"$(sed -n 1p <<< "$out")" "identity of root's run ($rt)"
}

# The image's /.singularity.d/env scripts and its entrypoint run as the user
# too (the agent switches before it sources them): a directory image with a
# script and an /etc/rc that say who runs them.
cp -a "$BBDIR" img
mkdir -p img/.singularity.d/env
echo 'export SCRIPT_UID=$(id -u)' > img/.singularity.d/env/50-who.sh
printf '%s\n' 'echo "rc uid=$(id -u)"' 'exec "$@"' > img/etc/rc
image_scripts_and_entrypoint_as_user() { # RUNTIME
	local rt=$1 out
	out=$(as_user srun -N1 -n1 "$CTRUN" -q --no-prefix --entrypoint --runtime "$rt" \
		--image "$TMPD/img" sh -c 'echo "script uid=$SCRIPT_UID worker uid=$(id -u)"')
	echo "$out"
	assert_eq "rc uid=$uid;script uid=$uid worker uid=$uid;" "$(tr '\n' ';' <<< "$out")" \
		"who runs the entrypoint, the env scripts and the worker ($rt)"
}

for rt in oci charliecloud; do
	behaviour "$rt: the image's env scripts and entrypoint run as the user" \
		image_scripts_and_entrypoint_as_user "$rt"
done
for rt in "${runtimes[@]}"; do
	behaviour "$rt: a user is themselves inside (id, whoami, HOME, a file in the home)" \
		with_rt "$rt" user_is_themselves
	behaviour "$rt: --root is uid 0, files it makes are the user's outside" \
		with_rt "$rt" root_option_is_root
	behaviour "$rt: --no-home binds no home" with_rt "$rt" no_home_is_not_bound
	behaviour "$rt: ctrun shell is the user too (and root with --root)" \
		with_rt "$rt" shell_is_the_user
	behaviour "$rt: root calling ctrun stays root" with_rt "$rt" root_stays_root
done
# With the home bound, enroot's login shell (its default) would source the
# user's ~/.profile in the container, and a host conda's or pyenv's PATH
# there would come before the image's: ctrun runs enroot without it, so the
# workers' environment is the table's (docs/containers.md).
profile_stays_out() { # RUNTIME
	local rt=$1 out
	if [ ! -e "$TMPD/profile.saved" ] && [ ! -e "$TMPD/profile.none" ]; then
		if [ -e "$home/.profile" ]; then cp -p "$home/.profile" "$TMPD/profile.saved"; else : > "$TMPD/profile.none"; fi
	fi
	printf '%s\n' 'export CTRUN_IT_PROFILE=ran' 'export PATH=/ctrun-it-profile-bin:$PATH' > "$home/.profile"
	chown "$user" "$home/.profile"
	out=$(as_user srun -N1 -n1 "$CTRUN" -q --no-prefix --runtime "$rt" --image "$(image_of "$rt")" \
		sh -c 'echo "profile=${CTRUN_IT_PROFILE:-no} path=$PATH"')
	echo "$out"
	case $out in
	"profile=no path="*) ;;
	*) fail "the user's ~/.profile reached the worker ($rt): $out" ;;
	esac
	case $out in *ctrun-it-profile-bin*) fail "the user's ~/.profile set the worker's PATH ($rt): $out" ;; esac
}
for rt in oci enroot; do
	behaviour "$rt: the user's ~/.profile does not reach the workers" with_rt "$rt" profile_stays_out
done

# --root --writable: `apt-get install` of a local package works for a user
# (a one-uid user namespace: apt is told to stay root, as enroot's
# 10-aptfix.sh does), and the installed program runs.
need_image TORCH torch.sqsh
mkdir -p deb/pkg/DEBIAN deb/pkg/usr/bin
printf '%s\n' 'Package: ctrun-it-probe' 'Version: 1.0' 'Architecture: all' \
	'Maintainer: ctrun tests <root@localhost>' 'Description: a probe' > deb/pkg/DEBIAN/control
printf '#!/bin/sh\necho apt-probe-ok\n' > deb/pkg/usr/bin/ctrun-it-probe
chmod 755 deb/pkg/usr/bin/ctrun-it-probe
dpkg-deb --build --root-owner-group deb/pkg u/probe.deb > /dev/null
chmod 644 u/probe.deb
apt_install_as_root() { # RUNTIME
	local rt=$1 out
	out=$(as_user srun -N1 -n1 "$CTRUN" -q --no-prefix --root --writable --runtime "$rt" \
		--image "$TORCH" sh -c 'apt-get install -y ./probe.deb > /dev/null 2> /tmp/ctrun-it-apt.$$;
			grep "^E:" /tmp/ctrun-it-apt.$$; rm -f /tmp/ctrun-it-apt.$$; ctrun-it-probe')
	echo "$out"
	assert_eq "apt-probe-ok" "$out" "apt-get install under --root --writable as $user ($rt)"
}
for rt in oci crun charliecloud enroot; do
	behaviour "$rt: --root --writable: apt-get install works for a user" with_rt "$rt" apt_install_as_root
done
behaviour "no container left" assert_no_containers
