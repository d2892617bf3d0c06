#!/bin/bash
# tests/deb.sh build: `make deb`.  Builds the Debian package with Debian's
# tools (dpkg-buildpackage, debhelper) from a copy of the tree's files
# (tracked and new, not ignored: what a clean clone plus this change holds),
# so the build never writes into the working tree.  The .deb lands in
# build/deb/.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "${1-}" = build ] || { echo "usage: tests/deb.sh build" >&2; exit 2; }
out=$PWD/build/deb
rm -rf "$out"
mkdir -p "$out/src"
git ls-files -z --cached --others --exclude-standard |
	while IFS= read -r -d '' f; do [ -e "$f" ] && printf '%s\0' "$f"; done |
	xargs -0 cp -P --parents -t "$out/src"
(cd "$out/src" && dpkg-buildpackage -us -uc -b > "$out/build.log" 2>&1) ||
	{ tail -30 "$out/build.log" >&2; echo "deb: dpkg-buildpackage failed (log: $out/build.log)" >&2; exit 1; }
ls "$out"/*.deb
