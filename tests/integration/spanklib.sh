# Sourced after lib.sh (and ctrlib.sh) by the SPANK plugin tests
# (t_spank_*.sh): a cluster of their own whose plugstack.conf loads the
# plugin built for the Slurm on PATH (cluster.sh's CTRUN_CLUSTER_PLUGSTACK),
# so no other test's jobs see the plugin and the machine's /etc/slurm is not
# touched; and the test user's commands.  A plugin is built per Slurm
# release: build/slurm-MAJ.MIN/spank_ctrun.so (the GNUmakefile; `make
# integration` builds one for every Slurm install the runner tests).
#
#   SPANK_RELEASE    MAJ.MIN of the Slurm on PATH (the runner's second
#                    cluster puts its install first)
#   SPANK_PLUGIN     build/slurm-$SPANK_RELEASE/spank_ctrun.so
#   spank_cluster_up [PLUGSTACK-ARGS...]
#       brings the cluster up (torn down at the file's exit) and points
#       SLURM_CONF, CTRUN_CLUSTER_* and NODES at it; the arguments go on
#       the plugin's plugstack line after ctrun=$CTRUN
#   as_user CMD...   CMD in $TMPD as the test user ctrunuser (the job's
#                    user), with the cluster's SLURM_CONF and the run's TMPDIR
SPANK_USER=ctrunuser
# `srun --version`: "slurm-wlm 22.05.8" (Debian's), "slurm 26.05.3".
SPANK_RELEASE=$(srun --version 2>/dev/null | awk '{split($2, v, "."); print v[1] "." v[2]}')
SPANK_PLUGIN=$CTRUN_REPO/build/slurm-$SPANK_RELEASE/spank_ctrun.so
spank_cluster_up() {
	# Every setting of its own: the runner's cluster's (CTRUN_CLUSTER_DIR...)
	# are in the environment, and `down` removes the directory it names.
	export CTRUN_CLUSTER_NAME=ctsp CTRUN_CLUSTER_SUBNET=10.239.0 CTRUN_CLUSTER_PORT_BASE=20817 \
		CTRUN_CLUSTER_DIR=/tmp/ctrun-cluster-ctsp CTRUN_CLUSTER_NODES=2
	export CTRUN_CLUSTER_PLUGSTACK="required $SPANK_PLUGIN ctrun=$CTRUN $*"
	local how=make
	[ -z "${CTRUN_SLURM_PREFIX:-}" ] || how="make spank-releases SLURM_PREFIXES=$CTRUN_SLURM_PREFIX"
	[ -f "$SPANK_PLUGIN" ] ||
		fail "no plugin built for this Slurm ($(srun --version)): ${SPANK_PLUGIN#"$CTRUN_REPO/"} ($how)"
	"$CLUSTER" down > /dev/null 2>&1 || true
	trap spank_cluster_down EXIT
	"$CLUSTER" up > "$TMPD/cluster-up.log" 2>&1 ||
		fail "the SPANK test cluster did not come up: $(tail -5 "$TMPD/cluster-up.log")"
	eval "$("$CLUSTER" env)"
	read -r -a NODES <<<"$CTRUN_CLUSTER_NODE_NAMES"
}
spank_cluster_down() {
	local n
	scancel --quiet --full --user="$SPANK_USER" 2>/dev/null || true
	"$CLUSTER" down > /dev/null 2>&1 || true
	# The plugin's directories of running containers (/run is the
	# machine's, shared by the test nodes).
	for n in "${NODES[@]}"; do rm -rf "/run/ctrun-spank/$n"; done
	rmdir /run/ctrun-spank 2>/dev/null || true
	cleanup_tmp
}
as_user() {
	su "$SPANK_USER" -s /bin/bash -c "cd '$TMPD' && export SLURM_CONF='$SLURM_CONF' \
		TMPDIR='$TMPDIR' && $(printf '%q ' "$@")"
}
# ctrun's run directories of the test user on the machine (/tmp is shared
# with the nodes): none may outlive a step.
assert_no_rundirs() {
	local left
	left=$(find "${TMPDIR:-/tmp}" -maxdepth 2 -name 'ctrun-*.*' -path '*ctrun-1*/*' 2>/dev/null || true)
	[ -z "$left" ] || fail "run directories left: $left"
}
