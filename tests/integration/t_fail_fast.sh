#!/bin/bash
# tag: every-slurm
# Fail-fast across nodes: rank 3 (second node) exits 3 while every other
# rank sleeps with a grandchild.  The step ends with status 3 quickly, the
# failing rank is named, and nothing is left on any node -- in node, task and
# batch mode on the host, and in node and task mode with the workers in
# containers (--image: the agent tells ctrun at once, ctrun cancels the
# step, the other node's agent stops its workers; no container is left).
# Then the exit codes of a command from inside the image: not found (127),
# not executable (126).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
cd "$TMPD"
cat > worker.sh <<'W'
#!/bin/sh
if [ "$RANK" = 3 ]; then sleep 1; exit 3; fi
sleep 987 &
wait
W
chmod +x worker.sh
printf '#!/bin/bash\n"%s" --nproc-per-node 2 -- "%s/worker.sh"\n' "$CTRUN" "$TMPD" > job.sh

# fails_fast WHAT COMMAND...: the command's step ends with rank 3's status,
# soon, naming it, leaving nothing (no container either).
fails_fast() {
	local what=$1 start end
	shift
	rm -f err.txt job.out
	start=$(date +%s)
	run_rc "$@" 2> err.txt
	end=$(date +%s)
	touch job.out
	cat err.txt job.out
	assert_eq 3 "$rc" "$what: exit status"
	[ $((end - start)) -lt 20 ] || fail "$what: took $((end - start)) s (plain srun would wait 987 s)"
	grep -q "rank 3 on host ${NODES[1]} failed first: exited with status 3" err.txt job.out ||
		fail "$what: no root-cause line naming rank 3 on ${NODES[1]}"
	assert_no_leftovers "sleep 987" 10
	assert_no_containers
}

# With --image: a missing test image fails these behaviours only.
in_image() { # fails_fast WHAT COMMAND... with --image after "$CTRUN"
	local what=$1 a args=()
	shift
	need_image BUSYBOX busybox.sqsh
	for a in "$@"; do
		args+=("$a")
		[ "$a" != "$CTRUN" ] || args+=(--image "$BUSYBOX")
	done
	fails_fast "$what" "${args[@]}"
}

not_found() {
	need_image BUSYBOX busybox.sqsh
	run_rc srun -N1 "$CTRUN" --image "$BUSYBOX" -- no-such-command 2> err.txt
	assert_eq 127 "$rc" "command not found in the image"
	grep -q "command not found: no-such-command" err.txt || fail "127 message: $(cat err.txt)"
}
not_executable() {
	need_image BUSYBOX busybox.sqsh
	run_rc srun -N1 "$CTRUN" --image "$BUSYBOX" -- /etc/passwd 2> err.txt
	assert_eq 126 "$rc" "command not executable"
}

node=(srun -N2 --ntasks-per-node=1 "$CTRUN" --nproc-per-node 2 -- "$TMPD/worker.sh")
task=(srun -N2 --ntasks-per-node=2 "$CTRUN" -- "$TMPD/worker.sh")
behaviour "node mode (plain srun, no -K)" fails_fast "node mode" "${node[@]}"
behaviour "task mode" fails_fast "task mode" "${task[@]}"
behaviour "batch mode" fails_fast "batch mode" sbatch --wait --quiet -N2 -o "$TMPD/job.out" job.sh
behaviour "node mode in containers (plain srun, no -K)" in_image "node mode, --image" "${node[@]}"
behaviour "task mode in containers" in_image "task mode, --image" "${task[@]}"
behaviour "a command not found in the image: 127" not_found
behaviour "a command not executable in the image: 126" not_executable
