#!/bin/bash
# PyTorch DDP 2x2 from a docker:// reference: the torch test image in three
# layers (Debian, python3, torch) on a real registry (TLS, Basic auth).
# Batch mode pulls once, in the batch script's ctrun, and the step's ctruns
# take the digest it hands them: the registry sees one manifest request for
# the whole job.  Then node mode and task mode from the reference, the
# image now in the store: the step's node 0 asks for the tag's digest (the
# store, on /tmp, counts as each node's own: node 1 takes node 0's digest,
# issue 32), none downloads a blob again.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
. "$(dirname "$0")/reglib.sh"
reg_image_storage STORAGE
cd "$TMPD"
reg_start --storage "$STORAGE"
reg_client "$TMPD/auth.json"
export CTRUN_REGISTRY_STORE=$TMPD/store
ref=docker://$REG_HOST/ctrun-test/torch:latest
cp "$CTRUN_REPO/examples/train_ddp.py" .
manifests() { reg_requests | grep -cE '^GET /v2/ctrun-test/torch/manifests/latest 200$' || true; }
blobs() { reg_requests | grep -cE '^GET /v2/ctrun-test/torch/blobs/' || true; }

# The requests counted below add up over the behaviours, in this order.
batch() {
	mkdir out-batch
	cat > job.sh <<JOB
#!/bin/bash
#SBATCH --nodes=2
"$CTRUN" --image "$ref" --nproc-per-node 2 train_ddp.py --epochs 2 --out "$TMPD/out-batch"
JOB
	run_rc sbatch --wait --quiet -o "$TMPD/job.out" job.sh
	cat job.out
	assert_eq 0 "$rc" "sbatch --wait from the reference"
	check_ddp "$TMPD/out-batch" 2 2
	assert_eq 1 "$(manifests)" "manifest requests of the batch job"
	assert_eq 4 "$(blobs)" "blob requests of the batch job (config and 3 layers)"
}

node_mode() {
	mkdir out-node
	run_rc srun -N2 --ntasks-per-node=1 "$CTRUN" --image "$ref" --nproc-per-node 2 \
		train_ddp.py --epochs 1 --out "$TMPD/out-node"
	assert_eq 0 "$rc" "srun node mode from the reference"
	check_ddp "$TMPD/out-node" 2 2
	assert_eq 2 "$(manifests)" "manifest requests after node mode (one per step)"
	assert_eq 4 "$(blobs)" "blob requests after node mode (none new)"
}

task_mode() {
	mkdir out-task
	run_rc srun -N2 --ntasks-per-node=2 "$CTRUN" --image "$ref" \
		train_ddp.py --epochs 1 --out "$TMPD/out-task"
	assert_eq 0 "$rc" "srun task mode from the reference"
	check_ddp "$TMPD/out-task" 2 2
	assert_eq 4 "$(blobs)" "blob requests after task mode (none new)"
}

behaviour "batch mode: the batch script's ctrun pulls, the nodes use its digest" batch
behaviour "node mode: each node resolves the tag, the image is in the store" node_mode
behaviour "task mode: 2 tasks per node" task_mode
behaviour "no container is left" assert_no_containers
