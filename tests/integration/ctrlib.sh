# Sourced after lib.sh by the container tests: the test images
# (tests/images/build.sh), skipping when one is missing.
# usage: need_image VAR NAME  -> VAR=/path/of/NAME, or skip
need_image() {
	local p
	p=$("$CTRUN_REPO/tests/images/build.sh" path "$2")
	[ -e "$p" ] || skip "test image $2 missing (run: tests/images/build.sh ${2%%[.-]*})"
	printf -v "$1" '%s' "$p"
}
# A node-local cache of this test only (the same path on every node, each
# node's private scratch), removed from every node with the test's files.
# usage: private_node_cache NAME
private_node_cache() {
	export CTRUN_CACHE_DIR=$CTRUN_CLUSTER_SCRATCH/$1
	trap private_node_cache_gone EXIT
}
private_node_cache_gone() {
	local n
	for n in "${NODES[@]}"; do "$CLUSTER" exec "$n" rm -rf "$CTRUN_CACHE_DIR" || true; done
	cleanup_tmp
}
# Container processes left on any node (agents, or runc itself).
assert_no_containers() {
	assert_no_leftovers "/.ctrun/agent" "${1:-10}"
	assert_no_leftovers "runc --root $TMPD" 1
}

# ---- files that test every runtime (t_ctr_identity, t_ctr_bare_image) ----
# Their real-enroot and real-Singularity rows ("enroot: ...",
# "singularity: ...") skip alone on a machine without /opt/enroot or
# /opt/singularity (../shared/tools builds them; tests/skips.allowed has a
# FILE:enroot: and a FILE:singularity: line for each such file); the runs
# go through srun from $TMPD/u, as the test user or as root, with those
# runtimes first on PATH.
# usage: rt_rows_setup USER  (makes $TMPD/u, writable by all; RT_USER=USER)
rt_rows_setup() {
	RT_USER=$1
	mkdir -p "$TMPD/u/stmp"
	chmod 777 "$TMPD/u" "$TMPD/u/stmp"
	# enroot: the nodes' GPUs are fakes (its NVIDIA hook would want
	# nvidia-container-cli); its runtime directory per user.
	RT_ENV="PATH=/opt/enroot/bin:/opt/singularity/bin:$PATH CTRUN_NV=false SINGULARITY_TMPDIR=$TMPD/u/stmp"
}
# with_rt RUNTIME FUNCTION [ARG...]: FUNCTION RUNTIME ARG..., where RUNTIME is installed
with_rt() {
	case $1 in
	enroot) [ -x /opt/enroot/bin/enroot ] ||
		skip "no real enroot in /opt/enroot (../shared/tools/build-enroot.sh builds 4.1.2 there)" ;;
	singularity) [ -x /opt/singularity/bin/singularity ] ||
		skip "no real Singularity in /opt/singularity (../shared/tools/build-singularity.sh builds 3.4.2 there)" ;;
	esac
	local rt=$1 fn=$2
	shift 2
	"$fn" "$rt" "$@"
}
as_user() { # CMD... in $TMPD/u, as the test user
	su "$RT_USER" -s /bin/bash -c "cd '$TMPD/u' && export SLURM_CONF='$SLURM_CONF' $RT_ENV \
		ENROOT_RUNTIME_PATH='$TMPD/u/enroot-run-user' && $(printf '%q ' "$@")"
}
as_root() { # CMD... in $TMPD/u, as root
	(cd "$TMPD/u" && env $RT_ENV ENROOT_RUNTIME_PATH="$TMPD/u/enroot-run-root" "$@")
}
