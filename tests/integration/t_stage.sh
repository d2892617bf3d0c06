#!/bin/bash
# tag: every-slurm
# Staging with sbcast (--stage, [cache] stage_dir): ctrun in a batch script
# copies the image to every node's local directory once, into a private
# directory of the job (ctrun-stage.UID.JOB.HEX, mode 0700), the step's
# ctruns start from those copies, and the copies are gone after the job.  auto
# does not stage an image on a local file system; a stage directory that
# does not exist is a one-line error (125); inside srun --stage sbcast says
# how to stage; a copy that is not whole is refused and the original read;
# a stage directory the nodes share is noticed, and nothing staged into it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
need_image BB busybox.sqsh
cd "$TMPD"
cp "$BB" bb.sqsh
scratch=$CTRUN_CLUSTER_SCRATCH # node-local on every test node (/tmp is shared here)
staged() { # node: the staged copies there
	"$CLUSTER" exec "$1" sh -c "ls '$scratch' | grep '^ctrun-stage\.' || true"
}

cat > job.sh <<J
#!/bin/bash
export CTRUN_CACHE_STAGE_DIR=$scratch
echo "\$SLURM_JOB_ID" > $TMPD/jobid
exec "$CTRUN" -v --stage "\$1" --image "$TMPD/bb.sqsh" --nproc-per-node 1 -- \
	sh -c 'ls $scratch | grep "^ctrun-stage\\." > $TMPD/seen.\$RANK || echo none > $TMPD/seen.\$RANK'
J
chmod +x job.sh

stage_sbcast() {
	# -n4: the job's own SLURM_NTASKS must not put two prepare tasks on a
	# node (the second would find the first one's directory).
	run_rc sbatch --wait --quiet -N2 -n4 -o "$TMPD/job.out" job.sh sbcast
	cat job.out
	assert_eq 0 "$rc" "the staged job"
	job=$(cat jobid)
	copy=$(sed -n "s|^ctrun: staging $TMPD/bb.sqsh to $scratch/\(ctrun-stage\.0\.$job\.[0-9a-f]\{16\}\)/bb.sqsh on 2 nodes (sbcast)$|\1|p" job.out)
	[ -n "$copy" ] || fail "no staging line into a directory of the job"
	for n in "${NODES[@]}"; do
		grep -q "ctrun: $TMPD/bb.sqsh staged on $n: $scratch/$copy/bb.sqsh" job.out ||
			fail "$n did not use its staged copy"
		grep -q "$scratch/$copy/bb.sqsh mounted" job.out ||
			fail "the container did not start from the copy"
		assert_eq "" "$(staged "$n")" "staged copies left on $n after the job"
	done
	assert_eq "$copy $copy" "$(cat seen.0 seen.1 | tr '\n' ' ' | sed 's/ $//')" \
		"what the workers saw in the stage directory"
}
behaviour "sbcast: each node's copy in a private directory of the job, the workers start from it, gone after the job" stage_sbcast

auto() {
	run_rc sbatch --wait --quiet -N2 -o "$TMPD/auto.out" job.sh auto
	assert_eq 0 "$rc" "the auto job"
	! grep -q "staging" auto.out || fail "auto staged a local image: $(cat auto.out)"
}
behaviour "auto: an image on a local file system is not staged" auto

# A stage directory that is one file system for both nodes (here a directory
# in /tmp, which the test nodes share; a site may set [cache] stage_dir to a
# shared path by mistake): the nodes see the image already, so nothing is
# staged (sbcast would find the first node's copy on the second: "File
# exists"); one line says so, and the job runs from the image where it is.
cat > shared.sh <<J
#!/bin/bash
export CTRUN_CACHE_STAGE_DIR=$TMPD/shared
exec "$CTRUN" -v --stage "\$1" --image "$TMPD/bb.sqsh" --nproc-per-node 1 -- \
	sh -c 'ls $TMPD/shared | grep "^ctrun-stage\\." > $TMPD/shared-seen.\$RANK || echo none > $TMPD/shared-seen.\$RANK'
J
chmod +x shared.sh
shared_stage_dir() {
	mkdir -m 755 shared
	run_rc sbatch --wait --quiet -N2 -o "$TMPD/shared.out" shared.sh sbcast
	cat shared.out
	assert_eq 0 "$rc" "the job staging into a shared directory"
	assert_eq 1 "$(grep -c "not staged" shared.out)" "lines saying it was not staged"
	grep -q "^ctrun: --stage sbcast: not staged: the nodes share the stage directory $TMPD/shared" shared.out ||
		fail "the line does not say that the nodes share $TMPD/shared"
	! grep -q "staged on" shared.out || fail "a node used a staged copy"
	assert_eq "none none" "$(cat shared-seen.0 shared-seen.1 | tr '\n' ' ' | sed 's/ $//')" \
		"the job's directories the workers saw in the shared stage directory"
	assert_eq "" "$(ls -A shared)" "left in the shared stage directory"
}
behaviour "a stage directory the nodes share: nothing staged, one line, the job runs from the image where it is" shared_stage_dir

# (This behaviour changes job.sh: the last one that runs it.)
missing_dir() {
	sed -i "s|CTRUN_CACHE_STAGE_DIR=$scratch|CTRUN_CACHE_STAGE_DIR=/nonexistent-ctrun-stage|" job.sh
	run_rc sbatch --wait --quiet -N2 -o "$TMPD/bad.out" job.sh sbcast
	cat bad.out
	assert_eq 125 "$rc" "staging into a missing directory"
	grep -q "ctrun: --stage sbcast: making the job's private directory for $TMPD/bb.sqsh in /nonexistent-ctrun-stage failed" bad.out ||
		fail "no error line"
	[ ! -e seen.2 ] || fail "a step ran"
}
behaviour "a stage directory missing on the nodes: one line, 125, no step started" missing_dir

inside_srun() {
	run_rc srun -N1 "$CTRUN" --stage sbcast --image bb.sqsh -- true 2> srun.err
	assert_eq 0 "$rc" "--stage sbcast inside srun"
	grep -q "stage sbcast: not inside srun; run ctrun in the sbatch script" srun.err ||
		fail "no hint: $(cat srun.err)"
}
behaviour "inside srun: nothing to stage before the step; it says what to do" inside_srun

short_copy() {
	mkdir -m 700 private
	head -c 1000 bb.sqsh > private/short
	run_rc env CTRUN_STAGED_FROM="$TMPD/bb.sqsh" CTRUN_STAGED_TO="$TMPD/private/short" \
		srun -N1 "$CTRUN" --image bb.sqsh -- true 2> short.err
	assert_eq 0 "$rc" "a run with a short staged copy"
	grep -q "the staged copy is missing, not yours, not whole" short.err || fail "$(cat short.err)"
}
behaviour "a copy that is not whole (in a private directory): refused, the original read" short_copy
