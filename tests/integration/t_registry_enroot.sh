#!/bin/bash
# A real `enroot import docker://` (4.1.2, /opt/enroot) of the test
# registry's images (issue 32, point 5: the enroot anchor of the pull
# benchmarks).  enroot's first manifest request accepts only manifest lists,
# which Debian's docker-registry (distribution 2.8) answers by converting the
# image's manifest to schema 1 from the config's history: the registry's
# docker archives carry what `docker build` writes (tests/images/mkhistory.py),
# else that request is 400 Bad Request and the import fails.  The image
# enroot makes has both layers applied (a whiteout, an opaque directory) and
# the same paths as ctrun's pull of the same reference.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
. "$(dirname "$0")/reglib.sh"
[ -x /opt/enroot/bin/enroot ] ||
	skip "no real enroot in /opt/enroot (../shared/tools/build-enroot.sh builds 4.1.2 there)"
reg_image_storage STORAGE
cd "$TMPD"
reg_start --plain --auth none --storage "$STORAGE"
mkdir -p enroot/cache enroot/data enroot/run enroot/tmp enroot/config
# Nothing of the machine's enroot configuration or caches; plain HTTP allowed.
# The GPU hooks are not run by import.
enroot_env=(env PATH=/opt/enroot/bin:$PATH ENROOT_ALLOW_HTTP=yes
	ENROOT_CONFIG_PATH=$TMPD/enroot/config ENROOT_CACHE_PATH=$TMPD/enroot/cache
	ENROOT_DATA_PATH=$TMPD/enroot/data ENROOT_RUNTIME_PATH=$TMPD/enroot/run
	ENROOT_TEMP_PATH=$TMPD/enroot/tmp)

# The paths of squashfs FILE, one a line, sorted, without unsquashfs's prefix.
paths() { unsquashfs -l "$1" > "$1.list"; sed -n 's|^squashfs-root||p' "$1.list" | sort; }

import_busybox() {
	run_rc "${enroot_env[@]}" enroot import -o "$TMPD/bb.sqsh" \
		"docker://$REG_HOST#ctrun-test/busybox:latest" > import.out 2>&1
	cat import.out
	assert_eq 0 "$rc" "enroot import docker://$REG_HOST#ctrun-test/busybox:latest"
	reg_requests > requests
	grep -q '^GET /v2/ctrun-test/busybox/manifests/latest 200$' requests ||
		fail "no manifest request answered 200: $(cat requests)"
	paths bb.sqsh > enroot.paths
	grep -qx '/etc/layer2' enroot.paths || fail "the second layer's file is missing"
	grep -qx '/opt/old/b' enroot.paths || fail "the opaque directory's new file is missing"
	grep -qx '/etc/deleted-by-layer2' enroot.paths && fail "a file whited out by layer 2 is there"
	grep -qx '/opt/old/a' enroot.paths && fail "the opaque directory kept layer 1's files"
	true
}
behaviour "enroot import docker:// of the busybox image: both layers, whiteout and opaque applied" \
	import_busybox

same_as_ctrun() {
	[ -f bb.sqsh ] || fail "no image from enroot import (the behaviour before failed)"
	run_rc env CTRUN_REGISTRY_PLAIN_HTTP="$REG_HOST" CTRUN_REGISTRY_STORE="$TMPD/store" \
		"$CTRUN" -q pull "docker://$REG_HOST/ctrun-test/busybox:latest" > pull.out 2> pull.err
	assert_eq 0 "$rc" "ctrun pull: $(cat pull.err)"
	paths "$(cat pull.out)" > ctrun.paths
	# enroot writes its own configuration into the image (/etc/rc, /etc/rc.local,
	# /etc/fstab, /etc/environment: docker::configure in its docker.sh); everything
	# else is the image's.
	diff <(grep -vxE '/etc/(rc|rc\.local|fstab|environment)' enroot.paths) \
		<(grep -vxE '/etc/(rc|rc\.local|fstab|environment)' ctrun.paths) > paths.diff ||
		fail "enroot's and ctrun's images differ: $(cat paths.diff)"
}
behaviour "enroot's image has the paths of ctrun's pull of the same reference" same_as_ctrun
