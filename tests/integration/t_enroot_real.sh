#!/bin/bash
# A real enroot (4.1.2, built from NVIDIA's source by
# ../shared/tools/build-enroot.sh into /opt/enroot) under ctrun's enroot
# adapter on the test cluster.  --image-mode mount (and auto without an
# unpacked entry): enroot starts the squashfs itself (runtime::start with a
# file: squashfuse + fuse-overlayfs), nothing unpacked; --image-mode unpack:
# `enroot create` into the node cache, then start.  The same files either
# way, the env contract on two nodes, and no FUSE process left after
# success or after kill -9 of ctrun.  (The root's file system type tells
# the two apart: the unpacked entry is a directory of the node's cache.)
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
[ -x /opt/enroot/bin/enroot ] ||
	skip "no real enroot in /opt/enroot (../shared/tools/build-enroot.sh builds 4.1.2 there)"
need_image BB busybox.sqsh
cd "$TMPD"
cp "$BB" mine.sqsh
# The nodes' GPUs are fakes: enroot's 98-nvidia.sh would need nvidia-container-cli.
export CTRUN_NV=false PATH=/opt/enroot/bin:$PATH CTRUN_CACHE_DIR=$TMPD/cache ENROOT_RUNTIME_PATH=$TMPD/enroot-run
cat > report.sh <<'SH'
root=$(awk '$2 == "/" { t = $3 } END { print t }' /proc/self/mounts)
echo "rank $RANK of $WORLD_SIZE node $NODE_RANK root $root"
SH
fuse_of_test() { pgrep -f "squashfuse.*$TMPD|fuse-overlayfs.*$TMPD"; }
no_fuse() {
	local i
	for ((i = 0; i < 100; i++)); do fuse_of_test > /dev/null || return 0; sleep 0.05; done
	fail "$1: FUSE processes left: $(fuse_of_test | xargs -r ps -o pid,args -p)"
}

# One srun -N2 run per mode (unpack also leaves an entry in the node cache).
run_mode() { # mount|unpack
	local mode=$1 want
	run_rc srun -N2 --ntasks-per-node=1 "$CTRUN" -v --no-prefix --runtime enroot \
		--image-mode "$mode" --image mine.sqsh -- sh "$TMPD/report.sh" > "$mode.out" 2> "$mode.err"
	cat "$mode.out" "$mode.err"
	assert_eq 0 "$rc" "srun -N2 ctrun --runtime enroot --image-mode $mode"
	want=$(grep -o 'root .*' "$mode.out" | sort -u | cut -d' ' -f2)
	if [ "$mode" = mount ]; then
		# enroot 4 overlays the squashfuse mount with the kernel's overlayfs
		# (ENROOT_NATIVE_OVERLAYFS, its default), enroot 3 with fuse-overlayfs.
		case $want in overlay | fuse.fuse-overlayfs) ;; *) fail "root from the file is '$want'" ;; esac
		grep -q "enroot starts .*mine.sqsh from the file" "$mode.err" || fail "-v does not say mount"
	else
		case $want in overlay | fuse.* | "") fail "unpacked root is '$want'" ;; esac
	fi
	assert_eq "rank 0 of 2 node 0 root $want;rank 1 of 2 node 1 root $want;" \
		"$(sort "$mode.out" | tr '\n' ';')" "both nodes' workers ($mode)"
	no_fuse "after a run ($mode)"
	if [ "$mode" = unpack ]; then
		ls cache/enroot-data/ctrun-* > /dev/null 2>&1 || fail "--image-mode unpack created no enroot entry"
	fi
}
behaviour "--image-mode mount: enroot starts the squashfs on both nodes, no FUSE left" run_mode mount
behaviour "--image-mode unpack: enroot create into the node cache, then start, on both nodes" run_mode unpack

sums() {
	"$CTRUN" -q --no-prefix --runtime enroot --image-mode "$1" --image mine.sqsh -- \
		sh -c 'find /bin /sbin /usr -xdev 2>/dev/null | sort; find /bin /usr -xdev -type f | sort | xargs md5sum'
}
same_files() {
	local m u
	m=$(sums mount) u=$(sums unpack)
	[ "$(echo "$m" | wc -l)" -gt 100 ] || fail "too few paths in the mounted image: $m"
	assert_eq "$u" "$m" "files, started from the squashfs vs unpacked"
	no_fuse "after the comparison"
}
behaviour "the same files, started from the squashfs or unpacked" same_files

# kill -9 of ctrun while enroot runs from the squashfs: nothing stays.
# ctrun is started and waited for in the behaviour's own shell.
kill9() {
	local pid i
	"$CTRUN" --runtime enroot --image-mode mount --image mine.sqsh -- \
		sh -c "echo up; exec sleep 3005$$" > k.out 2>&1 &
	pid=$!
	wait_lines k.out 1 30 || fail "the container did not start: $(cat k.out)"
	fuse_of_test > /dev/null || fail "no squashfuse while the container runs from the squashfs"
	kill -9 "$pid"
	wait "$pid" 2>/dev/null || true
	for ((i = 0; i < 100; i++)); do pgrep -f "sleep 3005$$" > /dev/null || break; sleep 0.05; done
	! pgrep -f "sleep 3005$$" > /dev/null || fail "the container outlived ctrun"
	no_fuse "after kill -9 of ctrun"
}
behaviour "kill -9 of ctrun while enroot runs from the squashfs: nothing stays" kill9

# ---- --runtime auto with enroot installed (issue 33) ----
# auto takes ctrun's own start (runc over the mounted squashfs) where
# enroot's configuration here is enroot's own (/opt/enroot's, as installed),
# and enroot where the site or the user configured it to add something:
# then the addition reaches the workers.  An image laid out as enroot's
# import writes it: the config's Env in /etc/environment, an /etc/rc that
# sources /etc/rc.local and runs the entrypoint.
N=${NODES[0]}
rm -rf eroot && unsquashfs -q -d eroot mine.sqsh > /dev/null
echo IMG_VAR=from-image >> eroot/etc/environment
cat > eroot/etc/rc <<'RC'
cd "/" && unset OLDPWD || exit 1
if [ -s /etc/rc.local ]; then
    . /etc/rc.local
fi
if [ $# -gt 0 ]; then
    exec "$@"
else
    exec 'sh' '-c' 'echo "default RCLOCAL=$RCLOCAL IMG_VAR=$IMG_VAR"'
fi
RC
echo 'export RCLOCAL=sourced' > eroot/etc/rc.local
mksquashfs eroot eimg.sqsh -noappend -quiet > /dev/null && chmod 644 eimg.sqsh

# What a worker sees of the image under `--runtime RT` (auto: none given):
# its variable and PATH, the rc and rc.local (--entrypoint, and the image's
# default command), who it is (root's supplementary groups aside: runc
# sets none for real root, enroot keeps the caller's; docs/decisions/runtimes.md).
view_of() { # RT
	local rt=()
	[ "$1" = auto ] || rt=(--runtime "$1")
	srun -N1 -w "$N" "$CTRUN" -q --no-prefix "${rt[@]}" --image eimg.sqsh -- \
		sh -c 'echo "IMG_VAR=$IMG_VAR PATH=$PATH"; id -u; id -g; id -un; echo "HOME=$HOME"; pwd'
	srun -N1 -w "$N" "$CTRUN" -q --no-prefix "${rt[@]}" --entrypoint --image eimg.sqsh -- \
		sh -c 'echo "entrypoint RCLOCAL=$RCLOCAL"'
	srun -N1 -w "$N" "$CTRUN" -q --no-prefix "${rt[@]}" --image eimg.sqsh < /dev/null
}
auto_own_start() {
	local want got
	run_rc srun -N2 --ntasks-per-node=1 "$CTRUN" -v --no-prefix --image eimg.sqsh -- \
		sh -c 'echo "IMG_VAR=$IMG_VAR"' > auto.out 2> auto.err
	assert_eq 0 "$rc" "srun -N2 ctrun (auto): $(cat auto.out auto.err)"
	grep -q -- "--runtime auto: oci (.*) for $TMPD/eimg.sqsh, not enroot: enroot's configuration here adds nothing" auto.err ||
		fail "auto did not take ctrun's own start: $(grep -E 'runtime|container' auto.err)"
	assert_eq "IMG_VAR=from-image;IMG_VAR=from-image;" "$(tr '\n' ';' < auto.out)" "both nodes' workers"
	want=$(view_of enroot) got=$(view_of auto)
	case $want in *"IMG_VAR=from-image"*"entrypoint RCLOCAL=sourced"*"default RCLOCAL=sourced IMG_VAR=from-image"*) ;;
	*) fail "enroot's view of the image: $want" ;; esac
	assert_eq "$want" "$got" "what a worker sees of the image, under enroot and under auto"
	no_fuse "after the auto runs"
}
behaviour "auto, enroot's own configuration: ctrun's own start (runc); the image's environment, rc and rc.local as under enroot" \
	auto_own_start

# A configuration that adds something: `srun ctrun -v` with ENV (K=V words)
# prints CMD's output; auto must have taken enroot, saying why (WHY, a
# pattern of the -v line).
auto_takes_enroot() { # WHY CMD ENV...
	local why=$1 cmd=$2
	shift 2
	run_rc env "$@" srun -N1 -w "$N" "$CTRUN" -v --no-prefix --image eimg.sqsh -- sh -c "$cmd" > site.out 2> site.err
	assert_eq 0 "$rc" "ctrun with $*: $(cat site.out site.err)"
	grep -q -- "--runtime auto: enroot for $TMPD/eimg.sqsh, not oci (.*): $why" site.err ||
		fail "auto did not keep enroot for $*: $(grep -E 'runtime|container' site.err)"
	out=$(cat site.out)
}
site_hook() {
	mkdir -p sys && cp -a /opt/enroot/etc/enroot/. sys/
	printf '#!/bin/sh\necho SITE_HOOK=ran >> "$ENROOT_ENVIRON"\n' > sys/hooks.d/50-site.sh
	chmod 755 sys/hooks.d/50-site.sh
	auto_takes_enroot "$TMPD/sys/hooks.d/50-site.sh is not one of enroot's own files" \
		'echo "SITE_HOOK=$SITE_HOOK"' ENROOT_SYSCONF_PATH="$TMPD/sys"
	assert_eq "SITE_HOOK=ran" "$out" "the site's hook in the worker's environment"
}
behaviour "auto, a site's hook in enroot's system directory: enroot, and the hook's variable reaches the worker" site_hook
site_edited() {
	mkdir -p edited && cp -a /opt/enroot/etc/enroot/. edited/
	echo "$TMPD/sitedata /sitedata none x-create=dir,bind,ro,nosuid,nodev" >> edited/mounts.d/10-system.fstab
	mkdir -p sitedata && echo from-the-site > sitedata/f
	auto_takes_enroot "$TMPD/edited/mounts.d/10-system.fstab is not one of enroot's own files" \
		'cat /sitedata/f' ENROOT_SYSCONF_PATH="$TMPD/edited"
	assert_eq from-the-site "$out" "the edited fstab's mount"
}
behaviour "auto, enroot's own fstab edited by the site: enroot, and the added mount is there" site_edited
user_environ() {
	mkdir -p ucfg/environ.d && echo 'USER_ENV=mine' > ucfg/environ.d/50-mine.env
	auto_takes_enroot "$TMPD/ucfg/environ.d/50-mine.env is not one of enroot's own files" \
		'echo "USER_ENV=$USER_ENV"' ENROOT_CONFIG_PATH="$TMPD/ucfg"
	assert_eq USER_ENV=mine "$out" "the user's environ.d variable"
}
behaviour "auto, an environ.d file in the user's enroot directory: enroot, and its variable reaches the worker" user_environ
env_setting() {
	auto_takes_enroot "ENROOT_ROOTFS_WRITABLE is set, which only enroot applies" \
		'touch /usr/probe && echo writable' ENROOT_ROOTFS_WRITABLE=y
	assert_eq writable "$out" "ENROOT_ROOTFS_WRITABLE=y's writable root"
}
behaviour "auto, ENROOT_ROOTFS_WRITABLE=y in the environment: enroot, and the root is writable" env_setting
# ctrun's own enroot hook (ctrun hooks install enroot) adds nothing ctrun's
# own start lacks (ctrun-hook is its GPU hook too).
own_hook() {
	ENROOT_CONFIG_PATH=$TMPD/hookcfg "$CTRUN" hooks install enroot > /dev/null
	[ -x hookcfg/hooks.d/99-ctrun-gpus.sh ] || fail "ctrun hooks install enroot wrote nothing"
	run_rc env ENROOT_CONFIG_PATH="$TMPD/hookcfg" srun -N1 -w "$N" "$CTRUN" -v --no-prefix --image eimg.sqsh -- \
		sh -c 'echo "IMG_VAR=$IMG_VAR"' > hook.out 2> hook.err
	assert_eq 0 "$rc" "auto with ctrun's hook installed: $(cat hook.out hook.err)"
	grep -q -- "--runtime auto: oci (" hook.err || fail "auto took enroot: $(grep -E 'runtime|container' hook.err)"
	assert_eq IMG_VAR=from-image "$(cat hook.out)" "the worker"
}
behaviour "auto, ctrun's own enroot hook installed: still ctrun's own start" own_hook
