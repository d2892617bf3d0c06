#!/bin/bash
# An image from a registry through the SPANK plugin, in pyxis's enroot form
# HOST#REPO:TAG, as the test user: DDP 2 nodes x 2 tasks from the torch
# test image on a real registry (TLS, Basic auth); each node's ctrun
# __hold resolves the reference, and with the image store shared (the
# home, here a directory every node reaches) the layers are downloaded
# once for the job.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
. "$(dirname "$0")/spanklib.sh"
. "$(dirname "$0")/reglib.sh"
reg_image_storage STORAGE
spank_cluster_up
cd "$TMPD"
chmod 777 "$TMPD"
# On the SPANK cluster's bridge, which its nodes reach.
reg_start --storage "$STORAGE" --addr "$CTRUN_CLUSTER_SUBNET.1"
reg_client "$TMPD/auth.json"
chown "$SPANK_USER" auth.json
chmod 644 "$REG_CA"
mkdir store && chown "$SPANK_USER" store
export CTRUN_REGISTRY_STORE=$TMPD/store
blobs() { reg_requests | grep -cE '^GET /v2/ctrun-test/torch/blobs/' || true; }

ddp() {
	mkdir -p out && chmod 777 out
	cp "$CTRUN_REPO/examples/train_ddp.py" .
	run_rc as_user srun -N2 --ntasks-per-node=2 --container-image="$REG_HOST#ctrun-test/torch:latest" \
		python3 "$TMPD/train_ddp.py" --epochs 1 --out "$TMPD/out"
	assert_eq 0 "$rc" "srun --container-image=HOST#REPO:TAG"
	check_ddp "$TMPD/out" 2 2
	assert_eq 4 "$(blobs)" "blob requests (config and 3 layers, once for both nodes)"
}
behaviour "DDP 2x2 from HOST#REPO:TAG, the layers downloaded once" ddp

# pyxis's docker_image.bats "image download must be attempted once": two
# tasks, an image the registry does not have, one failure line (one hold
# per node asks).
missing_once() {
	run_rc as_user srun -N1 -n2 --container-image="$REG_HOST#ctrun-test/nonexistent:latest" true 2> err
	note "$(cat err)"
	assert_eq 125 "$rc" "srun's status"
	assert_eq 1 "$(grep -c 'ctrun-test/nonexistent' err)" "lines naming the image"
	[ "$(reg_requests | grep -c '/v2/ctrun-test/nonexistent/manifests/')" -ge 1 ] ||
		fail "the registry was not asked"
}
behaviour "an image the registry lacks: one line, status 125" missing_once

nothing_left() {
	assert_no_leftovers "ctrun __hold" 10
	assert_no_rundirs
}
behaviour "nothing is left" nothing_left
