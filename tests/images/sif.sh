# sif.sh - sourced by build.sh: the test SIF that Singularity built
# (busybox-singularity.sif): its recipe, the /.singularity.d that
# `singularity build` 3.4.2 writes, and the real build where one is installed.
# Its functions are part of the busybox set's recipe hash (build.sh).
# shellcheck shell=bash

# The Docker ENV and the definition's %environment of the SIF that
# Singularity built (singularity_tree), and of the real build's sources.
sif_docker_env() {
	printf '%s\n' PATH=/usr/sbin:/usr/bin:/sbin:/bin:/opt/sif/bin LD_LIBRARY_PATH=/opt/sif/lib \
		CTRUN_SIF_DOCKER=from-docker
}
sif_environment() {
	cat <<'EOF'
export CTRUN_SIF_ENV=from-environment
LD_LIBRARY_PATH="/opt/sif/env-lib:$LD_LIBRARY_PATH"
if [ -d /opt/sif ]; then
	export CTRUN_SIF_COMPUTED="$(echo computed in the image)"
fi
EOF
}

# What the SIF's root holds besides busybox: a command on the ENV's PATH only.
sif_payload() {
	local r=$1
	mkdir -p "$r/opt/sif/bin" "$r/opt/sif/lib" "$r/opt/sif/env-lib"
	printf '#!/bin/sh\necho "sif-hello: $CTRUN_SIF_ENV"\n' >"$r/opt/sif/bin/sif-hello"
	chmod 755 "$r/opt/sif/bin/sif-hello"
}

# /.singularity.d as `singularity build` (3.4.2, bfc596957da3) lays it out for
# a Docker source and a definition with %environment: base_environment.go's
# env scripts, exec action, runscript and symlinks; conveyorPacker_oci.go
# insertEnv's 10-docker2singularity.sh (`export PATH=%q`, `export K=${K:-%q}`
# of shell.Escape(value): plain values here, so %q only adds the quotes);
# metadata.go insertEnvScript appends "\n%environment\n" to 90-environment.sh.
singularity_tree() {
	local r=$1 kv d=$1/.singularity.d lic
	mkdir -p "$d/env" "$d/actions" "$d/libs"
	printf '#!/bin/sh\n\nfor script in /.singularity.d/env/*.sh; do\n    if [ -f "$script" ]; then\n        . "$script"\n    fi\ndone\n\nexec "$@"\n' >"$d/actions/exec"
	lic='#!/bin/sh
# 
# Copyright (c) 2017, SingularityWare, LLC. All rights reserved.
# Copyright (c) 2015-2017, Gregory M. Kurtzer. All rights reserved.
# 
# Copyright (c) 2016-2017, The Regents of the University of California,
# through Lawrence Berkeley National Laboratory (subject to receipt of any
# required approvals from the U.S. Dept. of Energy).  All rights reserved.
# 
# This software is licensed under a customized 3-clause BSD license.  Please
# consult LICENSE.md file distributed with the sources of this project regarding
# your rights to use or distribute this software.
# 
# NOTICE.  This Software was developed under funding from the U.S. Department of
# Energy and the U.S. Government consequently retains certain rights. As such,
# the U.S. Government has been granted for itself and others acting on its
# behalf a paid-up, nonexclusive, irrevocable, worldwide license in the Software
# to reproduce, distribute copies to the public, prepare derivative works, and
# perform publicly and display publicly, and to permit other to do so.
# 
# 
'
	printf '%s\n\n' "$lic" >"$d/env/01-base.sh"
	{ echo '#!/bin/sh'
	  while read -r kv; do
		case ${kv#*=} in *[\\\"\$\`]*) die "sif env $kv: not a plain value" ;; esac
		if [ "${kv%%=*}" = PATH ]; then printf 'export PATH="%s"\n' "${kv#*=}"
		else printf 'export %s=${%s:-"%s"}\n' "${kv%%=*}" "${kv%%=*}" "${kv#*=}"; fi
	  done < <(sif_docker_env); } >"$d/env/10-docker2singularity.sh"
	{ printf '#!/bin/sh\n# Custom environment shell code should follow\n\n'
	  printf '\n%s\n' "$(sif_environment)"; } >"$d/env/90-environment.sh"
	cat >"$d/env/95-apps.sh" <<'EOF'
#!/bin/sh
#
# Copyright (c) 2017, SingularityWare, LLC. All rights reserved.
#
# See the COPYRIGHT.md file at the top-level directory of this distribution and at
# https://github.com/sylabs/singularity/blob/master/COPYRIGHT.md.
#
# This file is part of the Singularity Linux container project. It is subject to the license
# terms in the LICENSE.md file found in the top-level directory of this distribution and
# at https://github.com/sylabs/singularity/blob/master/LICENSE.md. No part
# of Singularity, including this file, may be copied, modified, propagated, or distributed
# except according to the terms contained in the LICENSE.md file.


if test -n "${SINGULARITY_APPNAME:-}"; then

    # The active app should be exported
    export SINGULARITY_APPNAME

    if test -d "/scif/apps/${SINGULARITY_APPNAME:-}/"; then
        SCIF_APPS="/scif/apps"
        SCIF_APPROOT="/scif/apps/${SINGULARITY_APPNAME:-}"
        export SCIF_APPROOT SCIF_APPS
        PATH="/scif/apps/${SINGULARITY_APPNAME:-}:$PATH"

        # Automatically add application bin to path
        if test -d "/scif/apps/${SINGULARITY_APPNAME:-}/bin"; then
            PATH="/scif/apps/${SINGULARITY_APPNAME:-}/bin:$PATH"
        fi

        # Automatically add application lib to LD_LIBRARY_PATH
        if test -d "/scif/apps/${SINGULARITY_APPNAME:-}/lib"; then
            LD_LIBRARY_PATH="/scif/apps/${SINGULARITY_APPNAME:-}/lib:$LD_LIBRARY_PATH"
            export LD_LIBRARY_PATH
        fi

        # Automatically source environment
        if [ -f "/scif/apps/${SINGULARITY_APPNAME:-}/scif/env/01-base.sh" ]; then
            . "/scif/apps/${SINGULARITY_APPNAME:-}/scif/env/01-base.sh"
        fi
        if [ -f "/scif/apps/${SINGULARITY_APPNAME:-}/scif/env/90-environment.sh" ]; then
            . "/scif/apps/${SINGULARITY_APPNAME:-}/scif/env/90-environment.sh"
        fi

        export PATH
    else
        echo "Could not locate the container application: ${SINGULARITY_APPNAME}"
        exit 1
    fi
fi

EOF
	{ printf '%s\n\n' "$lic"
	  cat <<'EOF'
if [ -z "$LD_LIBRARY_PATH" ]; then
    LD_LIBRARY_PATH="/.singularity.d/libs"
else
    LD_LIBRARY_PATH="$LD_LIBRARY_PATH:/.singularity.d/libs"
fi

PS1="Singularity> "
export LD_LIBRARY_PATH PS1
EOF
	} >"$d/env/99-base.sh"
	cat >"$d/env/99-runtimevars.sh" <<'EOF'
#!/bin/sh
# Copyright (c) 2017-2019, Sylabs, Inc. All rights reserved.
#
# This software is licensed under a customized 3-clause BSD license.  Please
# consult LICENSE.md file distributed with the sources of this project regarding
# your rights to use or distribute this software.
#
#

if [ -n "${SING_USER_DEFINED_PREPEND_PATH:-}" ]; then
	PATH="${SING_USER_DEFINED_PREPEND_PATH}:${PATH}"
fi

if [ -n "${SING_USER_DEFINED_APPEND_PATH:-}" ]; then
	PATH="${PATH}:${SING_USER_DEFINED_APPEND_PATH}"
fi

if [ -n "${SING_USER_DEFINED_PATH:-}" ]; then
	PATH="${SING_USER_DEFINED_PATH}"
fi

unset SING_USER_DEFINED_PREPEND_PATH \
	  SING_USER_DEFINED_APPEND_PATH \
	  SING_USER_DEFINED_PATH

export PATH
EOF
	printf '#!/bin/sh\n\necho "There is no runscript defined for this container\\n";\n' >"$d/runscript"
	printf '#!/bin/sh\n' >"$d/startscript"
	chmod 755 "$d/env/"*.sh "$d/actions/exec" "$d/runscript" "$d/startscript"
	ln -s .singularity.d/runscript "$r/singularity"
	ln -s .singularity.d/actions/exec "$r/.exec"
	ln -s .singularity.d/env/90-environment.sh "$r/environment"
}

# The same image through a real `singularity build` from a docker archive of
# the same root and ENV, with the same %environment.  Not fatal here: the
# test that runs it fails naming what is missing.
build_real_sif() {
	local tmp=$1 sing=/opt/singularity/bin/singularity kv envs=()
	while read -r kv; do envs+=(--env "$kv"); done < <(sif_docker_env)
	python3 "$here/mkdocker.py" --format docker --tag ctrun-test/sif:latest "${envs[@]}" \
		"$tmp/sif-docker.tar" "$tmp/sifsrc" || return 1
	{ printf 'Bootstrap: docker-archive\nFrom: %s\n\n%%environment\n' "$tmp/sif-docker.tar"
	  sif_environment; } >"$tmp/sif.def"
	SINGULARITY_TMPDIR=$tmp SINGULARITY_CACHEDIR=$tmp/scache \
		"$sing" -q build "$tmp/busybox-singularity-real.sif" "$tmp/sif.def" >&2
}
