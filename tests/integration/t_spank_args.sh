#!/bin/bash
# The SPANK plugin's bad input (pyxis's tests/invalid_args.bats and more):
# what can be checked in srun is refused there, before any job, in a line
# that names the option; what only a node can check (a missing image, a
# mount source that is not there) fails the step with ctrun's one line and
# status 125; nothing is left either way.
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
	refused_in_srun "--container-image: image reference" \
		--container-image="$(head -c 2048 /dev/urandom | base64 -w0)"
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
	refused_in_srun "flag 'unbindable' of /tmp:/mnt:unbindable+ro is not supported by ctrun" \
		--container-mounts=/tmp:/mnt:unbindable+ro --container-image="$BB"
	refused_in_srun "--container-workdir: argument required" --container-workdir= --container-image="$BB"
	refused_in_srun "both --container-writable and --container-readonly were specified" \
		--container-readonly --container-writable --container-image="$BB"
	refused_in_srun "--container-env: argument required" --container-env= --container-image="$BB"
	refused_in_srun "--container-env: invalid format: FOO," --container-env=FOO, --container-image="$BB"
	refused_in_srun "--container-save: target is a directory" --container-save=/tmp/ --container-image="$BB"
	refused_in_srun "--container-save: target is a directory" --container-save=./ --container-image="$BB"
	refused_in_srun "--container-unshare: unknown namespace 'foo'" --container-unshare=net,foo \
		--container-image="$BB"
	refused_in_srun "--container-unshare=net: not supported by ctrun" --container-unshare=net \
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
	assert_eq 1 "$(grep -c "$want" err)" "srun $*: lines saying '$want'"
	# One line says why (Slurm's own "task 0: Exited with exit code 125" aside).
	assert_eq 1 "$(grep -vc '^srun: error: .*: task [0-9]*: Exited with exit code' err)" \
		"srun $*: lines other than Slurm's"
}
on_node() {
	fails_on_node "nonexistent.sqsh" --container-image=./nonexistent.sqsh
	fails_on_node "/dev/urandom" --container-image=/dev/urandom
	fails_on_node "/nonexistent/path/foo" --container-mounts=/nonexistent/path/foo:/mnt \
		--container-image="$BB"
	fails_on_node "couldn't chdir to /pyxis: No such file or directory" --container-workdir=/pyxis \
		--container-image="$BB"
	# Two tasks on a node: one report.
	run_rc as_user srun -N1 -n2 --container-image=./nonexistent.sqsh true 2> err
	assert_eq 125 "$rc" "two tasks: status"
	assert_eq 1 "$(grep -c nonexistent.sqsh err)" "two tasks: lines naming the image"
}
behaviour "what only a node can check fails the step with status 125, one line" on_node

nothing_left() {
	assert_no_leftovers "ctrun __hold" 10
	assert_no_leftovers "/.ctrun/agent" 2
	assert_no_rundirs
}
behaviour "nothing is left" nothing_left
