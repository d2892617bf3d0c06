#!/bin/bash
# Pulling from a registry (issue 21): the layered torch test image (3 layers:
# Debian, python3, torch) from a real docker-registry on this machine
# (plain HTTP on loopback, tests/integration/reglib.sh, the storage that
# `tests/images/build.sh registry` pushed) into a squashfs:
#   ctrun pull        into a fresh store each run (download, verify, stream into a squashfs);
#   enroot import     docker://, into a fresh .sqsh (enroot 4.1.2 where /opt/enroot has it);
#   skopeo copy       to a directory: the download alone;
#   decompress        one pass over the downloaded layers (pigz -dc, zlib's inflate, one
#                     thread per layer in turn): with the download, the floor of any pull
#                     that must read every file of the image (issue 32's target: <= 2x).
# Then the first start from a never-pulled reference: `ctrun --image
# docker://REF true` against `enroot import` + `enroot start`.  Root.
# Median and minimum of $BENCH_RUNS (3) runs, the sides alternating.
# Prints a markdown section.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
CTRUN=$repo/build/ctrun runs=${BENCH_RUNS:-3}
[ "$(id -u)" = 0 ] || { echo "bench: pull.sh needs root" >&2; exit 1; }
"$repo/tests/images/build.sh" registry >&2
TMPD=$(mktemp -d /tmp/ctrun-bench-pull.XXXXXX)
skip() { echo "bench: $*" >&2; exit 1; }
# shellcheck source=../integration/reglib.sh
. "$repo/tests/integration/reglib.sh"
trap 'reg_stop; rm -rf "$TMPD"' EXIT
reg_image_storage STORAGE
reg_start --plain --auth none --addr 127.0.0.1 --storage "$STORAGE" >&2
ref=ctrun-test/torch:latest

now() { local t=$EPOCHREALTIME; echo "${t/./}"; }
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
minimum() { printf '%s\n' "$@" | sort -n | head -1; }
sec() { awk -v u="$1" 'BEGIN {printf "%.1f", u / 1000000}'; }
timed() { # command...: microseconds, the command's output to stderr
	local s e
	sync
	s=$(now)
	"$@" </dev/null >&2 || { echo "bench: failed: $*" >&2; exit 1; }
	e=$(now)
	echo $((e - s))
}
fresh() { rm -rf "$TMPD/out"; mkdir -p "$TMPD/out"; }

enroot=$(PATH=/opt/enroot/bin:$PATH command -v enroot || true)
enroot_env() {
	env ENROOT_RUNTIME_PATH="$TMPD/out/rt" ENROOT_CACHE_PATH="$TMPD/out/cache" \
		ENROOT_DATA_PATH="$TMPD/out/data" ENROOT_TEMP_PATH="$TMPD/out" ENROOT_ALLOW_HTTP=yes \
		PATH="$(dirname "${enroot:-/x}"):$PATH" "$@"
}
ctrun_pull() { CTRUN_REGISTRY_STORE=$TMPD/out/store CTRUN_REGISTRY_PLAIN_HTTP=$REG_HOST \
	"$CTRUN" -q pull "docker://$REG_HOST/$ref"; }
enroot_import() { enroot_env "$enroot" import -o "$TMPD/out/torch.sqsh" "docker://$REG_HOST#$ref"; }
skopeo_copy() { reg_skopeo copy --quiet --src-tls-verify=false "docker://$REG_HOST/$ref" "dir:$TMPD/out/dir"; }
# The layers as skopeo downloads them (kept outside out/ for the decompress side).
layers=$TMPD/layers
decompress() { for l in "$layers"/*; do pigz -dc < "$l" > /dev/null; done; }
# ctrun's own CPU seconds (user + system, its threads included), per pull.
ctrun_pull_cpu() { /usr/bin/time -a -o "$TMPD/cpu" -f "%U %S" env CTRUN_REGISTRY_STORE=$TMPD/out/store \
	CTRUN_REGISTRY_PLAIN_HTTP=$REG_HOST "$CTRUN" -q pull "docker://$REG_HOST/$ref"; }
ctrun_start() { CTRUN_REGISTRY_STORE=$TMPD/out/store CTRUN_REGISTRY_PLAIN_HTTP=$REG_HOST \
	CTRUN_CACHE_DIR=$TMPD/out/cache "$CTRUN" -q --image "docker://$REG_HOST/$ref" -- true; }
enroot_start() { enroot_import && enroot_env "$enroot" start "$TMPD/out/torch.sqsh" true; }

# enroot's import must work against this registry at all: its first manifest
# request accepts only lists and indexes, which distribution 2.8 answers by
# converting to schema 1, and that needs the config's history.
enroot_why=""
if [ -n "$enroot" ]; then
	fresh
	if ! enroot_env "$enroot" import -o "$TMPD/out/probe.sqsh" "docker://$REG_HOST#$ref" > "$TMPD/enroot.err" 2>&1; then
		enroot_why=$(grep -m1 ERROR "$TMPD/enroot.err" || tail -1 "$TMPD/enroot.err")
		enroot=""
	fi
fi
mkdir -p "$layers"
reg_skopeo copy --quiet --src-tls-verify=false "docker://$REG_HOST/$ref" "dir:$TMPD/dl"
for f in "$TMPD"/dl/*; do
	case $(head -c 2 "$f" | od -An -tx1 | tr -d ' ') in 1f8b) mv "$f" "$layers/" ;; esac
done
rm -rf "$TMPD/dl"
sides="ctrun_pull skopeo_copy decompress ctrun_start"
[ -n "$enroot" ] && sides="ctrun_pull enroot_import skopeo_copy decompress ctrun_start enroot_start"
declare -A t
for ((i = 1; i <= runs; i++)); do
	for s in $sides; do
		fresh
		echo "bench: $s run $i" >&2
		t[$s]="${t[$s]:-} $(timed "$s")"
	done
done
for ((i = 1; i <= runs; i++)); do
	fresh
	ctrun_pull_cpu >/dev/null
done
cpu=$(awk '{print ($1 + $2) * 1000000}' "$TMPD/cpu")
size=$(du -sb "$(CTRUN_REGISTRY_STORE=$TMPD/out/store CTRUN_REGISTRY_PLAIN_HTTP=$REG_HOST "$CTRUN" -q pull "docker://$REG_HOST/$ref")" | cut -f1)
blobs=$(du -sb "$TMPD/out/store/blobs" | cut -f1)
unpacked=$(for l in "$layers"/*; do pigz -dc < "$l"; done | wc -c)
# shellcheck disable=SC2086
ratio() { awk -v a="$(median ${t[$1]})" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
# shellcheck disable=SC2086
floor=$(( $(median ${t[skopeo_copy]}) + $(median ${t[decompress]}) ))

row() { # name side what
	# shellcheck disable=SC2086
	echo "| $1 | $(sec "$(median ${t[$2]})") | $(sec "$(minimum ${t[$2]})") | $(for v in ${t[$2]}; do printf '%s ' "$(sec "$v")"; done)| $3 |"
}
cat <<EOF
## Pull from a registry

The layered torch test image (\`ctrun-test/torch:latest\`: 3 gzip layers, $((blobs / 1048576)) MiB
downloaded, $((unpacked / 1048576)) MiB of tar, a $((size / 1048576)) MiB squashfs) from Debian's docker-registry on this machine
(plain HTTP on loopback; the registry serves from the same $(nproc) cores), each run into a fresh store or file, the sides alternating,
$runs runs. Command: \`CTRUN_BENCHES=pull.sh make bench\` (tests/bench/pull.sh).

| what | median (s) | min (s) | runs (s) | command |
|---|---:|---:|---|---|
EOF
row "ctrun pull" ctrun_pull "\`ctrun pull docker://HOST/$ref\`"
[ -z "$enroot" ] || row "enroot import" enroot_import "\`enroot import -o x.sqsh docker://HOST#$ref\` (enroot $("$enroot" version))"
row "skopeo copy (download only)" skopeo_copy "\`skopeo copy docker://HOST/$ref dir:DIR\`"
row "decompress (one pass over the layers)" decompress "\`pigz -dc LAYER > /dev/null\` for each layer"
row "first start, ctrun" ctrun_start "\`ctrun --image docker://HOST/$ref true\`"
[ -z "$enroot" ] || row "first start, enroot" enroot_start "\`enroot import\` + \`enroot start x.sqsh true\`"
echo
echo "The floor (download + one decompression pass): $(sec "$floor") s. ctrun pull / floor:"
echo "**$(ratio ctrun_pull "$floor")** (target <= 2)$([ -z "$enroot" ] || echo "; ctrun pull / enroot import: **$(awk -v a="$(median ${t[ctrun_pull]})" -v b="$(median ${t[enroot_import]})" 'BEGIN {printf "%.2f", a / b}')** (target <= 0.3)")."
echo "ctrun's own CPU time per pull (user + system, all its threads): $(sec "$(median $cpu)") s median,"
echo "on $(nproc) cores that the registry's server (and, in the skopeo side, skopeo) share."
if [ -n "$enroot_why" ]; then
	echo
	echo "enroot $(/opt/enroot/bin/enroot version) is installed, but its import failed against this registry, so its"
	echo "sides were not run: \`$enroot_why\`. Its first manifest request accepts only manifest lists"
	echo "and indexes (src/docker.sh); distribution 2.8 then converts the image's manifest to schema 1,"
	echo "which needs the config's \`history\` (tests/images/mkhistory.py gives the registry's images one:"
	echo "an older registry set, \`tests/images/build.sh registry\` rebuilds it)."
elif [ -z "$enroot" ]; then
	echo; echo "No enroot in /opt/enroot on this machine: its sides were not run."
fi
