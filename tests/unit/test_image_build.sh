#!/bin/bash
# Unit test of tests/images/build.sh's helpers, without building an image.
# image_run (chroot.sh) runs a command in a tiny busybox root file system with the
# host's environment poisoned as tests/integration/run.sh poisons it (a
# TMPDIR that exists only on the host), and the command must see the image's
# own clean environment: needs root (a mount namespace, chroot), as make
# check runs.  Prints cmocka's verdict lines, so tests/unit/run.sh counts it
# like the rest.
set -u
repo=$(cd "$(dirname "$0")/../.." && pwd)
passed=0 failed=0
ok() { echo "[       OK ] $1"; passed=$((passed + 1)); }
bad() { echo "[  FAILED  ] $1: $2"; failed=$((failed + 1)); }
verdict() {
	echo "[==========] $((passed + failed)) test(s) run."
	[ "$failed" -eq 0 ] && echo "[  PASSED  ] $passed test(s)." || echo "[  FAILED  ] $failed test(s)."
	[ "$failed" -eq 0 ]
	exit
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=../images/chroot.sh
. "$repo/tests/images/chroot.sh"

# --- image_run --------------------------------------------------------------
if [ "$(id -u)" -ne 0 ]; then
	bad "image_run" "needs root (a mount namespace and chroot); make check runs as root"
	verdict
fi
bb=$(command -v busybox) || { bad "image_run" "busybox not found (make deps installs busybox-static)"; verdict; }
r=$tmp/rootfs
mkdir -p "$r/bin" "$r/proc" "$r/tmp"
cp "$bb" "$r/bin/busybox"
for a in sh env mktemp; do ln -s busybox "$r/bin/$a"; done

# What the host's environment holds when run.sh calls build.sh.
host_env=(TMPDIR=/nonexistent-ctrun-host-tmp CTRUN_HOST_ONLY=leaked HOME=/host-home
	LANG=xx_XX.bogus PATH="$PATH" http_proxy=http://proxy.invalid:3128)

got=$(env "${host_env[@]}" bash -c '. "$1"; image_run "$2" env' _ \
	"$repo/tests/images/chroot.sh" "$r" 2>&1)
rc=$?
if [ "$rc" -ne 0 ]; then
	bad "image_run env" "exited $rc: $got"
else
	leaks=$(grep -E '^(TMPDIR=/nonexistent|CTRUN_HOST_ONLY=|HOME=/host-home|LANG=xx_XX)' <<<"$got")
	[ -z "$leaks" ] && ok "the host's TMPDIR, HOME, LANG and other variables stay out" ||
		bad "the host's TMPDIR, HOME, LANG and other variables stay out" "the image saw: $(tr '\n' ' ' <<<"$leaks")"
	want="HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	missing=""
	for w in $want; do grep -qxF "$w" <<<"$got" || missing+=" $w"; done
	[ -z "$missing" ] && ok "the image gets its own HOME, LANG, PATH, DEBIAN_FRONTEND" ||
		bad "the image gets its own HOME, LANG, PATH, DEBIAN_FRONTEND" "missing$missing in: $(tr '\n' ' ' <<<"$got")"
	# A proxy is the site's way out, not the image's business: apt needs it.
	grep -qxF http_proxy=http://proxy.invalid:3128 <<<"$got" && ok "a proxy setting passes" ||
		bad "a proxy setting passes" "http_proxy not in: $(tr '\n' ' ' <<<"$got")"
fi

# What failed in the torch build: a postinst's mktemp under the host's TMPDIR.
got=$(env "${host_env[@]}" bash -c '. "$1"; image_run "$2" mktemp' _ \
	"$repo/tests/images/chroot.sh" "$r" 2>&1)
rc=$?
[ "$rc" -eq 0 ] && [[ $got == /tmp/* ]] && ok "mktemp works in the image" ||
	bad "mktemp works in the image" "exited $rc: $got"

image_run "$r" sh -c 'exit 3'
rc=$?
[ "$rc" -eq 3 ] && ok "the command's exit status comes back" ||
	bad "the command's exit status comes back" "got $rc, wanted 3"
left=$(grep -F " $r/" /proc/mounts)
[ -z "$left" ] && ok "nothing stays mounted in the image" ||
	bad "nothing stays mounted in the image" "$left"
verdict
