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
# Singularity: test_apptainer.c checks --fakeroot and --no-home against the
# release's rules; /opt/singularity has no real one on a fresh machine.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
need_image BB busybox.sqsh
user=$("$CTRUN_REPO/tests/cluster/ensure-user.sh")
uid=$(id -u "$user")
gid=$(id -g "$user")
home=$(getent passwd "$user" | cut -d: -f6)
[ -d "$home" ] || fail "test user $user has no home directory $home"

runtimes=(oci crun)
command -v ch-run > /dev/null && runtimes+=(charliecloud)
[ -x /opt/enroot/bin/enroot ] && runtimes+=(enroot)
# Every runtime of tests/deps.sh must be here: runc, crun and ch-run are
# Debian packages; enroot is built by ../shared/tools/build-enroot.sh.
command -v ch-run > /dev/null || fail "no ch-run (tests/deps.sh installs charliecloud-runtime)"

cd "$TMPD"
mkdir -p u && chmod 777 u
# A file of the home that the container shows only when the home is bound.
marker=.ctrun-it-identity-$$
install -o "$user" -g "$gid" -m 644 /dev/null "$home/$marker"
cleanup_identity() {
	rm -f "$home/$marker" "$home"/.ctrun-it-identity-f-*-$$
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

# enroot: the nodes' GPUs are fakes (its NVIDIA hook would want
# nvidia-container-cli); its runtime directory per user.
ENV_COMMON="PATH=/opt/enroot/bin:$PATH CTRUN_NV=false"
as_user() { # CMD... in $TMPD/u, as the test user
	su "$user" -s /bin/bash -c "cd '$TMPD/u' && export SLURM_CONF='$SLURM_CONF' $ENV_COMMON \
		ENROOT_RUNTIME_PATH='$TMPD/u/enroot-run-user' && $(printf '%q ' "$@")"
}
as_root() {
	(cd "$TMPD/u" && env $ENV_COMMON ENROOT_RUNTIME_PATH="$TMPD/u/enroot-run-root" "$@")
}

user_is_themselves() { # RUNTIME
	local rt=$1 out f=.ctrun-it-identity-f-$1-$$
	out=$(as_user srun -N1 -n1 "$CTRUN" -q --no-prefix --runtime "$rt" --image "$BB" \
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
	out=$(as_user srun -N1 -n1 "$CTRUN" -q --no-prefix --root --runtime "$rt" --image "$BB" \
		sh "$TMPD/u/probe_root.sh" "$f")
	echo "$out"
	assert_eq "uid=0 home=/root user=root" "$(sed -n 1p <<< "$out")" "identity inside ($rt --root)"
	assert_eq "owner inside=0" "$(sed -n 2p <<< "$out")" "owner of the file inside ($rt --root)"
	assert_eq "$user" "$(stat -c %U "$TMPD/u/$f")" "owner of the file outside ($rt --root)"
}

no_home_is_not_bound() { # RUNTIME
	local rt=$1 out
	out=$(as_user srun -N1 -n1 "$CTRUN" -q --no-prefix --no-home --runtime "$rt" --image "$BB" \
		sh "$TMPD/u/probe.sh" "" "$marker")
	echo "$out"
	assert_eq "home not bound" "$(sed -n 2p <<< "$out")" "the home's own file ($rt --no-home)"
	# HOME still names it, as apptainer's --no-home and enroot without its bind.
	assert_eq "uid=$uid gid=$gid name=$user home=$home user=$user logname=$user" \
		"$(sed -n 1p <<< "$out")" "identity inside ($rt --no-home)"
}

shell_is_the_user() { # RUNTIME
	local rt=$1 out
	out=$(as_user srun -N1 -n1 "$CTRUN" -q shell --runtime "$rt" --image "$BB" \
		sh "$TMPD/u/probe.sh" "" "$marker")
	echo "$out"
	assert_eq "uid=$uid gid=$gid name=$user home=$home user=$user logname=$user" \
		"$(sed -n 1p <<< "$out")" "identity in ctrun shell ($rt)"
	out=$(as_user srun -N1 -n1 "$CTRUN" -q shell --root --runtime "$rt" --image "$BB" \
		sh -c 'echo "uid=$(id -u) home=$HOME"')
	assert_eq "uid=0 home=/root" "$out" "identity in ctrun shell --root ($rt)"
}

root_stays_root() { # RUNTIME
	local rt=$1 out
	out=$(as_root srun -N1 -n1 "$CTRUN" -q --no-prefix --runtime "$rt" --image "$BB" \
		sh "$TMPD/u/probe.sh" "" "$marker")
	echo "$out"
	assert_eq "uid=0 gid=0 name=root home=/root user=root logname=root" \
		"$(sed -n 1p <<< "$out")" "identity of root's run ($rt)"
}

# The image's /.singularity.d/env scripts and its entrypoint run as the user
# too (the agent switches before it sources them): a directory image with a
# script and an /etc/rc that say who runs them.
need_image BBDIR busybox-rootfs
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
		user_is_themselves "$rt"
	behaviour "$rt: --root is uid 0, files it makes are the user's outside" root_option_is_root "$rt"
	behaviour "$rt: --no-home binds no home" no_home_is_not_bound "$rt"
	behaviour "$rt: ctrun shell is the user too (and root with --root)" shell_is_the_user "$rt"
	behaviour "$rt: root calling ctrun stays root" root_stays_root "$rt"
done
behaviour "no container left" assert_no_containers
