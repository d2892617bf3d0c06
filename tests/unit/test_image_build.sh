#!/bin/bash
# Unit test of tests/images/build.sh's helpers, without building an image.
# The Debian mirror (apt_mirror.py, `build.sh mirror`): sample apt sources in
# both formats, and the entry a site's local mirror would be.  image_run
# (chroot.sh) runs a command in a tiny busybox root file system with the
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

# --- the Debian mirror -----------------------------------------------------
# sources DIR FILE: FILE (under DIR's apt etc) gets stdin.
sources() { mkdir -p "$(dirname "$1/etc/$2")"; cat >"$1/etc/$2"; }
# release DIR URI SUITE ORIGIN CODENAME: the InRelease apt would have fetched.
release() {
	local name
	name=$(sed -e 's|^[a-z]*:/*||' -e 's|/*$||' <<<"$2")/dists/$3/InRelease
	mkdir -p "$1/lists"
	printf -- '-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA512\n\nOrigin: %s\nLabel: %s\nSuite: %s\nCodename: %s\n' \
		"$4" "$4" "$3" "$5" >"$1/lists/${name//\//_}"
}
mirror_of() { # DIR: the URI apt_mirror.py picks from DIR's sources, or "none"
	local got
	mkdir -p "$1/etc/sources.list.d" "$1/lists"
	got=$(python3 "$repo/tests/images/apt_mirror.py" --list "$1/etc/sources.list" \
		--parts "$1/etc/sources.list.d" --lists "$1/lists" bookworm) || got=none
	echo "${got%%$'\t'*}"
}
expect_mirror() { # NAME DIR WANT
	local got
	got=$(mirror_of "$2")
	[ "$got" = "$3" ] && ok "$1" || bad "$1" "picked '$got', wanted '$3'"
}

d=$tmp/oneline
sources "$d" sources.list <<'X'
# the site's mirror, as a one-line entry with options
deb-src http://src.example/debian bookworm main
deb http://mirror.site.example/debian-security bookworm-security main
deb [arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://mirror.site.example/debian/ bookworm main contrib # trailing comment
deb http://later.example/debian bookworm main
X
expect_mirror "one-line format: [options], a trailing comment, not deb-src or -security" "$d" \
	http://mirror.site.example/debian

d=$tmp/deb822
sources "$d" sources.list.d/debian.sources <<'X'
Types: deb
# http://snapshot.debian.org/archive/debian-security/20250520T000000Z
URIs: http://mirror.site.example/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb deb-src
# a comment inside the stanza
URIs: http://a.site.example/debian http://b.site.example/debian
Suites: bookworm-updates
 bookworm
Components: main
X
expect_mirror "deb822: the first of several URIs, a folded Suites field" "$d" http://a.site.example/debian

d=$tmp/none
sources "$d" sources.list <<'X'
deb cdrom:[Debian GNU/Linux 12]/ bookworm main
deb http://contrib-only.example/debian bookworm contrib
X
sources "$d" sources.list.d/off.sources <<'X'
Enabled: no
Types: deb
URIs: http://disabled.example/debian
Suites: bookworm
Components: main
X
sources "$d" sources.list.d/old.list.disabled <<<'deb http://not-a-source-file.example/debian bookworm main'
sources "$d" sources.list.d/security.sources <<'X'
Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
X
expect_mirror "none: cdrom, no main, Enabled: no, not a .list/.sources, only -security" "$d" none

d=$tmp/order
sources "$d" sources.list.d/b.list <<<'deb http://b.example/debian bookworm main'
sources "$d" sources.list.d/a.sources <<'X'
Types: deb
URIs: http://a.example/debian
Suites: bookworm
Components: main
X
expect_mirror "apt's order: sources.list.d sorted by name" "$d" http://a.example/debian
sources "$d" sources.list <<<'deb http://list.example/debian bookworm main'
expect_mirror "apt's order: sources.list first" "$d" http://list.example/debian

# A third-party repository with a bookworm main of its own comes first, and
# the Debian archive is named by its alias: what apt fetched tells them apart.
d=$tmp/origin
sources "$d" sources.list.d/0vendor.list <<<'deb [arch=amd64] https://packages.vendor.example/debian/12/prod bookworm main'
sources "$d" sources.list.d/debian.sources <<'X'
Types: deb
URIs: http://mirror.site.example/debian
Suites: oldstable oldstable-updates
Components: main
X
expect_mirror "without apt's lists: the first entry of suite bookworm" "$d" \
	https://packages.vendor.example/debian/12/prod
release "$d" https://packages.vendor.example/debian/12/prod bookworm vendor bookworm
release "$d" http://mirror.site.example/debian oldstable Debian bookworm
release "$d" http://mirror.site.example/debian oldstable-updates Debian bookworm-updates
expect_mirror "with apt's lists: the entry whose Release says Origin Debian, Codename bookworm" "$d" \
	http://mirror.site.example/debian

# build.sh's choice and what it says: the override, this machine's apt
# (apt-config, moved here by APT_CONFIG), the default.
d=$tmp/oneline
mkdir -p "$d/etc/apt.conf.d" "$d/etc/preferences.d"
printf 'Dir::Etc "%s/etc";\nDir::State::lists "%s/lists";\n' "$d" "$d" >"$d/apt.conf"
got=$(APT_CONFIG=$d/apt.conf CTRUN_DEBIAN_MIRROR='' "$repo/tests/images/build.sh" mirror 2>&1)
[ "$got" = "http://mirror.site.example/debian	this machine's apt sources, $d/etc/sources.list" ] &&
	ok "build.sh takes the mirror of this machine's apt sources" ||
	bad "build.sh takes the mirror of this machine's apt sources" "said: $got"
got=$(APT_CONFIG=$d/apt.conf CTRUN_DEBIAN_MIRROR=http://override.example/debian \
	"$repo/tests/images/build.sh" mirror 2>&1)
[ "$got" = "http://override.example/debian	CTRUN_DEBIAN_MIRROR" ] &&
	ok "CTRUN_DEBIAN_MIRROR overrides it" || bad "CTRUN_DEBIAN_MIRROR overrides it" "said: $got"
d=$tmp/none
mkdir -p "$d/etc/apt.conf.d" "$d/etc/preferences.d"
printf 'Dir::Etc "%s/etc";\nDir::State::lists "%s/lists";\n' "$d" "$d" >"$d/apt.conf"
got=$(APT_CONFIG=$d/apt.conf CTRUN_DEBIAN_MIRROR='' "$repo/tests/images/build.sh" mirror 2>&1)
[[ $got == "http://deb.debian.org/debian	the default: "* ]] &&
	ok "no entry: the default, and build.sh says so" || bad "no entry: the default, and build.sh says so" "said: $got"

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
