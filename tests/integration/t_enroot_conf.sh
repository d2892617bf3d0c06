#!/bin/bash
# The enroot adapter against enroot's own rules: ctrun's generated --conf is
# sourced by bash as enroot's runtime.sh does (stubs/enroot), its mounts()
# output is read back with the C library's getmntent(3) as enroot-mount
# does, environ() goes through enroot's envfmt, rc() is extracted with
# `declare -f rc | sed '1,2d;$d'` and run with sh.  Paths with spaces, '$',
# quotes, backslashes and tabs arrive byte for byte; a destination through
# an image symlink (/mnt/evil -> /etc) is resolved inside the image; a
# newline is refused with a message naming enroot.
. "$(dirname "$0")/lib.sh"
IMG=$("$CTRUN_REPO/tests/images/build.sh" path busybox.sqsh)
[ -f "$IMG" ] || skip "no busybox.sqsh (tests/images/build.sh busybox)"
out=$TMPD/out data=$TMPD/data
mkdir -p "$out" "$data"
src1="$TMPD/my data \$HOME 'q' \"dq\""
src2="$TMPD/back\\slash	tab"
mkdir -p "$src1" "$src2"
cd "$TMPD"
export PATH="$CTRUN_REPO/tests/integration/stubs:$PATH" ENROOT_STUB_OUT=$out ENROOT_DATA_PATH=$data
export NVIDIA_VISIBLE_DEVICES=all # the host's must not reach enroot's NVIDIA hook
run_rc env CTRUN_NV=false "$CTRUN" --runtime enroot --image-mode unpack --image "$IMG" \
	--mount "$src1:/data/in side \$x:ro" --mount "$src2:/mnt/evil/ctrun-t" -- echo hi
assert_eq 0 "$rc" "ctrun with the enroot stub"

# The container's name: the behaviours below compare with it.
names=$(cd "$data" && ls)

# create: one container, named by the image, published under its final name.
create() {
	case $names in ctrun-*) ;; *) fail "enroot data dir holds '$names'" ;; esac
	[ "$(echo "$names" | wc -l)" = 1 ] || fail "more than one container: $names"
}
behaviour "create: one container, named by the image" create

# argv after --conf: NAME /.ctrun/agent /.ctrun/spec
start_argv() {
	local argv
	mapfile -d '' argv < "$out/argv"
	assert_eq "$names|/.ctrun/agent|/.ctrun/spec" "${argv[0]}|${argv[1]}|${argv[2]}" "enroot start argv"
}
behaviour "argv after --conf: NAME /.ctrun/agent /.ctrun/spec" start_argv

# mounts(): decoded as enroot-mount does (getmntent).
mounts() {
	"$PY" - "$out/fstab" "$src1" "$src2" "$TMPD" <<'PYEOF'
import ctypes, sys
libc = ctypes.CDLL("libc.so.6")
class mntent(ctypes.Structure):
    _fields_ = [("fsname", ctypes.c_char_p), ("dir", ctypes.c_char_p), ("type", ctypes.c_char_p),
                ("opts", ctypes.c_char_p), ("freq", ctypes.c_int), ("passno", ctypes.c_int)]
libc.setmntent.restype = ctypes.c_void_p
libc.getmntent.restype = ctypes.POINTER(mntent)
libc.getmntent.argtypes = [ctypes.c_void_p]
f = libc.setmntent(sys.argv[1].encode(), b"r")
got = []
while True:
    m = libc.getmntent(f)
    if not m:
        break
    got.append((m.contents.fsname.decode(), m.contents.dir.decode(), m.contents.type.decode(),
                m.contents.opts.decode()))
src1, src2, tmpd = sys.argv[2:5]
want = [(tmpd, tmpd, "none", "x-create=auto,rbind,nosuid,nodev"),
        (src1, "/data/in side $x", "none", "x-create=auto,rbind,ro,nosuid,nodev"),
        (src2, "/etc/ctrun-t", "none", "x-create=auto,rbind,nosuid,nodev")]
assert got[:3] == want, f"fstab decodes to {got[:3]}, expected {want}"
assert [g[1] for g in got[3:]] == ["/.ctrun", "/.ctrun/agent"], f"agent mounts: {got[3:]}"
print("ok: fstab decodes to the exact paths")
PYEOF
}
behaviour "mounts(): decoded as enroot-mount does (getmntent), byte for byte" mounts

# environ(): after enroot's envfmt, the values ctrun meant.
environ() { assert_eq 'NVIDIA_VISIBLE_DEVICES=void' "$(cat "$out/environ")" "environment file"; }
behaviour "environ(): after enroot's envfmt, the values ctrun meant" environ
# rc(): the image's entrypoint skipped, the command run verbatim.
rc_script() {
	local got
	assert_eq '    exec "$@"' "$(cat "$out/rc")" "rc script"
	got=$(sh "$out/rc" printf '[%s]' 'a b' '$x' "'q'")
	assert_eq "[a b][\$x]['q']" "$got" "rc runs its arguments verbatim"
}
behaviour "rc(): the image's entrypoint skipped, the command run verbatim" rc_script

# The conf file itself holds no user string.
conf_file() {
	local conf
	conf=$(sed -n 's/^# file \(.*enroot.conf\):$/\1/p' < <("$CTRUN" --dry-run --runtime enroot \
		--image "$IMG" --mount "$src1:/x" -- true))
	[ -n "$conf" ] || fail "--dry-run shows no enroot.conf"
	"$CTRUN" --dry-run --runtime enroot --image "$IMG" --mount "$src1:/x" -- true > "$TMPD/dry"
	if sed -n '/enroot.conf:$/,/^# end of/p' "$TMPD/dry" | grep -q -e "my data" -e HOME; then
		fail "a user path appears inside the --conf script"
	fi
}
behaviour "the --conf file itself holds no user string" conf_file

# A newline in a path: refused, naming enroot and the path.
newline() {
	local nl="$TMPD/two
lines"
	mkdir -p "$nl"
	run_rc "$CTRUN" --runtime enroot --image "$IMG" --mount "$nl:/data" -- true 2> "$TMPD/err"
	assert_eq 2 "$rc" "exit status for a newline path"
	grep -q "enroot cannot mount a path that contains a newline" "$TMPD/err" || fail "message: $(cat "$TMPD/err")"
}
behaviour "a newline in a path: refused, naming enroot" newline
# Started from the squashfs itself (enroot's `start IMAGE.sqsh`, squashfuse
# + fuse-overlayfs): auto uses an entry that is there, else the file; the
# start argument is the image's real path and nothing is created.  A path
# that enroot would put inside single quotes in its shell is refused
# (--image-mode mount) or unpacked instead (auto; -v says why).
arg0() { mapfile -d '' argv < "$out/argv"; printf '%s' "${argv[0]}"; }
from_squashfs() {
	local q
	run_rc env CTRUN_NV=false "$CTRUN" --runtime enroot --image "$IMG" -- true
	assert_eq "0 $names" "$rc $(arg0)" "auto with an unpacked entry there: enroot starts the entry"
	rm -rf "${data:?}"/* "$out/argv"
	mkdir -p "$TMPD/via link"
	ln -s "$IMG" "$TMPD/via link/i.sqsh"
	run_rc env CTRUN_NV=false "$CTRUN" --runtime enroot --image "$TMPD/via link/i.sqsh" -- true
	assert_eq "0 $(readlink -f "$IMG")" "$rc $(arg0)" "auto without an entry: enroot starts the file"
	assert_eq "" "$(ls -A "$data")" "nothing created in the enroot data directory"
	rm -f "$out/argv"
	run_rc env CTRUN_NV=false "$CTRUN" --runtime enroot --image-mode mount --image "$IMG" -- true
	assert_eq "0 $(readlink -f "$IMG")" "$rc $(arg0)" "--image-mode mount: enroot starts the file"
	q="$TMPD/it's.sqsh"
	cp "$IMG" "$q"
	run_rc env CTRUN_NV=false "$CTRUN" --runtime enroot --image-mode mount --image "$q" -- true 2> "$TMPD/err"
	assert_eq 125 "$rc" "--image-mode mount of a path with a quote"
	grep -q "enroot cannot start .*it's.sqsh without unpacking it: .*single quotes" "$TMPD/err" ||
		fail "message: $(cat "$TMPD/err")"
	run_rc env CTRUN_NV=false "$CTRUN" -v --runtime enroot --image "$q" -- true 2> "$TMPD/err"
	assert_eq 0 "$rc" "auto with a path with a quote"
	grep -q "unpacking .*it's.sqsh for enroot, not starting it from the file" "$TMPD/err" ||
		fail "auto does not say why it unpacks: $(cat "$TMPD/err")"
	case $(arg0) in ctrun-*) ;; *) fail "auto with a quote started $(arg0), not an entry" ;; esac
}
behaviour "started from the squashfs: auto uses an entry that is there, else the file; a quote is refused or unpacked" from_squashfs

# GPUs (a node's fakes): ENROOT_RESTRICT_DEV=y, and, with no ctrun hook
# installed, ctrun-hook added for this run: a per-run ENROOT_CONFIG_PATH
# with a link to every entry of the user's own and the hook script, the
# user's directory left as it was.  Once installed, the installed one runs.
gpus() {
	local ucfg before cfg
	ucfg=$TMPD/user-enroot
	mkdir -p "$ucfg/hooks.d" "$ucfg/environ.d"
	echo 'ENROOT_ROOTFS_WRITABLE=yes' > "$ucfg/enroot.conf"
	printf '#!/bin/sh\nexit 0\n' > "$ucfg/hooks.d/10-mine.sh" && chmod +x "$ucfg/hooks.d/10-mine.sh"
	before=$(cd "$ucfg" && find . | sort)
	on_gpu_node() { srun -N1 -w "${NODES[0]}" --gpus-per-node=1 env ENROOT_CONFIG_PATH="$ucfg" \
		ENROOT_SYSCONF_PATH="$TMPD/no-sysconf" "$CTRUN" --runtime enroot --image-mode unpack --image "$IMG" "$@"; }
	rm -rf "${data:?}"/*
	run_rc on_gpu_node -- true
	assert_eq 0 "$rc" "ctrun --runtime enroot on a GPU node"
	assert_eq y "$(cat "$out/restrict_dev")" "ENROOT_RESTRICT_DEV with GPUs"
	cfg=$(cat "$out/config_path")
	case $cfg in "$ucfg" | "") fail "ENROOT_CONFIG_PATH is the user's ($cfg): no per-run hook" ;; esac
	assert_eq "./enroot.conf -> $ucfg/enroot.conf;./environ.d -> $ucfg/environ.d;./hooks.d;./hooks.d/10-mine.sh -> $ucfg/hooks.d/10-mine.sh;./hooks.d/99-ctrun-gpus.sh;" \
		"$(tr '\n' ';' < "$out/config")" "the per-run configuration directory"
	assert_eq "10-mine.sh;99-ctrun-gpus.sh;" "$(tr '\n' ';' < "$out/hooks")" "the hooks enroot runs, in order"
	grep -qx "hook=$CTRUN_REPO/build/ctrun-hook" "$out/ctrun-hook.sh" || fail "hook script: $(cat "$out/ctrun-hook.sh")"
	# The nodes have no nvidia-container-cli: enroot's 98-nvidia.sh is told
	# "void" (it would refuse to start), the hook gets the GPUs from ctrun.
	grep -Eqx 'exec "\$hook" enroot --gpus [0-9A-Za-z,-]+' "$out/ctrun-hook.sh" ||
		fail "hook script without nvidia-container-cli: $(cat "$out/ctrun-hook.sh")"
	assert_eq 'NVIDIA_VISIBLE_DEVICES=void' "$(cat "$out/environ")" "environment file without nvidia-container-cli"
	assert_eq "$before" "$(cd "$ucfg" && find . | sort)" "the user's enroot directory after a run"
	[ ! -e "$cfg" ] || fail "the per-run configuration $cfg outlived the run"
	# With nvidia-container-cli on the PATH: enroot's own hook binds the
	# GPUs and the driver, ctrun-hook pins them from the step's variables.
	mkdir -p "$TMPD/nvcli" && printf '#!/bin/sh\nexit 1\n' > "$TMPD/nvcli/nvidia-container-cli" &&
		chmod +x "$TMPD/nvcli/nvidia-container-cli"
	local path0=$PATH
	export PATH=$TMPD/nvcli:$PATH
	run_rc on_gpu_node -- true
	export PATH=$path0
	assert_eq 0 "$rc" "ctrun --runtime enroot on a GPU node with nvidia-container-cli"
	grep -qx 'exec "$hook" enroot' "$out/ctrun-hook.sh" || fail "hook script: $(cat "$out/ctrun-hook.sh")"
	assert_eq "NVIDIA_VISIBLE_DEVICES=all;NVIDIA_DRIVER_CAPABILITIES=compute,utility;" \
		"$(tr '\n' ';' < "$out/environ")" "environment file with nvidia-container-cli"
	run_rc env ENROOT_CONFIG_PATH="$ucfg" "$CTRUN" hooks install enroot > /dev/null
	assert_eq 0 "$rc" "ctrun hooks install enroot"
	run_rc on_gpu_node -- true
	assert_eq "0 $ucfg" "$rc $(cat "$out/config_path")" "with the hook installed: the user's directory"
	assert_eq "10-mine.sh;99-ctrun-gpus.sh;" "$(tr '\n' ';' < "$out/hooks")" "the installed hook runs once"
	run_rc env ENROOT_CONFIG_PATH="$ucfg" "$CTRUN" hooks uninstall enroot > /dev/null
	assert_eq 0 "$rc" "ctrun hooks uninstall enroot"
	run_rc env CTRUN_NV=false "$CTRUN" --runtime enroot --image-mode unpack --image "$IMG" -- true
	assert_eq "0|" "$rc|$(cat "$out/restrict_dev")" "no GPUs: the host's /dev as enroot's default"
}
behaviour "GPUs: ENROOT_RESTRICT_DEV=y, ctrun-hook for the run or the installed one, the user's directory untouched" gpus
