#!/bin/bash
# Writable runs (issue 24): --writable makes the container's root writable
# for the run and its changes are gone in the next; without it the root is
# read-only.  OCI (runc) and charliecloud over ctrun's overlay (tmpfs upper
# layer), a real enroot (/opt/enroot: `enroot start --rw` of the squashfs,
# never of the node's shared container), as root and as the test user,
# through srun on a cluster node.  The enroot behaviours come last: without
# a real enroot they skip (tests/skips.allowed), after the others ran.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
need_image BB busybox.sqsh
"$CTRUN_REPO/tests/cluster/ensure-user.sh" ctrunuser >/dev/null
private_node_cache persist-cache
cd "$TMPD"
cp "$BB" bb.sqsh
chmod 644 bb.sqsh
N=${NODES[0]}
export CTRUN_NV=false

# as root|user CMD...: CMD through srun on node N, in $TMPD, output in $out.
as() {
	local who=$1
	shift
	if [ "$who" = root ]; then
		run_rc srun -N1 -w "$N" "$@" > run.out 2>&1
	else
		local q
		printf -v q '%q ' "$@"
		run_rc su ctrunuser -s /bin/bash -c "cd '$TMPD' && export SLURM_CONF='$SLURM_CONF' \
CTRUN_NV=false CTRUN_CACHE_DIR='$TMPD/ucache' PATH='$PATH' ENROOT_RUNTIME_PATH='$TMPD/enroot-run-u' \
ENROOT_DATA_PATH='$TMPD/enroot-data-u' ENROOT_CACHE_PATH='$TMPD/enroot-cache-u' && srun -N1 -w '$N' $q" > run.out 2>&1
	fi
	out=$(cat run.out)
}

# A write under / and under /usr, read back in the same run; the next run
# (also --writable) does not see it; a run without --writable cannot write.
writable_then_gone() { # runtime root|user [ctrun options...]
	local rt=$1 who=$2
	shift 2
	as "$who" "$CTRUN" -q --no-prefix --runtime "$rt" "$@" --image bb.sqsh --writable -- \
		sh -c 'echo probe-$$ > /persist-probe && echo x > /usr/persist-probe && cat /persist-probe /usr/persist-probe'
	assert_eq 0 "$rc" "--writable run ($rt, $who): $out"
	case $out in probe-*x) ;; *) fail "--writable run ($rt, $who) did not read its writes back: $out" ;; esac
	as "$who" "$CTRUN" -q --no-prefix --runtime "$rt" "$@" --image bb.sqsh --writable -- \
		sh -c 'if [ -e /persist-probe ] || [ -e /usr/persist-probe ]; then echo kept; else echo gone; fi'
	assert_eq 0 "$rc" "second --writable run ($rt, $who): $out"
	assert_eq gone "$out" "a write of a --writable run in the next run ($rt, $who)"
	as "$who" "$CTRUN" -q --no-prefix --runtime "$rt" "$@" --image bb.sqsh -- \
		sh -c 'echo y > /persist-probe'
	[ "$rc" -ne 0 ] || fail "a run without --writable wrote to its root ($rt, $who)"
	case $out in *"Read-only file system"*) ;; *) fail "no read-only error ($rt, $who): $out" ;; esac
}

behaviour "OCI (runc) as root: --writable writes are there in the run, gone in the next; read-only without" \
	writable_then_gone oci root
behaviour "OCI (runc) as the test user: the same" writable_then_gone oci user
behaviour "OCI unpacked into the node cache as root: the same, and the cache entry is not written" \
	writable_then_gone oci root --image-mode unpack
behaviour "charliecloud as root: the same" writable_then_gone charliecloud root

# Bad input: --writable without an image is refused, not ignored.
no_image() {
	run_rc "$CTRUN" --writable true > run.out 2>&1
	assert_eq 2 "$rc" "--writable without --image"
	grep -q -- "--writable needs --image" run.out || fail "message: $(cat run.out)"
	[ "$(wc -l < run.out)" -eq 1 ] || fail "more than one line: $(cat run.out)"
}
behaviour "--writable without --image: one line, exit 2" no_image

nothing_left() {
	assert_no_containers
	local n left
	for n in "${NODES[@]}"; do
		left=$("$CLUSTER" exec "$n" sh -c "grep -F ' $TMPD' /proc/mounts; ls -d /tmp/ctrun-0/ctrun-* 2>/dev/null | head -5" || true)
		[ -z "$left" ] || fail "left on $n: $left"
	done
}
behaviour "nothing left behind (containers, mounts, run directories)" nothing_left

# ---- a real enroot ----
enroot_real() {
	[ -x /opt/enroot/bin/enroot ] ||
		skip "no real enroot in /opt/enroot (../shared/tools/build-enroot.sh builds 4.1.2 there)"
}
export PATH=/opt/enroot/bin:$PATH ENROOT_RUNTIME_PATH=$TMPD/enroot-run

enroot_root() {
	enroot_real
	writable_then_gone enroot root
}
behaviour "enroot as root: --rw over its own start of the squashfs, gone in the next run; read-only without" \
	enroot_root
enroot_user() {
	enroot_real
	writable_then_gone enroot user
}
behaviour "enroot as the test user: the same" enroot_user

# The node's shared container (ctrun-<identity>, made by --image-mode unpack)
# is never the root of a writable run: `enroot start --rw` would write into
# it for every later run.
enroot_shared_untouched() {
	enroot_real
	as root "$CTRUN" -q --runtime enroot --image-mode unpack --image bb.sqsh -- true
	assert_eq 0 "$rc" "enroot create (unpack): $out"
	writable_then_gone enroot root
	as root sh -c "ls -d \$CTRUN_CACHE_DIR/enroot-data/ctrun-*/persist-probe \$CTRUN_CACHE_DIR/enroot-data/ctrun-*/usr/persist-probe 2>&1 || true"
	case $out in *"No such file"*"No such file"*) ;; *) fail "the shared enroot container was written: $out" ;; esac
	as root "$CTRUN" -q --runtime enroot --image-mode unpack --image bb.sqsh --writable -- true
	assert_eq 2 "$rc" "--writable --image-mode unpack under enroot"
	case $out in *"--writable with --image-mode unpack"*) ;; *) fail "message: $out" ;; esac
}
behaviour "enroot: a writable run never writes into the node's shared container" enroot_shared_untouched
enroot_nothing_left() {
	enroot_real
	nothing_left
	assert_no_leftovers "squashfuse.*$TMPD" 5
}
behaviour "enroot: nothing left behind (FUSE, mounts, containers)" enroot_nothing_left

# ---- a real Singularity 3.4.2 ----
# Without overlay support (no setuid starter: also as root here, where it
# converts the SIF to a sandbox) it ignores --writable-tmpfs with a warning
# and leaves the root read-only but /usr writable: ctrun refuses instead.
sing_refused() { # root|user
	[ -x /opt/singularity/bin/singularity ] ||
		skip "no real Singularity in /opt/singularity (../shared/tools/build-singularity.sh builds 3.4.2 there)"
	cp "$(dirname "$BB")/busybox.sif" bb.sif 2>/dev/null || true
	chmod 644 bb.sif
	as "$1" env PATH="/opt/singularity/bin:$PATH" SINGULARITY_TMPDIR="$TMPD" "$CTRUN" -q --runtime singularity \
		--image bb.sif --writable -- true
	assert_eq 125 "$rc" "--writable under Singularity 3.4.2 ($1): $out"
	case $out in "ctrun: --writable: "*"Singularity 3.x) may ignore"*) ;; *) fail "message ($1): $out" ;; esac
	# srun adds its own "srun: error: ... exit code 125" line.
	[ "$(printf '%s\n' "$out" | grep -vc '^srun: ')" -eq 1 ] || fail "more than one line ($1): $out"
}
behaviour "Singularity 3.4.2 as root: --writable refused in one line (it would ignore --writable-tmpfs)" \
	sing_refused root
behaviour "Singularity 3.4.2 as the test user: the same" sing_refused user
