#!/bin/bash
# Fail-fast across nodes with the workers in containers: rank 3 (second
# node) exits 3 while every other rank sleeps with a grandchild.  The agent
# tells ctrun at once, ctrun cancels the step, the other node's agent stops
# its workers: the step ends with status 3 quickly, the failing rank is
# named, and no container or worker is left -- in node and task mode.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
need_image BUSYBOX busybox.sqsh
cd "$TMPD"
cat > worker.sh <<'W'
#!/bin/sh
if [ "$RANK" = 3 ]; then sleep 1; exit 3; fi
sleep 987 &
wait
W
chmod +x worker.sh

check_mode() { # what, then the command
	local what=$1 start end
	shift
	start=$(date +%s)
	run_rc "$@" 2> err.txt
	end=$(date +%s)
	cat err.txt
	assert_eq 3 "$rc" "$what: exit status"
	[ $((end - start)) -lt 20 ] || fail "$what: took $((end - start)) s (plain srun would wait 987 s)"
	grep -q "rank 3 on host ${NODES[1]} failed first: exited with status 3" err.txt ||
		fail "$what: no root-cause line naming rank 3 on ${NODES[1]}"
	assert_no_leftovers "sleep 987" 10
	assert_no_containers
}
check_mode "node mode (plain srun, no -K)" srun -N2 --ntasks-per-node=1 "$CTRUN" --image "$BUSYBOX" \
	--nproc-per-node 2 -- "$TMPD/worker.sh"
check_mode "task mode" srun -N2 --ntasks-per-node=2 "$CTRUN" --image "$BUSYBOX" -- "$TMPD/worker.sh"

# Exit codes from inside the image: not found, not executable.
run_rc srun -N1 "$CTRUN" --image "$BUSYBOX" -- no-such-command 2> err.txt
assert_eq 127 "$rc" "command not found in the image"
grep -q "command not found: no-such-command" err.txt || fail "127 message: $(cat err.txt)"
run_rc srun -N1 "$CTRUN" --image "$BUSYBOX" -- /etc/passwd 2> err.txt
assert_eq 126 "$rc" "command not executable"
