#!/bin/bash
# Hostile input: ctrun-hook refuses with one line and mounts nothing.
# Inside a Slurm task on a node with GPUs, each case runs the hook as a
# runtime would (state JSON on stdin, bundle on disk) in a private mount
# namespace and compares that namespace's /proc/self/mountinfo before and
# after: malformed state, missing and relative bundles, a dotted root
# path, unknown GPU ids, and images whose symlinks point at the host
# (/dev -> a host directory, /usr/lib/x86_64-linux-gnu -> /etc with a
# driver to bind, a relative link climbing out, a relative one landing on a
# directory bound from the host).  The host directories a
# naive hook would have written into must stay empty.  Then the same
# /dev symlink through real runc, and enroot mode's own inputs.  Last, an
# MPS pipe directory (/tmp/nvidia-mps) another user made first is not bound.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/hooklib.sh"
hook_requirements
export HOOK TMPD CTRUN

cat >"$TMPD/hostile.sh" <<'EOF'
set -uo pipefail
. "$CTRUN_REPO/tests/integration/hooklib.sh"
gpu=${SLURM_STEP_GPUS%%,*}
host=$TMPD/host-dir # what image symlinks point at: must stay empty
mkdir -p "$host"
n=0

# bundle DIR ROOTPATH GPUS: config.json naming the root and the GPUs.
bundle() {
	mkdir -p "$1"
	printf '{"ociVersion":"1.0.2","root":{"path":"%s"},"annotations":{"org.ctrun.enabled":"true","org.ctrun.gpus":"%s"}}\n' \
		"$2" "$3" >"$1/config.json"
}
state() { printf '{"ociVersion":"1.0.2","id":"hostile","status":"creating","pid":1,"bundle":"%s"}' "$1"; }

# case NAME EXPECTED-TEXT [SETUP]: runs the hook on $TMPD/NAME.state in a
# fresh mount namespace (after SETUP there) and reports rc, the mounts it
# added and its stderr.
case_() {
	local name=$1 want=$2 setup=${3:-true} out
	n=$((n + 1))
	out=$(unshare -m --propagation private bash -c '
		. "$CTRUN_REPO/tests/integration/hooklib.sh"
		eval "$2"
		before=$(mount_count)
		"$HOOK" createContainer <"$TMPD/$1.state" 2>"$TMPD/$1.err"
		rc=$?
		echo "$rc $(( $(mount_count) - before ))"
	' bash "$name" "$setup")
	echo "case $name: rc+mounts=[$out] stderr=[$(cat "$TMPD/$name.err")]"
	read -r rc added <<<"$out"
	[ "$rc" != 0 ] || { echo "FAIL $name: exit 0"; return; }
	[ "$added" = 0 ] || { echo "FAIL $name: $added mounts added"; return; }
	[ "$(wc -l <"$TMPD/$name.err")" = 1 ] || { echo "FAIL $name: not one line"; return; }
	grep -q "^ctrun-hook: .*$want" "$TMPD/$name.err" || { echo "FAIL $name: no '$want'"; return; }
	echo "ok $name"
}

printf '{"ociVersion":"1.0.2","id":"x",' >"$TMPD/malformed.state"
case_ malformed "not valid JSON"
state /nonexistent/bundle >"$TMPD/missing.state"
case_ missing "cannot open config.json"
state bundle >"$TMPD/relative.state"
case_ relative "bundle 'bundle' is not a clean absolute path"
bundle "$TMPD/dotted" "../../../etc" "$gpu"
state "$TMPD/dotted" >"$TMPD/dotted.state"
case_ dotted "root.path '$TMPD/dotted/../../../etc' is not a clean path"
make_rootfs "$TMPD/unknown/rootfs"
bundle "$TMPD/unknown" rootfs "$gpu,17"
state "$TMPD/unknown" >"$TMPD/unknown.state"
case_ unknown "names GPU '17', which this host does not have"
bundle "$TMPD/notid" rootfs "0;rm -rf /"
state "$TMPD/notid" >"$TMPD/notid.state"
case_ notid "is not a GPU index or UUID"

# /dev -> the host directory
mkdir -p "$TMPD/devlink/rootfs"
ln -s "$host" "$TMPD/devlink/rootfs/dev"
bundle "$TMPD/devlink" rootfs "$gpu"
state "$TMPD/devlink" >"$TMPD/devlink.state"
case_ devlink "/dev in the image is a symlink to the absolute path $host"

# A Debian image whose library directory points at /etc, and a driver
# whose libraries would land there: the real one when loaded, else a fake
# one in this namespace's ld.so.cache.
d=$TMPD/driver
mkdir -p "$d"
fake_driver=true
if [ ! -r /sys/module/nvidia/version ]; then
	echo 'int x;' >"$d/x.c"
	cc -shared -fPIC -Wl,-soname,libcuda.so.1 -o "$d/libcuda.so.999.1.1" "$d/x.c"
	echo "$d" >"$d/ld.so.conf"
	ldconfig -C "$d/ld.so.cache" -f "$d/ld.so.conf"
	fake_driver='mount --bind "$TMPD/driver/ld.so.cache" /etc/ld.so.cache'
fi
make_rootfs "$TMPD/libetc/rootfs"
echo 12.0 >"$TMPD/libetc/rootfs/etc/debian_version"
mkdir -p "$TMPD/libetc/rootfs/usr/lib"
ln -s /etc "$TMPD/libetc/rootfs/usr/lib/x86_64-linux-gnu"
bundle "$TMPD/libetc" rootfs "$gpu"
state "$TMPD/libetc" >"$TMPD/libetc.state"
case_ libetc "/usr/lib/x86_64-linux-gnu in the image is a symlink to the absolute path /etc" \
	"$fake_driver"
ls "$TMPD/libetc/rootfs/dev" | grep -q nvidia && echo "FAIL libetc: a device node was created"

# A relative link that climbs out of the root.
make_rootfs "$TMPD/climb/rootfs"
mkdir -p "$TMPD/climb/rootfs/usr"
ln -s ../../../../../../../../etc "$TMPD/climb/rootfs/usr/lib64"
bundle "$TMPD/climb" rootfs "$gpu"
state "$TMPD/climb" >"$TMPD/climb.state"
case_ climb "the image's symlink /usr/lib64 -> ../../../../../../../../etc climbs out of the container root" \
	"$fake_driver"

# A relative link that stays inside the root by its path but lands on a
# directory bound from the host (a bind of $TMPD/host-lib at /mnt/host, as
# a --mount, the working directory or the home is): the hook made the
# driver's mount points and links there, in the host's directory, and
# replaced files of those names.
host_lib=$TMPD/host-lib
mkdir -p "$host_lib"
make_rootfs "$TMPD/bindlib/rootfs"
echo 12.0 >"$TMPD/bindlib/rootfs/etc/debian_version"
mkdir -p "$TMPD/bindlib/rootfs/usr/lib" "$TMPD/bindlib/rootfs/mnt/host"
ln -s ../../mnt/host "$TMPD/bindlib/rootfs/usr/lib/x86_64-linux-gnu"
bundle "$TMPD/bindlib" rootfs "$gpu"
state "$TMPD/bindlib" >"$TMPD/bindlib.state"
case_ bindlib "lies on another mount than the container's root" \
	"mount --bind \"\$TMPD/host-lib\" \"\$TMPD/bindlib/rootfs/mnt/host\"; $fake_driver"
echo "host lib dir: [$(ls -A "$host_lib")]"

# The same for /etc, where the hook's ldconfig (as uid 0) writes the
# image's ld.so.cache: /etc -> mnt/host on a bind of $TMPD/host-etc.
host_etc=$TMPD/host-etc
mkdir -p "$host_etc" "$TMPD/bindetc/rootfs/mnt/host" "$TMPD/bindetc/rootfs/usr/lib64"
ln -s mnt/host "$TMPD/bindetc/rootfs/etc"
bundle "$TMPD/bindetc" rootfs "$gpu"
state "$TMPD/bindetc" >"$TMPD/bindetc.state"
case_ bindetc "/etc of the image lies on another mount than the container's root" \
	"mount --bind \"\$TMPD/host-etc\" \"\$TMPD/bindetc/rootfs/mnt/host\"; $fake_driver"
echo "host etc dir: [$(ls -A "$host_etc")]"

# The same /dev symlink through real runc (it resolves its own mounts
# inside the root; the hook must refuse the link, not follow it).
make_bundle "$TMPD/runc" true
rm -rf "$TMPD/runc/rootfs/dev"
ln -s "$host" "$TMPD/runc/rootfs/dev"
"$CTRUN" -q hooks configure "$TMPD/runc"
before=$(mount_count)
runc --root "$TMPD/runc-state" run --bundle "$TMPD/runc" "hk-hostile-$SLURM_JOB_ID" \
	>/dev/null 2>"$TMPD/runc.err"
rc=$?
echo "case runc: rc=$rc mounts=$(( $(mount_count) - before )) stderr=[$(cat "$TMPD/runc.err")]"
[ "$rc" != 0 ] && [ "$(mount_count)" = "$before" ] &&
	grep -q "ctrun-hook: .*/dev in the image is a symlink to the absolute path" "$TMPD/runc.err" &&
	echo "ok runc" || echo "FAIL runc"

# Enroot mode's inputs.
mkdir -p "$TMPD/en/rootfs" && : >"$TMPD/en/env" && : >"$TMPD/en/fstab"
ENROOT_ROOTFS=en/rootfs ENROOT_ENVIRON=$TMPD/en/env ENROOT_MOUNTS=$TMPD/en/fstab \
	"$HOOK" enroot 2>"$TMPD/en.err" && echo "FAIL enroot-relative: exit 0"
grep -q "^ctrun-hook: enroot mode: ENROOT_ROOTFS='en/rootfs' is not a clean absolute path" \
	"$TMPD/en.err" && echo "ok enroot-relative" || echo "FAIL enroot-relative: $(cat "$TMPD/en.err")"
ln -s "$host" "$TMPD/en/rootfs/dev"
ENROOT_ROOTFS=$TMPD/en/rootfs ENROOT_ENVIRON=$TMPD/en/env ENROOT_MOUNTS=$TMPD/en/fstab \
	"$HOOK" enroot 2>"$TMPD/en.err" && echo "FAIL enroot-devlink: exit 0"
grep -q "^ctrun-hook: /dev in the image is not a directory" "$TMPD/en.err" &&
	[ ! -s "$TMPD/en/env" ] && [ ! -s "$TMPD/en/fstab" ] &&
	echo "ok enroot-devlink" || echo "FAIL enroot-devlink: $(cat "$TMPD/en.err")"

# runc 1.1 itself makes /dev/{fd,stdin,stdout,stderr,ptmx} through the
# image's /dev symlink (its own weakness, see docs/hooks.md); the hook must
# have put nothing there.
echo "host dir: [$(ls -A "$host" | grep nvidia)]"
echo "cases: $n"
EOF
# Every case runs in one Slurm task (hostile.sh); each behaviour judges one
# case by the lines it printed.
run_rc srun -N1 -w "${NODES[0]}" --gpus-per-node=1 bash "$TMPD/hostile.sh" >"$TMPD/out"
cat "$TMPD/out"
assert_eq 0 "$rc" "the hostile cases' task"
refused() { # case
	if grep "^FAIL $1\b" "$TMPD/out"; then fail "case $1"; fi
	grep -qx "ok $1" "$TMPD/out" || fail "case $1 did not pass"
}
for c in malformed missing relative dotted unknown notid devlink libetc climb bindlib bindetc runc \
	enroot-relative enroot-devlink; do
	behaviour "refused, nothing mounted: $c" refused "$c"
done
cases() {
	if grep '^FAIL' "$TMPD/out"; then fail "a case failed"; fi
	assert_eq 14 "$(grep -c '^ok ' "$TMPD/out")" "cases that passed"
}
behaviour "every case ran and passed (14)" cases
host_dir() { grep -qx 'host dir: \[\]' "$TMPD/out" || fail "something was written into the host directory"; }
behaviour "nothing was written into the host directory" host_dir
host_lib_dir() {
	grep -qx 'host lib dir: \[\]' "$TMPD/out" || fail "the hook wrote into the bound host directory"
	grep -qx 'host etc dir: \[\]' "$TMPD/out" || fail "ldconfig wrote into the bound host directory"
}
behaviour "nothing was written into a host directory bound into the image" host_lib_dir
no_lib() { if ls /etc | grep -q '^libcuda'; then fail "a library was put into the machine's /etc"; fi; }
behaviour "no library was put into the machine's /etc" no_lib

# MPS's pipe directory is /tmp/nvidia-mps, which any user may create first
# in /tmp: the hook bound it into every GPU container, writable, as MPS's
# pipes (OCI and enroot binds, and apptainer's through driver-files), so
# the job's CUDA would talk to another user's pipes.  Now one made by
# another user (ctrunuser here) is left out with a warning; root's own is
# still bound.  Each run in a private mount namespace with a /tmp of its
# own, so the machine's /tmp stays untouched.  The hook is opened before
# that /tmp hides it (the checkout itself may live under /tmp) and run
# through its descriptor.
mps_dir() { # who-makes-it: the hook's driver-files output in $TMPD/mps-WHO
	unshare -m --propagation private sh -c '
		exec 3<"$2" || exit 1
		mount -t tmpfs -o mode=1777 tmpfs /tmp || exit 1
		if [ "$1" = root ]; then mkdir -m 755 /tmp/nvidia-mps
		else su "$1" -s /bin/sh -c "mkdir -m 777 /tmp/nvidia-mps"; fi || exit 1
		exec /proc/self/fd/3 driver-files /usr/lib/x86_64-linux-gnu' sh "$1" "$HOOK" >"$TMPD/mps-$1" 2>&1
}
mps_of_another_user() {
	local attacker
	attacker=$("$CTRUN_REPO/tests/cluster/ensure-user.sh" ctrunuser)
	run_rc mps_dir "$attacker"
	cat "$TMPD/mps-$attacker"
	assert_eq 0 "$rc" "driver-files with another user's /tmp/nvidia-mps"
	if grep -q '^/tmp/nvidia-mps ' "$TMPD/mps-$attacker"; then
		fail "another user's /tmp/nvidia-mps is bound into the container"
	fi
	grep -q "^ctrun-hook: warning: /tmp/nvidia-mps is not bound: another user could have made it (uid $(id -u "$attacker")" \
		"$TMPD/mps-$attacker" || fail "no warning naming /tmp/nvidia-mps and its owner"
	run_rc mps_dir root
	cat "$TMPD/mps-root"
	assert_eq 0 "$rc" "driver-files with root's /tmp/nvidia-mps"
	grep -qx '/tmp/nvidia-mps /tmp/nvidia-mps' "$TMPD/mps-root" || fail "root's MPS directory is not bound"
}
behaviour "another user's /tmp/nvidia-mps is not bound into containers; root's is" mps_of_another_user
