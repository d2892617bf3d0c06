#!/bin/bash
# The first start of a never-pulled reference at scale (issue 22): a test
# cluster of $BENCH_NODES (32) nodes on this machine, Debian's
# docker-registry (plain HTTP) on the cluster's bridge serving the layered
# torch test image (tests/images/build.sh registry).  For n = 1, 2, 4, ...:
#   ctrun    srun -Nn ctrun --image docker://REG/ctrun-test/torch true,
#            into an empty store the nodes share (task 0 resolves and pulls,
#            the others wait for its image);
#   enroot   srun -Nn enroot import docker://REG#ctrun-test/torch on every
#            node (what pyxis does), enroot 4.1.2 from /opt/enroot, up to
#            $BENCH_ENROOT_MAX (4) nodes: each import costs a node's CPU here.
#            Each node's enroot works in its own directory on the machine's
#            disk ($BENCH_ENROOT_DIR, default /var/tmp; removed at the end),
#            not in the node's tmpfs: its unpacked tree and its squashfs of
#            the torch image at once do not fit the tmpfs's 2 GiB;
#   local    the same ctrun step with each node's own store in its tmpfs
#            ([registry] store_shared = false): node 0 pulls, the others get
#            the image down the step's chain (runner/deliver/feed.h), up to
#            $BENCH_LOCAL_MAX (16) nodes: each node's copy lives in this
#            machine's memory (the tmpfs), n copies of the image at once;
#   sbcast   Slurm's own tree: `salloc -Nn sbcast` of node 0's image to
#            every node's tmpfs (the transfer alone, no pull), same bound.
# Wall seconds, and the registry's requests and bytes served (its access
# log).  Prints a markdown section.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
CTRUN=$repo/build/ctrun
max=${BENCH_NODES:-32} enroot_max=${BENCH_ENROOT_MAX:-4} local_max=${BENCH_LOCAL_MAX:-16}
[ "$(id -u)" = 0 ] || { echo "bench: pullscale.sh needs root (the test cluster)" >&2; exit 1; }
"$repo/tests/images/build.sh" registry >&2
export CTRUN_CLUSTER_NAME=ctbp CTRUN_CLUSTER_SUBNET=10.237.0 CTRUN_CLUSTER_PORT_BASE=16817
export CTRUN_CLUSTER_NODES=$max
cluster=$repo/tests/cluster/cluster.sh
TMPD=$(mktemp -d /tmp/ctrun-bench-pullscale.XXXXXX)
chmod 755 "$TMPD"
# enroot's directories, one per node, on the machine's disk (the nodes see the
# machine's file systems except their own tmpfs scratch).
EDIR=$(mktemp -d "${BENCH_ENROOT_DIR:-/var/tmp}/ctrun-bench-enroot.XXXXXX")
chmod 755 "$EDIR"
skip() { echo "bench: $*" >&2; exit 1; }
# shellcheck source=../integration/reglib.sh
. "$repo/tests/integration/reglib.sh"
cleanup() { reg_stop; "$cluster" down >/dev/null 2>&1 || true; rm -rf "$TMPD" "$EDIR"; }
trap cleanup EXIT
"$cluster" down >/dev/null 2>&1 || true
echo "bench: bringing up $max nodes" >&2
"$cluster" up >&2
eval "$("$cluster" env)"
reg_image_storage STORAGE
reg_start --plain --auth none --storage "$STORAGE" >&2
enroot=$(PATH=/opt/enroot/bin:$PATH command -v enroot || true)
ref=ctrun-test/torch:latest
# enroot's import must work against this registry at all (see pull.sh).
# The small busybox image is enough to know (the torch import costs a minute).
enroot_why=""
mkdir -p "$EDIR/config"
if [ -n "$enroot" ] && ! env ENROOT_ALLOW_HTTP=yes ENROOT_CONFIG_PATH="$EDIR/config" \
	ENROOT_CACHE_PATH="$TMPD/e/c" ENROOT_DATA_PATH="$TMPD/e/d" \
	ENROOT_RUNTIME_PATH="$TMPD/e/r" ENROOT_TEMP_PATH="$TMPD" PATH="$(dirname "$enroot"):$PATH" \
	"$enroot" import -o "$TMPD/probe.sqsh" \
	"docker://$REG_HOST#ctrun-test/busybox:latest" > "$TMPD/enroot.err" 2>&1; then
	enroot_why=$(grep -m1 ERROR "$TMPD/enroot.err" || tail -1 "$TMPD/enroot.err")
	enroot=""
fi
rm -rf "$TMPD/e" "$TMPD/probe.sqsh"
scratch=$CTRUN_CLUSTER_SCRATCH

now() { local t=$EPOCHREALTIME; echo "${t/./}"; }
sec() { awk -v u="$1" 'BEGIN {printf "%.1f", u / 1000000}'; }
# Requests and MiB the registry served since line $1 of its access log.
served() {
	tail -n +"$(($1 + 1))" "$REG_ACCESS_LOG" | awk '{
		if (match($0, /" [0-9][0-9][0-9] [0-9]+ /)) { split(substr($0, RSTART + 2), f, " "); b += f[2] }
		n++ } END { printf "%d req, %.0f MiB", n, b / 1048576 }'
}
fresh() {
	rm -rf "$TMPD/store"
	for nd in $CTRUN_CLUSTER_NODE_NAMES; do
		"$cluster" exec "$nd" sh -c "rm -rf '$scratch'/cache '$scratch'/x.sqsh '$scratch'/store"
		rm -rf "${EDIR:?}/$nd"
	done
}
# ctrun_step N STORE SHARED: the first start of the image on N nodes.
ctrun_step() {
	srun -N"$1" --ntasks-per-node=1 env CTRUN_CACHE_DIR="$scratch/cache" \
		CTRUN_REGISTRY_STORE="$2" CTRUN_REGISTRY_STORE_SHARED="$3" \
		CTRUN_REGISTRY_PLAIN_HTTP="$REG_HOST" "$CTRUN" -q --image "docker://$REG_HOST/$ref" -- true >&2
}

cat <<SECTION

## First start from a registry at scale (tests/bench/pullscale.sh)

A test cluster of $max nodes on this one machine ($(nproc) cores; each node a slurmd in its own
namespaces with a node-local tmpfs), Debian's docker-registry on the cluster's bridge serving the
layered torch test image (3 gzip layers). **ctrun**: \`srun -Nn ctrun --image
docker://REG/$ref true\` into an empty store on the shared directory
(\`[registry] store_shared = true\`). **enroot**: \`srun -Nn enroot import
docker://REG#$ref\` on every node (what pyxis does), its cache, data, temporary
directory and image in a directory of its own on the machine's disk (the unpacked tree and the
squashfs at once do not fit a node's 2 GiB tmpfs), enroot $([ -x /opt/enroot/bin/enroot ] && /opt/enroot/bin/enroot version || echo "not installed"), up to
$enroot_max nodes$([ -z "$enroot_why" ] || echo ": not run, its import fails against this registry (\`$enroot_why\`; see the pull section)"). **ctrun local**: the same
ctrun step with each node's own store in its tmpfs (\`[registry] store_shared = false\`): node 0
pulls, the others get the image down the step's chain of nodes, up to $local_max nodes (each
node's copy is in this machine's memory). **sbcast**: \`salloc -Nn sbcast\` of that image to
every node's tmpfs (Slurm's tree, the transfer alone), same bound. Wall seconds; what the
registry served (requests, MiB). Command: \`CTRUN_BENCHES=pullscale.sh make bench\`.

| nodes | ctrun s | ctrun registry | ctrun local s | ctrun local registry | sbcast s | enroot s | enroot registry |
|---|---|---|---|---|---|---|---|
SECTION
for ((n = 1; n <= max; n *= 2)); do
	fresh
	l0=$(wc -l < "$REG_ACCESS_LOG")
	s=$(now)
	ctrun_step "$n" "$TMPD/store" true
	e=$(now)
	c="$(sec $((e - s))) | $(served "$l0")"
	loc="- | - | -"
	if [ "$n" -le "$local_max" ]; then
		fresh # one copy of the image per node at a time: the tmpfs are this machine's memory
		l0=$(wc -l < "$REG_ACCESS_LOG")
		s=$(now)
		ctrun_step "$n" "$scratch/store" false
		e=$(now)
		loc="$(sec $((e - s))) | $(served "$l0")"
		# Slurm's tree: node 0's image to every node's tmpfs.
		n0=${CTRUN_CLUSTER_NODE_NAMES%% *}
		"$cluster" exec "$n0" sh -c "cat '$scratch'/store/images/*.sqsh" > "$TMPD/img.sqsh"
		fresh
		s=$(now)
		if salloc -N"$n" sbcast -f "$TMPD/img.sqsh" "$scratch/x.sqsh" >&2; then
			e=$(now)
			loc="$loc | $(sec $((e - s)))"
		else
			loc="$loc | failed"
		fi
		rm -f "$TMPD/img.sqsh"
	fi
	r="- | -"
	if [ -n "$enroot" ] && [ "$n" -le "$enroot_max" ]; then
		l0=$(wc -l < "$REG_ACCESS_LOG")
		s=$(now)
		fresh
		# Each node's own directory under $EDIR, its image there too (the node's
		# name comes from Slurm; the shell evaluates no string of ours).
		# shellcheck disable=SC2016 # expanded by the node's shell
		srun -N"$n" --ntasks-per-node=1 env ENROOT_ALLOW_HTTP=yes ENROOT_CONFIG_PATH="$EDIR/config" \
			PATH="$(dirname "$enroot"):$PATH" E="$EDIR" ENROOT="$enroot" REF="docker://$REG_HOST#$ref" \
			sh -c 'd=$E/$SLURMD_NODENAME && mkdir -p "$d/cache" "$d/data" "$d/rt" "$d/tmp" &&
				ENROOT_CACHE_PATH=$d/cache ENROOT_DATA_PATH=$d/data ENROOT_RUNTIME_PATH=$d/rt \
				ENROOT_TEMP_PATH=$d/tmp exec "$ENROOT" import -o "$d/x.sqsh" "$REF"' >&2
		e=$(now)
		r="$(sec $((e - s))) | $(served "$l0")"
	fi
	echo "| $n | $c | $loc | $r |"
	echo "bench: $n nodes done" >&2
done
fresh
cat <<'NOTE'

How to read it. ctrun's registry column stays at one image (one manifest, each blob once)
at every node count: task 0 pulls, the others wait for its image in the shared store (5
requests: the manifest, the config, 3 layers), and so does ctrun with node-local stores: node
0 pulls, the other nodes take the image from the step's chain of nodes, never from the registry.
Every node importing (pyxis's model) serves the image n times. All test nodes share the machine's cores, so the
wall times here measure one machine's CPU, not a cluster's.
NOTE
