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

# create: one container, named by the image, published under its final name.
names=$(cd "$data" && ls)
case $names in ctrun-*) ;; *) fail "enroot data dir holds '$names'" ;; esac
[ "$(echo "$names" | wc -l)" = 1 ] || fail "more than one container: $names"

# argv after --conf: NAME /.ctrun/agent /.ctrun/spec
mapfile -d '' argv < "$out/argv"
assert_eq "$names|/.ctrun/agent|/.ctrun/spec" "${argv[0]}|${argv[1]}|${argv[2]}" "enroot start argv"

# mounts(): decoded as enroot-mount does (getmntent).
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
want = [(tmpd, tmpd, "none", "x-create=auto,rbind"),
        (src1, "/data/in side $x", "none", "x-create=auto,rbind,ro"),
        (src2, "/etc/ctrun-t", "none", "x-create=auto,rbind")]
assert got[:3] == want, f"fstab decodes to {got[:3]}, expected {want}"
assert [g[1] for g in got[3:]] == ["/.ctrun", "/.ctrun/agent"], f"agent mounts: {got[3:]}"
print("ok: fstab decodes to the exact paths")
PYEOF

# environ(): after enroot's envfmt, the values ctrun meant.
assert_eq 'NVIDIA_VISIBLE_DEVICES=void' "$(cat "$out/environ")" "environment file"
# rc(): the image's entrypoint skipped, the command run verbatim.
assert_eq '    exec "$@"' "$(cat "$out/rc")" "rc script"
got=$(sh "$out/rc" printf '[%s]' 'a b' '$x' "'q'")
assert_eq "[a b][\$x]['q']" "$got" "rc runs its arguments verbatim"

# The conf file itself holds no user string.
conf=$(sed -n 's/^# file \(.*enroot.conf\):$/\1/p' < <("$CTRUN" --dry-run --runtime enroot \
	--image "$IMG" --mount "$src1:/x" -- true))
[ -n "$conf" ] || fail "--dry-run shows no enroot.conf"
"$CTRUN" --dry-run --runtime enroot --image "$IMG" --mount "$src1:/x" -- true > "$TMPD/dry"
if sed -n '/enroot.conf:$/,/^# end of/p' "$TMPD/dry" | grep -q -e "my data" -e HOME; then
	fail "a user path appears inside the --conf script"
fi

# A newline in a path: refused, naming enroot and the path.
nl="$TMPD/two
lines"
mkdir -p "$nl"
run_rc "$CTRUN" --runtime enroot --image "$IMG" --mount "$nl:/data" -- true 2> "$TMPD/err"
assert_eq 2 "$rc" "exit status for a newline path"
grep -q "enroot cannot mount a path that contains a newline" "$TMPD/err" || fail "message: $(cat "$TMPD/err")"
# Started from the squashfs itself (enroot's `start IMAGE.sqsh`, squashfuse
# + fuse-overlayfs): auto uses an entry that is there, else the file; the
# start argument is the image's real path and nothing is created.  A path
# that enroot would put inside single quotes in its shell is refused
# (--image-mode mount) or unpacked instead (auto; -v says why).
arg0() { mapfile -d '' argv < "$out/argv"; printf '%s' "${argv[0]}"; }
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
echo "ok: enroot conf, fstab, environ and rc as enroot reads them"
