#!/bin/bash
# A SIF that Singularity built keeps its environment in
# /.singularity.d/env/*.sh (10-docker2singularity.sh: the Docker ENV;
# 90-environment.sh: the definition's %environment, any shell; 99-base.sh:
# /.singularity.d/libs), which only apptainer's exec action sources.  Under
# the OCI runtime (runc) the agent sources them with the image's /bin/sh, so
# the workers on every node see what apptainer's would: PATH and
# LD_LIBRARY_PATH built by the scripts in name order, the Docker ENV, the
# %environment's computed values; the worker's command is found on that PATH.
# The image wins over the host's variables (PS1, which 99-base.sh sets), a
# host variable the image does not set passes, --env wins over the image, whether the
# SIF is mounted or unpacked.  `ctrun shell` (no agent) runs its command
# through the same scripts.  The expected values are the image recipe's
# (tests/images/sif.sh: sif_docker_env, sif_environment) as sh evaluates it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
need_image SIF busybox-singularity.sif
private_node_cache ctsif-cache
cd "$TMPD"

# One line per rank, the variables between bars.
# shellcheck disable=SC2016
show='printf "%s|%s|%s|%s|%s|%s|%s|%s|\n" "$(hostname)" "$PATH" "$LD_LIBRARY_PATH" \
	"$CTRUN_SIF_DOCKER" "$CTRUN_SIF_ENV" "$CTRUN_SIF_COMPUTED" "${SIF_HOST_ONLY-unset}" \
	"${PS1-unset}" >"out.$RANK"'
check() { # what expected-after-hostname
	local r
	for r in 0 1; do
		[ -f "out.$r" ] || fail "$1: rank $r wrote nothing"
		assert_eq "${NODES[$r]}|$2" "$(cat "out.$r")" "$1: rank $r"
	done
	rm -f out.*
}
image_path=/usr/sbin:/usr/bin:/sbin:/bin:/opt/sif/bin
image_ld=/opt/sif/env-lib:/opt/sif/lib:/.singularity.d/libs

sif_mode() { # mount|unpack
	run_rc env PS1=from-host SIF_HOST_ONLY=host srun -N2 --ntasks-per-node=1 \
		"$CTRUN" --runtime oci --image-mode "$1" --image "$SIF" -- sh -c "$show"
	assert_eq 0 "$rc" "$1: srun exit status"
	check "$1" "$image_path|$image_ld|from-docker|from-environment|computed in the image|host|Singularity> |"
}

env_wins() {
	run_rc srun -N2 --ntasks-per-node=1 "$CTRUN" --runtime oci --image "$SIF" \
		--env CTRUN_SIF_ENV=user --env LD_LIBRARY_PATH=/mine -- sh -c "$show"
	assert_eq 0 "$rc" "--env: srun exit status"
	check "--env" "$image_path|/mine|from-docker|user|computed in the image|unset|Singularity> |"
}

on_script_path() {
	local out
	out=$(srun -N1 "$CTRUN" -q --no-prefix --runtime oci --image "$SIF" -- sif-hello)
	assert_eq "sif-hello: from-environment" "$out" "a command only on the image's script PATH"
}

shell_scripts() {
	local out
	out=$("$CTRUN" shell --runtime oci --image "$SIF" -- sif-hello </dev/null)
	assert_eq "sif-hello: from-environment" "$out" "ctrun shell -- a command on the scripts' PATH"
	# shellcheck disable=SC2016
	out=$("$CTRUN" shell --runtime oci --image "$SIF" -- printf '[%s]' 'a  b' '$x' '"' </dev/null)
	assert_eq '[a  b][$x]["]' "$out" "ctrun shell: the command's words"
}

dry_run() {
	"$CTRUN" --dry-run --runtime oci --image "$SIF" -- true | grep -q \
		"agent sources the image's /.singularity.d/env/\*.sh with its /bin/sh" ||
		fail "--dry-run does not mention the image's scripts"
}

behaviour "--runtime oci, the SIF mounted: the image's scripts, the host under them" sif_mode mount
behaviour "--runtime oci, the SIF unpacked: the image's scripts, the host under them" sif_mode unpack
behaviour "--env over the image's scripts" env_wins
behaviour "the command is found on the PATH the scripts set" on_script_path
behaviour "ctrun shell under runc: the command runs through the image's scripts, argv intact" shell_scripts
behaviour "--dry-run says so" dry_run
behaviour "no container is left" assert_no_containers
