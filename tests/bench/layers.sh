#!/bin/bash
# What a layer's shape costs a pull (issue 41, points 1 and 2): images made
# by tests/integration/reg_layers.py, one layer each (gzip), pushed to
# Debian's docker-registry on this machine (plain HTTP on loopback,
# reglib.sh), each pulled into an empty store by `ctrun -q pull` under
# /usr/bin/time (wall seconds, peak memory):
#   links:N   one file and N hard links to it, each carrying data: the case
#             that walked the whole tree per link (N = 10^4, 10^5, 10^6)
#   pairs:N   N files, each followed by a hard link carrying data (the
#             review's 24,000 pairs took 7.4 s)
#   files:N   N empty files with 60-byte names: the tree's memory per name,
#             against what [registry] max_tree counts
# BENCH_BEFORE=PATH also pulls with the ctrun at PATH (a build of the commit
# before) where it finishes within BENCH_BEFORE_MAX members (default 100000).
# Median of $BENCH_RUNS (1) runs.  Root.  Prints a markdown section.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
CTRUN=$repo/build/ctrun runs=${BENCH_RUNS:-1} before=${BENCH_BEFORE:-}
[ "$(id -u)" = 0 ] || { echo "bench: layers.sh needs root" >&2; exit 1; }
TMPD=$(mktemp -d /tmp/ctrun-bench-layers.XXXXXX)
# shellcheck source=../integration/reglib.sh
. "$repo/tests/integration/reglib.sh"
trap 'reg_stop; rm -rf "$TMPD"' EXIT

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
specs=(links:10000 links:100000 links:1000000 pairs:24000 pairs:100000 files:1000000:60)
reg_start --plain --auth none --addr 127.0.0.1 >&2
export CTRUN_REGISTRY_PLAIN_HTTP=$REG_HOST
declare -A gz
for s in "${specs[@]}"; do
	tag=${s//:/-}
	echo "bench: making $s" >&2
	python3 "$repo/tests/integration/reg_layers.py" "$TMPD/img" "$s"
	gz[$s]=$(find "$TMPD/img/blobs" -type f -size +4k -printf '%s\n' | sort -n | tail -1)
	reg_push "$TMPD/img" "ctrun-test/layers:$tag" >&2
	rm -rf "$TMPD/img"
done

# pull BINARY SPEC: "SECONDS PEAK-KIB" of one pull into an empty store.
pull() {
	rm -rf "$TMPD/store"
	CTRUN_REGISTRY_STORE=$TMPD/store CTRUN_REGISTRY_MAX_TREE=0 /usr/bin/time -f '%e %M' \
		-o "$TMPD/time" "$1" -q pull "docker://$REG_HOST/ctrun-test/layers:${2//:/-}" >/dev/null ||
		{ echo "bench: $1 pull of $2 failed" >&2; exit 1; }
	tail -1 "$TMPD/time"
}

# the members of SPEC's layer
count() {
	local k n
	IFS=: read -r k n _ <<<"$1"
	case $k in links) echo $((n + 1)) ;; pairs) echo $((2 * n)) ;; *) echo "$n" ;; esac
}

rows=""
for s in "${specs[@]}"; do
	t=() m=() b=-
	for ((i = 0; i < runs; i++)); do
		read -r sec kib < <(pull "$CTRUN" "$s")
		t+=("$sec") m+=("$kib")
	done
	if [ -n "$before" ] && [ "$(count "$s")" -le "${BENCH_BEFORE_MAX:-100000}" ]; then
		read -r sec _ < <(pull "$before" "$s")
		b="$sec s"
	fi
	echo "bench: $s: ${t[*]} s, ${m[*]} KiB, before: $b" >&2
	rows+="| \`$s\` | $(count "$s") | $((gz[$s] / 1024)) KiB | **$(median "${t[@]}") s** | $(($(median "${m[@]}") / 1024)) MiB | $b |"$'\n'
done

cat <<EOF
## What a layer's shape costs a pull (tests/bench/layers.sh)

Issue 41, points 1 and 2: each image is one gzip layer made by
\`tests/integration/reg_layers.py\` (\`links:N\`: a file and N hard links to it, each
carrying data; \`pairs:N\`: N files each followed by a hard link carrying data;
\`files:N:60\`: N empty files with 60-byte names), served by Debian's docker-registry on
loopback (plain HTTP) and pulled into an empty store by \`ctrun -q pull\` with
\`CTRUN_REGISTRY_MAX_TREE=0\`; wall time and peak memory by \`/usr/bin/time\`, median of
$runs run(s). "Before": the same pull by the build of the commit before the fix, where given.

| layer | members | layer size | ctrun pull | peak memory | before |
|---|---:|---:|---:|---:|---:|
$rows
EOF
