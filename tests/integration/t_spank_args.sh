#!/bin/bash
# tag: every-slurm
# The SPANK plugin's bad input (pyxis's tests/invalid_args.bats and more):
# what can be checked in srun is refused there, before any job, in a line
# that names the option; what only a node can check (a missing image, a
# mount source that is not there) fails the step with ctrun's one line and
# status 125; nothing is left either way.  And a plugin built for another
# Slurm release (a 22.05 plugin in 26.05's srun, and the other way round):
# the plugin's one line naming both releases, then Slurm's refusal.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
. "$(dirname "$0")/spanklib.sh"
need_image BB busybox.sqsh
spank_cluster_up
cd "$TMPD"

# srun ARGS... true must fail in srun itself with a line naming $1.
refused_in_srun() { # what-the-line-says ARG...
	local want=$1
	shift
	run_rc as_user srun -N1 "$@" true 2> err
	[ "$rc" -ne 0 ] || fail "srun $* succeeded"
	grep "^srun: error: ctrun: " err | grep -qF -- "$want" ||
		fail "srun $*: no line '$want': $(cat err)"
	assert_eq 1 "$(grep -c "^srun: error: ctrun: " err)" "srun $*: ctrun's lines"
	! grep -q "slurmstepd\|srun: job [0-9]" err || fail "srun $* reached a node: $(cat err)"
}
in_srun() {
	refused_in_srun "--container-image: argument required" --container-image=
	# A letter first: base64 starts with '/' one time in 64, and a path is
	# the node's to check (pyxis's rule), not a reference.
	refused_in_srun "--container-image: image reference" \
		--container-image="x$(head -c 2048 /dev/urandom | base64 -w0)"
	refused_in_srun "--container-image dockerd://ubuntu: ctrun does not import from a local daemon" \
		--container-image=dockerd://ubuntu
	refused_in_srun "--container-name: '/tmp/foo' is not a name" --container-name=/tmp/foo \
		--container-image="$BB"
	refused_in_srun "--container-name: empty name" --container-name=:attach --container-image="$BB"
	refused_in_srun "is not a name" --container-name="$(printf 'a%.0s' {1..300})" \
		--container-image="$BB"
	refused_in_srun "--container-mounts: argument required" --container-mounts= --container-image="$BB"
	refused_in_srun "--container-mounts: invalid format: :" --container-mounts=: --container-image="$BB"
	refused_in_srun "--container-mounts: invalid format: /tmp:" --container-mounts=/tmp: \
		--container-image="$BB"
	refused_in_srun "mount target must be a relative path or an absolute path" \
		--container-mounts=/tmp:mnt:ro --container-image="$BB"
	refused_in_srun "flag 'x-create=dir' of /tmp:/mnt:x-create=dir+ro is not supported by ctrun" \
		--container-mounts=/tmp:/mnt:x-create=dir+ro --container-image="$BB"
	refused_in_srun "--container-workdir: argument required" --container-workdir= --container-image="$BB"
	refused_in_srun "both --container-writable and --container-readonly were specified" \
		--container-readonly --container-writable --container-image="$BB"
	refused_in_srun "--container-env: argument required" --container-env= --container-image="$BB"
	refused_in_srun "--container-env: invalid format: FOO," --container-env=FOO, --container-image="$BB"
	refused_in_srun "--container-save: target is a directory" --container-save=/tmp/ --container-image="$BB"
	refused_in_srun "--container-save: target is a directory" --container-save=./ --container-image="$BB"
	refused_in_srun "--container-save: target is a directory" --container-save=/ --container-image="$BB"
	refused_in_srun "ctrun takes the target as an absolute path in the container" \
		--container-mounts=/home:../home --container-image="$BB"
	refused_in_srun "--container-unshare: unknown namespace 'foo'" --container-unshare=net,foo \
		--container-image="$BB"
	refused_in_srun "--container-unshare: empty namespace argument" --container-unshare=net, \
		--container-image="$BB"
	PYXIS_CONTAINER_MOUNTS=/tmp: refused_in_srun "PYXIS_CONTAINER_MOUNTS: --container-mounts: invalid format" \
		--container-image="$BB"
}
behaviour "bad values fail in srun, before any job, naming the option" in_srun

# srun ARGS... true fails on the node: status 125 and ctrun's line.
fails_on_node() { # what-the-line-says ARG...
	local want=$1
	shift
	run_rc as_user srun -N1 "$@" true 2> err
	note "$(cat err)"
	assert_eq 125 "$rc" "srun $*: status"
	grep -qF -- "$want" err || fail "srun $*: no line '$want': $(cat err)"
	assert_eq 1 "$(grep -cF -- "$want" err)" "srun $*: lines saying '$want'"
	# One line says why (Slurm's own "task 0: Exited with exit code 125" aside).
	assert_eq 1 "$(grep -vc '^srun: error: .*: task [0-9]*: Exited with exit code' err)" \
		"srun $*: lines other than Slurm's"
}
on_node() {
	fails_on_node "nonexistent.sqsh" --container-image=./nonexistent.sqsh
	fails_on_node "/dev/urandom" --container-image=/dev/urandom
	# pyxis's line (mounts.bats greps it), from slurmstepd before any container.
	fails_on_node "--container-mounts: source path does not exist: /nonexistent/path/foo" \
		--container-mounts=/nonexistent/path/foo:/mnt --container-image="$BB"
	fails_on_node "--container-mounts: source path does not exist: /nonexistent/path" \
		--container-mounts=/tmp:/mnt,/nonexistent/path:/mnt2 --container-image="$BB"
	fails_on_node "--container-mounts: source path does not exist: /etc/hostname/x" \
		--container-mounts=/etc/hostname/x:/mnt --container-image="$BB"
	fails_on_node "couldn't chdir to /pyxis: No such file or directory" --container-workdir=/pyxis \
		--container-image="$BB"
	# The working directory as an image (pyxis: refused): no command in it.
	run_rc as_user srun -N1 --container-image=./ true 2> err
	note "$(cat err)"
	[ "$rc" -ne 0 ] || fail "--container-image=./ succeeded"
	# Two tasks on a node: one report.
	run_rc as_user srun -N1 -n2 --container-image=./nonexistent.sqsh true 2> err
	assert_eq 125 "$rc" "two tasks: status"
	assert_eq 1 "$(grep -c nonexistent.sqsh err)" "two tasks: lines naming the image"
}
behaviour "what only a node can check fails the step with status 125, one line" on_node

# The soname of the libslurm of the Slurm on PATH (its install's lib, or
# the compiler's for Debian's), which the plugin's line names.
running_api() {
	local lib
	if [ -n "${CTRUN_SLURM_PREFIX:-}" ]; then lib=$(ls "$CTRUN_SLURM_PREFIX"/lib*/libslurm.so | head -1)
	else lib=$(cc -print-file-name=libslurm.so); fi
	readlink -f "$lib" | sed -n 's/.*libslurm\.so\.\([0-9]*\).*/\1/p'
}
another_release() {
	local f other= rel api
	for f in "$CTRUN_REPO"/build/slurm-*/spank_ctrun.so; do
		[ -f "$f" ] && [ "$f" != "$SPANK_PLUGIN" ] && other=$f && break
	done
	[ -n "$other" ] || skip "no plugin of another Slurm release than $SPANK_RELEASE is built" \
		"(a second Slurm install, then make spank-releases)"
	rel=${other%/spank_ctrun.so} rel=${rel##*/slurm-} api=$(running_api)
	[ -n "$api" ] || fail "no libslurm.so found for this Slurm"
	# This cluster's configuration with that plugin in its plugstack.conf.
	mkdir other-release
	cp "$CTRUN_CLUSTER_DIR/etc/slurm.conf" "$CTRUN_CLUSTER_DIR/etc/gres.conf" other-release/
	echo "required $other ctrun=$CTRUN" > other-release/plugstack.conf
	chmod -R a+rX other-release
	run_rc as_user env SLURM_CONF="$TMPD/other-release/slurm.conf" srun -N1 --container-image="$BB" true 2> err
	note "$(cat err)"
	[ "$rc" -ne 0 ] || fail "srun with a plugin of Slurm $rel in Slurm $SPANK_RELEASE succeeded"
	grep -E "^spank_ctrun.so: built for Slurm $rel \(libslurm.so.[0-9]+\), this is a Slurm with libslurm.so.$api: Slurm refuses it; rebuild it against this Slurm's <slurm/spank.h> \(make SLURM_INCLUDE=PREFIX/include\) and install that one$" err ||
		fail "no line naming Slurm $rel and libslurm.so.$api"
	assert_eq 1 "$(grep -c 'spank_ctrun.so: built for' err)" "the plugin's lines"
	grep -q "Incompatible.* plugin .*version" err || fail "Slurm's own refusal is missing"
	! grep -q "srun: job [0-9]\|slurmstepd" err || fail "srun reached a node: $(cat err)"
}
behaviour "another-release: a plugin built for another Slurm release, one line naming both, Slurm refuses it" another_release

nothing_left() {
	assert_no_leftovers "ctrun __hold" 10
	assert_no_leftovers "/.ctrun/agent" 2
	assert_no_rundirs
}
behaviour "nothing is left" nothing_left
