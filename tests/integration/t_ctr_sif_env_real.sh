#!/bin/bash
# A SIF that a real `singularity build` made (3.4.2 in /opt/singularity, from
# a docker archive with tests/images/sif.sh's sif_docker_env and the
# %environment sif_environment: busybox-singularity-real.sif), and the
# test images' hand-laid busybox-singularity.sif: Singularity's own exec
# action and ctrun's agent under runc must give the workers the same
# environment, the recipe's.  Skips where no real Singularity is installed
# (tests/skips.allowed); t_ctr_sif_env.sh checks the OCI side everywhere.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
[ -x /opt/singularity/bin/singularity ] ||
	skip "no real singularity in /opt/singularity (../shared/tools/build-singularity.sh builds 3.4.2 there)"
REAL=$("$CTRUN_REPO/tests/images/build.sh" path busybox-singularity-real.sif)
[ -f "$REAL" ] || fail "$REAL missing: singularity build failed (see the images log)"
need_image FAKE busybox-singularity.sif
cd "$TMPD"
export PATH=/opt/singularity/bin:$PATH CTRUN_NV=false SINGULARITY_TMPDIR=$TMPD/stmp
mkdir -p stmp
# shellcheck disable=SC2016
show='printf "%s|%s|%s|%s|%s|%s\n" "$PATH" "$LD_LIBRARY_PATH" "$CTRUN_SIF_DOCKER" "$CTRUN_SIF_ENV" "$CTRUN_SIF_COMPUTED" "$(sif-hello)"'
want="/usr/sbin:/usr/bin:/sbin:/bin:/opt/sif/bin|/opt/sif/env-lib:/opt/sif/lib:/.singularity.d/libs|from-docker|from-environment|computed in the image|sif-hello: from-environment"
same_env() { # runtime image
	local out
	out=$("$CTRUN" -q --no-prefix --runtime "$1" --image "$2" -- sh -c "$show")
	assert_eq "$want" "$out" "$1, $(basename "$2")"
}
for img in "$REAL" "$FAKE"; do
	for rt in singularity oci; do
		behaviour "--runtime $rt, $(basename "$img"): the recipe's environment" same_env "$rt" "$img"
	done
done
behaviour "no container is left" assert_no_containers
