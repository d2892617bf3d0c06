#!/bin/bash
# A real Singularity 3.4.2 (../shared/tools/build-singularity.sh builds it
# from apptainer's history into /opt/singularity, without setuid: every run
# goes through a user namespace, a SIF or squashfs is converted to a
# temporary sandbox) under ctrun's apptainer/singularity adapter, on the
# test cluster.  What the golden tests (test_apptainer.c) say, run for real:
# - the image's environment: an image singularity did not build keeps its
#   Docker ENV in /etc/environment, which singularity never reads; the
#   host's LANG, not --cleanenv's LANG=C;
# - the user's SINGULARITY_BIND / SINGULARITYENV_* do not reach the container;
# - a path the --bind syntax cannot carry needs --mount, which 3.4.2 lacks:
#   one line naming the release (exit 2); a plain path with blanks binds;
# - --workdir absent from the read-only image: one line (exit 125);
# - --entrypoint runs the image's runscript with the command (a directory
#   image with /.singularity.d/runscript), and without one says so; with no
#   command at all, the runscript runs alone (the agent runs it, as `run` would);
# - --gpu-isolation: only the step's GPUs' device nodes inside (--contain),
#   each worker its own, /tmp and the working directory still the host's;
# - DDP 2x2 from the torch squashfs, the same weights as every runtime.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
. "$(dirname "$0")/hooklib.sh"
[ -x /opt/singularity/bin/singularity ] ||
	skip "no real singularity in /opt/singularity (../shared/tools/build-singularity.sh builds 3.4.2 there)"
need_image BB busybox.sqsh
need_image BBSIF busybox.sif
need_image TORCH torch.sqsh
cd "$TMPD"
export PATH=/opt/singularity/bin:$PATH CTRUN_NV=false SINGULARITY_TMPDIR=$TMPD/stmp
mkdir -p stmp
sing() { "$CTRUN" -q --no-prefix --runtime singularity "$@"; }

# A host file: the environment behaviour binds it (SINGULARITY_BIND), --gpu-isolation tests it.
mkdir -p secret && echo hidden > secret/file

environment() {
	for img in "$BB" "$BBSIF"; do
		out=$(LANG=C.UTF-8 SINGULARITY_BIND="$TMPD/secret:/mnt" SINGULARITYENV_LEAK=yes \
			sing --image "$img" -- sh -c 'echo "$CTRUN_IMAGE_ENV|$LANG|${LEAK-unset}|$(pwd)"; ls /mnt')
		assert_eq "busybox|C.UTF-8|unset|$TMPD" "$(echo "$out" | head -1)" "environment in $img"
		echo "$out" | grep -qx file && fail "SINGULARITY_BIND reached the container ($img)"
		echo "$out" | grep -qx evil || fail "the image's own /mnt is not there ($img): $out"
	done
}
behaviour "the image's environment, the host's LANG, no user SINGULARITY_* settings" environment

binds() {
	mkdir -p "sp ace" "a,b" && echo x > "sp ace/f"
	assert_eq x "$(sing --image "$BB" --mount "$TMPD/sp ace:/data:ro" -- cat /data/f)" "a bind with a blank"
	run_rc sing --image "$BB" --mount "$TMPD/a,b:/data" -- true 2> err.txt
	assert_eq 2 "$rc" "a path with ',' under Singularity 3.4.2"
	grep -q "(Singularity 3.4.2) cannot bind a path with ','.*--mount needs apptainer >= 1.0" err.txt ||
		fail "message: $(cat err.txt)"
	assert_eq 1 "$(grep -c . err.txt)" "lines of error"
}
behaviour "binds: plain paths (blanks inside) bind; --mount's paths are refused by name" binds

workdir() {
	run_rc sing --image "$BB" --workdir /no/such/dir -- pwd 2> err.txt
	assert_eq 125 "$rc" "--workdir absent from the image"
	grep -q "the working directory /no/such/dir is not in the image and cannot be created there" \
		err.txt || fail "message: $(cat err.txt)"
	assert_eq /etc "$(sing --image "$BB" --workdir /etc -- pwd)" "--workdir /etc"
}
behaviour "--workdir: absent from the read-only image" workdir

entrypoint() {
	cp -a "$(dirname "$BB")/busybox-rootfs" dirimg
	mkdir -p dirimg/.singularity.d
	printf '#!/bin/sh\necho "runscript got: $*"\n[ $# -eq 0 ] || exec "$@"\n' > dirimg/.singularity.d/runscript
	chmod 755 dirimg/.singularity.d/runscript
	assert_eq "runscript got: echo a b;a b" "$(sing --entrypoint --image dirimg -- echo a b | tr '\n' ';' | sed 's/;$//')" \
		"the command through the runscript"
	assert_eq "a b" "$(sing --image dirimg -- echo a b)" "without --entrypoint"
	# No command: the image's default, its runscript alone (run by the agent), as apptainer run does.
	assert_eq "runscript got: " "$(sing --image dirimg < /dev/null)" "no command: the runscript"
	run_rc sing --entrypoint --image "$BBSIF" -- true 2> err.txt
	assert_eq 125 "$rc" "--entrypoint without a runscript"
	grep -q -- "--entrypoint: the image has no entrypoint on .*/.singularity.d/runscript" err.txt ||
		fail "message: $(cat err.txt)"
}
behaviour "--entrypoint: the runscript runs the command; no runscript, one line" entrypoint

gpu_isolation() {
	# The job holding 2 GPUs is cancelled however the behaviour ends.
	trap 'scancel --quiet -u root -n wrap || true' EXIT
	hold_gpus 2
	run_rc env CTRUN_NV=auto srun -N1 -w "${NODES[0]}" --gpus-per-node=2 "$CTRUN" -q --runtime singularity \
		--gpu-isolation --nproc-per-node 2 --image "$BB" -- \
		sh -c 'echo "$RANK $CUDA_VISIBLE_DEVICES $(ls /dev | grep "^nvidia[0-9]" | tr "\n" " ")$(test -f "$1" && echo tmp)"' \
		sh "$TMPD/secret/file" > iso.out 2> iso.err
	cat iso.out iso.err
	assert_eq 0 "$rc" "srun ctrun --gpu-isolation under singularity"
	assert_eq "[rank0]: 0 0 nvidia2 nvidia3 tmp;[rank1]: 1 1 nvidia2 nvidia3 tmp;" \
		"$(sort iso.out | tr '\n' ';')" "GPU nodes and CUDA_VISIBLE_DEVICES per worker"
	scancel --quiet -u root -n wrap || true
}
behaviour "--gpu-isolation: the step's GPUs only, one per worker" gpu_isolation

ddp() {
	cp "$CTRUN_REPO/examples/train_ddp.py" .
	mkdir -p ddp
	run_rc srun -N2 --ntasks-per-node=1 "$CTRUN" -q --runtime singularity --image "$TORCH" \
		--nproc-per-node 2 train_ddp.py --epochs 1 --out "$TMPD/ddp"
	assert_eq 0 "$rc" "DDP under singularity"
	check_ddp ddp 2 2
}
behaviour "DDP 2x2 from the torch squashfs" ddp

no_leftovers() {
	assert_no_leftovers "singularity|starter" 20
}
behaviour "no singularity process is left" no_leftovers
