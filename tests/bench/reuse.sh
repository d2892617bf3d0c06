#!/bin/bash
# Layer reuse (issue 32, point 3): an image one 10 MB layer away from a stored
# one.  The torch test image (3 layers, as pull.sh pulls it) and the same image
# plus one layer (tests/images/addlayer.py: a 10 MB file of random bytes and a
# few small ones, gzip'd) pushed to Debian's docker-registry on this machine
# (plain HTTP on loopback, reglib.sh), then:
#   first pull     `ctrun pull` of torch+1 into an empty store;
#   reuse          the same with torch already pulled into the store (its layer
#                  blobs removed, as `ctrun cache gc` removes them);
#   no reuse       the same with torch and its layer blobs in the store and
#                  [registry] reuse = false: what a pull did before;
#   copy           `cp` of the stored torch squashfs: the floor of any design that
#                  keeps one file per image.
# Median and minimum of $BENCH_RUNS (3) runs, the sides alternating.  Root.
# Prints a markdown section.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
CTRUN=$repo/build/ctrun runs=${BENCH_RUNS:-3}
[ "$(id -u)" = 0 ] || { echo "bench: reuse.sh needs root" >&2; exit 1; }
"$repo/tests/images/build.sh" registry >&2
TMPD=$(mktemp -d /tmp/ctrun-bench-reuse.XXXXXX)
# shellcheck source=../integration/reglib.sh
. "$repo/tests/integration/reglib.sh"
trap 'reg_stop; rm -rf "$TMPD"' EXIT

now() { local t=$EPOCHREALTIME; echo "${t/./}"; }
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
minimum() { printf '%s\n' "$@" | sort -n | head -1; }
sec() { awk -v u="$1" 'BEGIN {printf "%.2f", u / 1000000}'; }
timed() { # command...: microseconds, the command's output to stderr
	local s e
	sync
	s=$(now)
	"$@" </dev/null >&2 || { echo "bench: failed: $*" >&2; exit 1; }
	e=$(now)
	echo $((e - s))
}

# The torch image as an OCI layout, from the test images' registry storage.
reg_image_storage STORAGE
reg_start --plain --auth none --addr 127.0.0.1 --storage "$STORAGE" >&2
reg_skopeo copy --quiet --src-tls-verify=false "docker://$REG_HOST/ctrun-test/torch:latest" "oci:$TMPD/base"
reg_stop
mkdir -p "$TMPD/tree/opt/app" "$TMPD/tree/etc"
head -c $((10 * 1024 * 1024)) /dev/urandom > "$TMPD/tree/opt/app/model.bin"
for i in 1 2 3 4 5; do echo "module $i" > "$TMPD/tree/opt/app/m$i.py"; done
echo "built on torch" > "$TMPD/tree/etc/motd"
python3 "$repo/tests/images/addlayer.py" "$TMPD/base" "$TMPD/plus" "$TMPD/tree"
layer_mb=$(awk '{s += $1} END {printf "%.1f", s / 1048576}' < <(find "$TMPD/plus/blobs" -newer "$TMPD/base/index.json" -type f -printf '%s\n' | sort -n | tail -1))
# A writable registry serving both.
reg_start --plain --auth none --addr 127.0.0.1 >&2
reg_push "$TMPD/base" ctrun-test/torch:base >&2
reg_push "$TMPD/plus" ctrun-test/torch:plus >&2
rm -rf "$TMPD/base" "$TMPD/plus" "$TMPD/tree"
export CTRUN_REGISTRY_PLAIN_HTTP=$REG_HOST
pull() { CTRUN_REGISTRY_STORE=$TMPD/store "$CTRUN" -q pull "docker://$REG_HOST/ctrun-test/torch:$1"; }
fresh() { rm -rf "$TMPD/store" "$TMPD/copy"; }
stored() { fresh; pull base >/dev/null; }
first_pull() { pull plus; }
reuse() { pull plus; }
no_reuse() { CTRUN_REGISTRY_REUSE=false pull plus; }
copy() { cp "$TMPD"/store/images/sha256-*.sqsh "$TMPD/copy"; }

declare -A t
for ((i = 1; i <= runs; i++)); do
	echo "bench: run $i" >&2
	fresh
	t[first]="${t[first]:-} $(timed first_pull)"
	stored
	rm -rf "$TMPD"/store/blobs/sha256/* # the layer cache emptied, as `ctrun cache gc` does
	t[reuse]="${t[reuse]:-} $(timed reuse)"
	stored
	t[noreuse]="${t[noreuse]:-} $(timed no_reuse)"
	stored
	t[copy]="${t[copy]:-} $(timed copy)"
done
size=$(stat -c %s "$TMPD/copy")
# shellcheck disable=SC2086
ratio() { awk -v a="$(median ${t[$1]})" -v b="$(median ${t[$2]})" 'BEGIN {printf "%.2f", a / b}'; }
row() { # name side what
	# shellcheck disable=SC2086
	echo "| $1 | $(sec "$(median ${t[$2]})") | $(sec "$(minimum ${t[$2]})") | $(for v in ${t[$2]}; do printf '%s ' "$(sec "$v")"; done)| $3 |"
}
cat <<EOF
## Layer reuse: an image one layer away from a stored one (tests/bench/reuse.sh)

The torch test image (3 layers) and torch plus one ${layer_mb} MiB gzip layer (a 10 MiB file
of random bytes, 6 small files: \`tests/images/addlayer.py\`), both in Debian's docker-registry on
this machine (plain HTTP on loopback; the registry serves from the same $(nproc) cores), lz4 (the
default). The stored torch squashfs: $((size / 1048576)) MiB. The sides alternate, $runs runs.
Command: \`CTRUN_BENCHES=reuse.sh make bench\`.

| what | median (s) | min (s) | runs (s) | command |
|---|---:|---:|---|---|
EOF
row "first pull of torch+1 (empty store)" first "\`ctrun pull docker://HOST/ctrun-test/torch:plus\`"
row "pull of torch+1, torch stored (reuse)" reuse "the same after \`ctrun pull ...:base\`, its layer blobs removed"
row "pull of torch+1, torch and its blobs stored, no reuse" noreuse "the same after \`ctrun pull ...:base\`, \`[registry] reuse = false\`"
row "copy of the stored torch squashfs" copy "\`cp STORE/images/sha256-....sqsh X\`"
echo
echo "Reuse / first pull: **$(ratio reuse first)** (target <= 0.2); without reuse, the blobs"
echo "stored: $(ratio noreuse first); the copy alone (the floor of one file per image): $(ratio copy first)."
