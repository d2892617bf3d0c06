#!/bin/bash
# Issue 31: `srun -N2 --ntasks-per-node=2 --container-image=IMG true` through
# ctrun's SPANK plugin against NVIDIA's pyxis 0.24 + enroot 4.1.2, side by
# side in one run, as the test user.  Each side has a 2-node cluster of its
# own (two plugins that both register --container-image cannot share a
# plugstack.conf), all up at once, runs alternating:
#   ctrun           build/slurm-MAJ.MIN/spank_ctrun.so, ctrun's defaults
#   pyxis           spank_pyxis.so built here from $PYXIS_GIT at $PYXIS_REF
#                   (a git directory of github.com/NVIDIA/pyxis, v0.24.0;
#                   never installed: built into this run's temporary
#                   directory, against the Slurm on PATH's headers), enroot from
#                   /opt/enroot first on slurmd's PATH (pyxis runs `enroot`
#                   from there); pyxis's defaults: `enroot create` unpacks
#                   the squashfs into a container, then `enroot start`
#   pyxis+squashfuse  the same with use_squashfuse=1: enroot starts the
#                   squashfs itself (squashfuse), nothing unpacked
#   srun            no container: what Slurm itself takes, on ctrun's cluster
# enroot's directories (XDG_RUNTIME_DIR, XDG_DATA_HOME, XDG_CACHE_HOME in
# the job's environment, which pyxis passes to enroot) are on each node's
# local scratch (a tmpfs), as a site puts them on node-local storage.
# Images: busybox.sqsh (1 MB: the fixed cost) and torch.sqsh (451 MiB,
# Debian + python3-torch), as copies without device nodes (nodev below).  States of the image file:
#   warm  the same file as the run before (a first run, not counted, read it):
#         the image on the node
#   cold  a never-seen copy: a new file for every run, written, synced and
#         dropped from the page cache (dd iflag=nocache) before the timed
#         command, as a node reads a newly pulled image the first time
# Median and minimum of $BENCH_RUNS (5) runs ($BENCH_RUNS_SLOW, 3, for
# pyxis's unpack of torch.sqsh: ~30 s each).  Root.  Prints a markdown
# section.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
CTRUN=$repo/build/ctrun runs=${BENCH_RUNS:-5} slow_runs=${BENCH_RUNS_SLOW:-3}
PYXIS_GIT=${PYXIS_GIT:-/work/.mirror/NVIDIA+pyxis/repo} PYXIS_REF=${PYXIS_REF:-v0.24.0}
ENROOT_PREFIX=${ENROOT_PREFIX:-/opt/enroot}
cluster=$repo/tests/cluster/cluster.sh
[ "$(id -u)" = 0 ] || { echo "bench: spank.sh needs root" >&2; exit 1; }
user=$("$repo/tests/cluster/ensure-user.sh")
"$repo/tests/images/build.sh" busybox torch >&2
rel=$(slurmctld -V | awk '{split($2, v, "."); print v[1] "." v[2]}')
plugin=$repo/build/slurm-$rel/spank_ctrun.so
[ -f "$plugin" ] || { echo "bench: no $plugin (make)" >&2; exit 1; }

work=$(mktemp -d /tmp/ctrun-bench-spank.XXXXXX)
chmod 755 "$work"
# name subnet port: one cluster per side.
sides=(ctrun pyxis pyxis+squashfuse)
declare -A cname=([ctrun]=ctbs [pyxis]=ctbp [pyxis+squashfuse]=ctbq)
declare -A csub=([ctrun]=10.240.0 [pyxis]=10.241.0 [pyxis+squashfuse]=10.242.0)
declare -A cport=([ctrun]=26817 [pyxis]=27317 [pyxis+squashfuse]=27817)
down_all() {
	local s
	for s in "${sides[@]}"; do CTRUN_CLUSTER_NAME=${cname[$s]} "$cluster" down >/dev/null 2>&1 || true; done
	# The plugin's directories of running containers (/run is the machine's).
	rm -rf "/run/ctrun-spank/${cname[ctrun]}n1" "/run/ctrun-spank/${cname[ctrun]}n2"
	rmdir /run/ctrun-spank 2>/dev/null || true
}
down_all
trap 'down_all; rm -rf "$work"' EXIT

# pyxis, built from its source into $work (nothing installed), against the
# Slurm on PATH's header as ctrun's plugin is.
pyxis_so='' pyxis_ver='' pyxis_why=''
if ! git --git-dir="$PYXIS_GIT" rev-parse --verify -q "$PYXIS_REF^{commit}" >/dev/null 2>&1; then
	pyxis_why="no $PYXIS_REF in $PYXIS_GIT (PYXIS_GIT: a git directory of github.com/NVIDIA/pyxis)"
elif [ ! -x "$ENROOT_PREFIX/bin/enroot" ]; then
	pyxis_why="no enroot in $ENROOT_PREFIX (../shared/tools/build-enroot.sh builds 4.1.2 there)"
else
	mkdir "$work/pyxis"
	git --git-dir="$PYXIS_GIT" archive "$PYXIS_REF" | tar -x -C "$work/pyxis"
	if make -C "$work/pyxis" -j2 >"$work/pyxis.log" 2>&1; then
		pyxis_so=$work/pyxis/spank_pyxis.so
		pyxis_ver="$PYXIS_REF ($(git --git-dir="$PYXIS_GIT" rev-parse --short "$PYXIS_REF^{commit}"))"
		chmod -R a+rX "$work/pyxis"
	else
		pyxis_why="pyxis did not build: $(tail -1 "$work/pyxis.log")"
	fi
fi
[ -z "$pyxis_why" ] || { echo "bench: $pyxis_why: pyxis's columns are not measured" >&2; sides=(ctrun); }

# Each side's cluster; a per-side file of what its srun needs.
mkdir -m 1777 "$work/pyxis-run"
for s in "${sides[@]}"; do
	case $s in
	ctrun) stack="required $plugin ctrun=$CTRUN" path=$PATH ;;
	pyxis) stack="required $pyxis_so runtime_path=$work/pyxis-run" path=$ENROOT_PREFIX/bin:$PATH ;;
	pyxis+squashfuse) stack="required $pyxis_so runtime_path=$work/pyxis-run use_squashfuse=1"
		path=$ENROOT_PREFIX/bin:$PATH ;;
	esac
	echo "bench: cluster ${cname[$s]}: $stack" >&2
	PATH=$path CTRUN_CLUSTER_NAME=${cname[$s]} CTRUN_CLUSTER_SUBNET=${csub[$s]} \
		CTRUN_CLUSTER_PORT_BASE=${cport[$s]} CTRUN_CLUSTER_PLUGSTACK=$stack "$cluster" up >/dev/null
	# The job's environment (srun exports it): enroot's directories on the
	# node's scratch (same path on every node, each node's own tmpfs).
	scratch=$(CTRUN_CLUSTER_NAME=${cname[$s]} "$cluster" env | sed -n 's/^export CTRUN_CLUSTER_SCRATCH=//p')
	{
		CTRUN_CLUSTER_NAME=${cname[$s]} "$cluster" env | grep '^export SLURM_CONF='
		echo "export XDG_RUNTIME_DIR=$scratch/xdg-run XDG_DATA_HOME=$scratch/xdg-data XDG_CACHE_HOME=$scratch/xdg-cache"
		# enroot on the job's PATH too (pyxis runs it with slurmstepd's).
		echo "export PATH=$path"
	} >"$work/env-${cname[$s]}"
	# srun's errors, written by the user.
	: >"$work/err-${cname[$s]}"
	chown "$user" "$work/err-${cname[$s]}"
done
chmod 644 "$work"/env-*

now() { local t=$EPOCHREALTIME; echo "${t/./}"; } # microseconds
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
minimum() { printf '%s\n' "$@" | sort -n | head -1; }
sec() { awk -v u="$1" 'BEGIN {printf "%.3f", u / 1000000}'; }
cell() { if [ $# -eq 0 ]; then echo "-"; else echo "$(sec "$(median "$@")") ($(sec "$(minimum "$@")"))"; fi; }

# one SIDE IMAGE [--no-container]: microseconds of the user's srun, timed
# in the user's own shell (su's start is not counted).
one() {
	local s=$1 img=$2 opt="--container-image=$2"
	[ "${3:-}" != --no-container ] || opt=
	su "$user" -s /bin/bash -c ". $work/env-${cname[$s]} && cd $work && s=\$EPOCHREALTIME &&
		srun -N2 --ntasks-per-node=2 $opt true </dev/null >/dev/null 2>>$work/err-${cname[$s]} &&
		e=\$EPOCHREALTIME && echo \$((\${e/./} - \${s/./}))" ||
		{ echo "bench: $s: srun --container-image=$img failed: $(tail -3 "$work/err-${cname[$s]}")" >&2; exit 1; }
}
# copy IMAGE: a never-seen copy, written, synced and out of the page cache.
n_copy=0
copy() {
	local f=$work/cold-$((n_copy += 1)).sqsh
	cp "$1" "$f"
	chmod 644 "$f"
	sync "$f"
	dd if="$f" iflag=nocache count=0 status=none
	echo "$f"
}

# The test images without their device nodes (debootstrap's /dev/null...,
# busybox's /dev/null for the unprivileged-unpack tests): enroot create
# unsquashes as the user, cannot make them and fails (a registry's image has
# none).  Both sides run these copies.
nodev() {
	local r=$work/nodev-root
	unsquashfs -no-progress -d "$r" "$("$repo/tests/images/build.sh" path "$1")" >/dev/null
	find "$r" \( -type c -o -type b -o -type p \) -delete
	mksquashfs "$r" "$work/$1" -noappend -quiet -no-progress >/dev/null
	chmod 644 "$work/$1"
	rm -rf "$r"
}

declare -A res
for name in busybox.sqsh torch.sqsh; do
	nodev "$name"
	img=$work/$name
	for s in "${sides[@]}"; do one "$s" "$img" >/dev/null; done # warm-up: the image on the nodes
	for state in warm cold; do
		for ((i = 0; i < runs; i++)); do
			res[srun,$name,$state]+=" $(one ctrun "$img" --no-container)"
			for s in "${sides[@]}"; do
				[ "$s" != pyxis ] || [ "$name" != torch.sqsh ] || [ "$i" -lt "$slow_runs" ] || continue
				f=$img
				[ $state = warm ] || f=$(copy "$img")
				res[$s,$name,$state]+=" $(one "$s" "$f")"
				[ $state = warm ] || rm -f "$f"
			done
		done
		for s in srun "${sides[@]}"; do echo "bench: $name $state $s:${res[$s,$name,$state]} (µs)" >&2; done
	done
done

ratio() { # A B: median(A) / median(B)
	# shellcheck disable=SC2086
	awk -v a="$(median $1)" -v b="$(median $2)" 'BEGIN {printf "%.2f", a / b}'
}
cat <<SECTION

## srun --container-image: ctrun's SPANK plugin against pyxis (tests/bench/spank.sh)

\`srun -N2 --ntasks-per-node=2 --container-image=IMG true\` as the test user on this machine's
2-node test clusters (Slurm $(slurmctld -V | awk '{print $2}'), $(nproc) cores, one cluster per side, all up at once,
runs alternating), timed around srun in the user's shell. **ctrun**: build/spank_ctrun.so
(\`ctrun __hold\` per node, the tasks join its container; ctrun's default runtime for it here: crun (auto's choice for \`ctrun __hold\`),
rootless, the squashfs mounted with squashfuse). **pyxis**: pyxis ${pyxis_ver:-(not built)} built
from source in the run, enroot $("$ENROOT_PREFIX/bin/enroot" version 2>/dev/null || echo "(none)")
on slurmd's PATH, enroot's directories on the node's local scratch (tmpfs); its default
imports a squashfs with \`enroot create\` (unsquashfs into a container directory) and then
\`enroot start\`s it; **pyxis+squashfuse** (\`use_squashfuse=1\` on its plugstack line) starts
the squashfs directly. **srun**: the same srun without a container. Both sides run copies
of the test images without device nodes (enroot create, as the user, fails on them). **warm**: the file the run
before used (the image on the node); **cold**: a never-seen copy per run, synced and dropped
from the page cache before the timed command. Median (min) of $runs runs in seconds
($slow_runs for pyxis's unpack of torch.sqsh).

| image | state | srun | ctrun | pyxis | pyxis+squashfuse | ctrun / pyxis | ctrun / pyxis+squashfuse |
|---|---|---|---|---|---|---|---|
SECTION
for name in busybox.sqsh torch.sqsh; do
	for state in warm cold; do
		r1="-" r2="-"
		# shellcheck disable=SC2086
		if [ -n "$pyxis_so" ]; then
			r1=$(ratio "${res[ctrun,$name,$state]}" "${res[pyxis,$name,$state]}")
			r2=$(ratio "${res[ctrun,$name,$state]}" "${res[pyxis+squashfuse,$name,$state]}")
		fi
		# shellcheck disable=SC2086
		echo "| $name | $state | $(cell ${res[srun,$name,$state]}) | $(cell ${res[ctrun,$name,$state]}) |" \
			"$(cell ${res[pyxis,$name,$state]:-}) | $(cell ${res[pyxis+squashfuse,$name,$state]:-}) | $r1 | $r2 |"
	done
done
echo
[ -n "$pyxis_so" ] || echo "pyxis is not measured in this run: $pyxis_why."
