#!/bin/bash
# tag: every-slurm
# The plugin's pulls follow "a job pulls once" (docs/images.md): with each
# node's own image store, `srun -N2 --container-image=HOST#REPO:TAG` makes
# the registry serve ONE manifest request and each blob ONCE for the step
# (node 0's ctrun __hold pulls, node 1's gets the image from node 0), and
# both nodes' stores hold the same image file.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
. "$(dirname "$0")/spanklib.sh"
. "$(dirname "$0")/reglib.sh"
reg_image_storage STORAGE
spank_cluster_up
local_store=$CTRUN_CLUSTER_SCRATCH/store-spfeed-$$
local_stores_gone() {
	local n
	for n in "${NODES[@]}"; do "$CLUSTER" exec "$n" rm -rf "$local_store" || true; done
}
trap 'local_stores_gone; spank_cluster_down' EXIT
cd "$TMPD"
chmod 777 "$TMPD"
reg_start --storage "$STORAGE" --addr "$CTRUN_CLUSTER_SUBNET.1"
reg_client "$TMPD/auth.json"
chown "$SPANK_USER" auth.json
chmod 644 "$REG_CA"
for n in "${NODES[@]}"; do
	"$CLUSTER" exec "$n" sh -c 'mkdir -p "$1" && chown "$2" "$1"' _ "$local_store" "$SPANK_USER"
done
export CTRUN_REGISTRY_STORE=$local_store CTRUN_REGISTRY_STORE_SHARED=auto
digest=$(reg_digest ctrun-test/busybox:latest)
manifests() { reg_busybox_manifests; }
blob_gets() { reg_busybox_blob_gets; }
image_sum() { reg_node_image_sum "$1" "$local_store" "$digest"; }

one_pull() {
	local m0 b0 s0 n
	m0=$(manifests) b0=$(blob_gets)
	run_rc as_user srun -N2 --ntasks-per-node=2 \
		--container-image="$REG_HOST#ctrun-test/busybox:latest" sh -c 'echo "$(hostname) ran"' > out 2>&1
	cat out
	assert_eq 0 "$rc" "srun --container-image=HOST#REPO:TAG"
	assert_eq 4 "$(grep -c ' ran$' out)" "tasks that ran in the image"
	assert_eq 1 $(($(manifests) - m0)) "manifest requests of the step"
	assert_eq 3 $(($(blob_gets) - b0)) "blob GETs of the step (config and two layers, once)"
	s0=$(image_sum "${NODES[0]}")
	[ "$s0" != none ] || fail "no image in ${NODES[0]}'s store"
	for n in "${NODES[@]}"; do assert_eq "$s0" "$(image_sum "$n")" "the image file on $n"; done
}
behaviour "node-local stores: one manifest and each blob once per step" one_pull

nothing_left() {
	assert_no_leftovers "ctrun __hold" 10
	assert_no_rundirs
}
behaviour "nothing is left" nothing_left
