#!/bin/bash
# First start of an image (issues 11, 20 and 33): `ctrun --image IMG` when
# the node has no unpacked copy, mounted where it lies (--image-mode mount)
# against unpacked first (--image-mode unpack), and, where enroot is
# installed, what `--runtime auto` does on such a node (enroot on PATH),
# ctrun through enroot (what auto took there before issue 33) and enroot's
# own start from the squashfs, side by side in the same run.  Then the
# issue-33 comparison by hyperfine: a new copy of the squashfs, synced
# before every run (--prepare), started by each of them.
# Three states of the image file, each run with a fresh cache:
#   seen      the same file again: its pages (and what the kernel keeps of
#             its loop device and squashfs) are warm from the run before;
#   new       a new copy made and synced before every run, outside the timed
#             command, as a newly pulled or built image is: a new inode, in
#             the page cache from its writing;
#   uncached  a new copy as above, then dropped from the page cache
#             (dd iflag=nocache), as an image a node reads for the first time.
# Two commands: `true` (the time to the first worker's exec, plus the
# clean-up) and `python3 -c 'import torch'` (what a training start reads).
# Root, standalone.  Median and minimum of $BENCH_RUNS (5) runs, the sides
# alternating.  Prints a markdown section.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
CTRUN=$repo/build/ctrun runs=${BENCH_RUNS:-5}
[ "$(id -u)" = 0 ] || { echo "bench: firststart.sh needs root" >&2; exit 1; }
"$repo/tests/images/build.sh" torch >&2
work=$(mktemp -d /tmp/ctrun-bench-first.XXXXXX)
trap 'rm -rf "$work"' EXIT

now() { local t=$EPOCHREALTIME; echo "${t/./}"; } # microseconds
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
minimum() { printf '%s\n' "$@" | sort -n | head -1; }
sec() { awk -v u="$1" 'BEGIN {printf "%.2f", u / 1000000}'; }

# enroot where it is installed (../shared/tools/build-enroot.sh: /opt/enroot).
enroot=$(PATH=/opt/enroot/bin:$PATH command -v enroot || true)
enroot_side() { # image cmd...: microseconds of `enroot start IMAGE CMD`
	local img=$1 s e
	shift
	rm -rf "$work/enroot"
	mkdir -p "$work/enroot/rt" "$work/enroot/cache" "$work/enroot/data"
	s=$(now)
	ENROOT_RUNTIME_PATH=$work/enroot/rt ENROOT_CACHE_PATH=$work/enroot/cache \
		ENROOT_DATA_PATH=$work/enroot/data PATH="$(dirname "$enroot"):$PATH" \
		"$enroot" start "$img" "$@" </dev/null >&2 || { echo "bench: enroot start failed" >&2; exit 1; }
	e=$(now)
	echo $((e - s))
}

# A node with enroot installed: its directory first on PATH.
with_enroot=$PATH
[ -z "$enroot" ] || with_enroot=$(dirname "$enroot"):$PATH
run_side() { # mode image cmd...: microseconds of one start with a fresh cache
	# mode: unpack or mount (--image-mode), auto (no option, enroot on
	# PATH) or enroot (--runtime enroot)
	local mode=$1 img=$2 s e path=$PATH opts
	shift 2
	case $mode in
	unpack | mount) opts=(--image-mode "$mode") ;;
	auto) opts=() path=$with_enroot ;;
	enroot) opts=(--runtime enroot) path=$with_enroot ;;
	esac
	rm -rf "$work/cache" "$work/enroot"
	mkdir -p "$work/enroot/rt"
	s=$(now)
	PATH=$path CTRUN_CACHE_DIR=$work/cache ENROOT_RUNTIME_PATH=$work/enroot/rt \
		"$CTRUN" -q "${opts[@]}" --image "$img" -- "$@" </dev/null >&2 ||
		{ echo "bench: ctrun ${opts[*]:-(auto)} failed" >&2; exit 1; }
	e=$(now)
	echo $((e - s))
}

image_for() { # STATE IMAGE: the file a run in STATE starts from, made before the timed command
	local state=$1 img=$2 f
	if [ "$state" = seen ]; then
		echo "$img"
		return
	fi
	f=$work/new.${img##*.}
	rm -f "$f"
	cp "$img" "$f"
	sync "$f" # written out, so that nothing dirty stays for dd to keep
	# fincore: what of the file the page cache holds when the run starts.
	[ "$state" = new ] || dd if="$f" iflag=nocache count=0 status=none
	echo "bench: $state copy, $(fincore -nb -o RES "$f") of $(stat -c %s "$f") bytes in the page cache" >&2
	echo "$f"
}

cell() { # MICROSECONDS...: "median (min)", or - for none
	if [ $# -eq 0 ]; then echo "-"; else echo "$(sec "$(median "$@")") ($(sec "$(minimum "$@")"))"; fi
}

cat <<SECTION

## First start of an image (tests/bench/firststart.sh)

\`ctrun -q --image-mode MODE --image IMG -- CMD\` as root, standalone, with no unpacked copy of
the image on the node (a fresh cache directory every run), on $(nproc) cores ($(uname -r)).
**mount**: the squashfs (or the SIF's squashfs partition) mounted where it lies (kernel
squashfs on a loop device, in the image holder's private namespace); **unpack**: unsquashfs
into the node cache first (what every first start cost before). \`true\` measures the time to
the first worker's exec plus the clean-up; \`import torch\` what a training script reads at
start. Median (min) of $runs runs, sides alternating. The image file, per run:

- **seen**: the same file again (fresh cache only): its pages, and what the kernel keeps of
  its loop device and squashfs, are warm from the run before;
- **new**: a never-seen image: a new copy, made and synced before every run, outside the timed
  command, as a newly pulled or built image is (in the page cache from its writing);
- **uncached**: a never-seen image a node reads for the first time: a new copy as above, then
  dropped from the page cache (\`dd iflag=nocache count=0\`; \`fincore\` says how much was left).

Unpack reads and decompresses the whole file whatever its state, so it runs on the seen file only.

| image | command | image file | unpack median (min) s | mount median (min) s | auto, enroot installed median (min) s | ctrun --runtime enroot median (min) s | enroot start median (min) s | auto / enroot start |
|---|---|---|---|---|---|---|---|---|
SECTION
for img in torch.sqsh torch.sif; do
	path=$("$repo/tests/images/build.sh" path "$img")
	[ -e "$path" ] || continue
	cat "$path" > /dev/null
	for cmd in true torch; do
		args=(true)
		[ $cmd = torch ] && args=(python3 -c 'import torch')
		label='`true`'
		[ $cmd = torch ] && label='`import torch`'
		for state in seen new uncached; do
			u=() m=() a=() r=() n=()
			for ((i = 0; i < runs; i++)); do
				[ $state != seen ] || u+=("$(run_side unpack "$path" "${args[@]}")")
				m+=("$(run_side mount "$(image_for $state "$path")" "${args[@]}")")
				[ $state != uncached ] ||
					echo "bench: that start read $(fincore -nb -o RES "$work/new.${img##*.}") bytes of the copy" >&2
				[ -z "$enroot" ] || a+=("$(run_side auto "$(image_for $state "$path")" "${args[@]}")")
				[ -z "$enroot" ] || [ "$img" != torch.sqsh ] ||
					r+=("$(run_side enroot "$(image_for $state "$path")" "${args[@]}")")
				[ -z "$enroot" ] || [ "$img" != torch.sqsh ] ||
					n+=("$(enroot_side "$(image_for $state "$path")" "${args[@]}")")
			done
			rm -f "$work/new.${img##*.}"
			ratio="-"
			[ ${#n[@]} -eq 0 ] ||
				ratio=$(awk -v a="$(median "${a[@]}")" -v b="$(median "${n[@]}")" 'BEGIN {printf "%.2f", a / b}')
			echo "| $img | $label | $state | $(cell "${u[@]}") | $(cell "${m[@]}") | $(cell "${a[@]}") | $(cell "${r[@]}") | $(cell "${n[@]}") | $ratio |"
			echo "bench: $img $cmd $state: unpack ${u[*]:-} / mount ${m[*]} / auto ${a[*]:-} / ctrun-enroot ${r[*]:-} / enroot ${n[*]:-} (µs)" >&2
		done
	done
done
echo
if [ -n "$enroot" ]; then
	echo "**enroot start**: \`enroot start IMG CMD\` of enroot $("$enroot" version) from the squashfs itself"
	echo "(it mounts it with squashfuse), fresh enroot directories every run, in the same loop as"
	echo "ctrun's runs. It cannot start a SIF. **auto, enroot installed**: \`ctrun -q --image IMG -- CMD\`"
	echo "with \`$(dirname "$enroot")\` first on PATH, as on a node with enroot installed (every pyxis"
	echo "site); with enroot's own configuration there (as installed) it takes"
	for img in torch.sqsh torch.sif; do
		path=$("$repo/tests/images/build.sh" path "$img")
		[ -e "$path" ] || continue
		echo "\`$(PATH=$with_enroot "$CTRUN" --dry-run --image "$path" -- true 2>/dev/null |
			sed -n 's/^# container: runtime \([^ ]*\) .*/\1/p')\` for $img,"
	done
	echo "and says so with -v (docs/containers.md, \"Runtimes\"). **ctrun --runtime enroot**: ctrun through"
	echo "enroot's own start of the file, what auto took on such a node before issue 33."
else
	echo "enroot is not installed on this machine (\`../shared/tools/build-enroot.sh\` builds 4.1.2), so"
	echo "its own start from the squashfs is not measured side by side in this run."
fi
cat <<'TAIL'

Until issue 20 this section measured the **seen** state only and called it a never-seen image:
0.07 s (mount, `true`, torch.sqsh; the SIF 0.06 s) against 0.26 s for enroot start. That file
had been read whole before the first run and by every run before, so its pages were warm, and
a fresh cache directory alone does not make an image new. The **new** and **uncached** rows
measure a never-seen image; set them against the **seen** rows for what the warm file was worth.
Issue 20 reported 0.225 s for ctrun on a new copy against 0.221 s for enroot start; the run of
2026-11-25 reproduced enroot's figure but not ctrun's: its mount start took the same
0.05-0.06 s for a seen, a new and an uncached file. An uncached start read 5.7 MiB of the 451 MiB
file for `true` and 250 MiB for `import torch` (fincore after the run, in the bench's log); this
machine's disk is virtual, so a read the page cache misses may still be served from the host's.

A warm start (an unpacked entry exists) uses that entry, not a mount (container.sh): its
`import torch` reads files already decompressed, where a mount decompresses again what
each run reads (the squashfs page cache goes with the mount).
TAIL

# ---- issue 33 by hyperfine: a never-seen torch squashfs on a node with enroot ----
sqsh=$("$repo/tests/images/build.sh" path torch.sqsh)
if [ -z "$enroot" ] || ! command -v hyperfine > /dev/null || [ ! -e "$sqsh" ]; then
	echo
	echo "(The hyperfine comparison of issue 33 needs enroot, hyperfine and torch.sqsh: not run.)"
	exit 0
fi
hf_runs=${BENCH_HF_RUNS:-10}
hf_torch=$((hf_runs / 2 > 2 ? hf_runs / 2 : 2))
new=$work/hf.sqsh
# Debian's PATH, with enroot's directory first on a node with enroot installed.
base=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
with=$(dirname "$enroot"):$base
env_ctrun="env CTRUN_CACHE_DIR=$work/cache ENROOT_RUNTIME_PATH=$work/enroot/rt"
env_enroot="env ENROOT_RUNTIME_PATH=$work/enroot/rt ENROOT_CACHE_PATH=$work/enroot/cache ENROOT_DATA_PATH=$work/enroot/data"
prep="rm -rf $work/cache $work/enroot && mkdir -p $work/enroot/rt $work/enroot/cache $work/enroot/data && rm -f $new && cp $sqsh $new && sync $new"
names=("ctrun, auto, enroot installed" "ctrun --runtime enroot (auto before issue 33)" "enroot start"
	"ctrun, auto, no enroot on PATH")
hf() { # RUNS LABEL CMD...: hyperfine over the four starts of $new running CMD; a table row each
	local runs=$1 label=$2 cmds=() args=() i
	shift 2
	cmds=("$env_ctrun PATH=$with $CTRUN -q --image $new -- $*"
		"$env_ctrun PATH=$with $CTRUN -q --runtime enroot --image $new -- $*"
		"$env_enroot PATH=$with $enroot start $new $*"
		"$env_ctrun PATH=$base $CTRUN -q --image $new -- $*")
	for i in "${!cmds[@]}"; do args+=(-n "${names[$i]}" "${cmds[$i]}"); done
	# -N runs --prepare without a shell too: give it one.
	hyperfine -N --style none --runs "$runs" --prepare "sh -c '$prep'" --export-json "$work/hf.json" \
		"${args[@]}" >&2
	for i in "${!cmds[@]}"; do
		/usr/bin/python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))["results"][int(sys.argv[2])]
print("%.3f ± %.3f | %.3f | %.3f–%.3f" % (r["mean"], r["stddev"], r["median"], r["min"], r["max"]))' \
			"$work/hf.json" "$i" | sed "s#^#| ${names[$i]} | $label | \`${cmds[$i]//|/\\|}\` | #; s#\$# |#"
	done
}
cat <<HEAD

### Issue 33: \`--runtime auto\` on a node with enroot installed, by hyperfine

The torch squashfs ($(stat -c %s "$sqsh") bytes), a new copy made and synced before every
run (outside the timed command: \`--prepare "sh -c '$prep'"\`), fresh ctrun and enroot
directories; \`hyperfine -N --runs $hf_runs\` (\`import torch\`: $hf_torch), as root,
standalone, enroot $("$enroot" version).

| start | command | exactly | mean ± sd s | median s | min–max s |
|---|---|---|---|---|---|
HEAD
hf "$hf_runs" '`true`' true
hf "$hf_torch" '`import torch`' python3 -c "'import torch'"
