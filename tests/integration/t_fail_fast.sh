#!/bin/bash
# tag: every-slurm
# Rank 3 (second node) exits 3 while every other rank sleeps with a
# grandchild: the step ends with status 3 quickly, the failing rank is
# named, and nothing is left on any node -- in node, task and batch mode.
. "$(dirname "$0")/lib.sh"
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
	touch job.out
	cat err.txt job.out
	assert_eq 3 "$rc" "$what: exit status"
	[ $((end - start)) -lt 20 ] || fail "$what: took $((end - start)) s (plain srun would wait 987 s)"
	grep -q "rank 3 on host ${NODES[1]} failed first: exited with status 3" err.txt job.out ||
		fail "$what: no root-cause line naming rank 3 on ${NODES[1]}"
	assert_no_leftovers "sleep 987" 10
}
check_mode "node mode (plain srun, no -K)" srun -N2 --ntasks-per-node=1 "$CTRUN" --nproc-per-node 2 -- "$TMPD/worker.sh"
check_mode "task mode" srun -N2 --ntasks-per-node=2 "$CTRUN" -- "$TMPD/worker.sh"
printf '#!/bin/bash\n"%s" --nproc-per-node 2 -- "%s/worker.sh"\n' "$CTRUN" "$TMPD" > job.sh
check_mode "batch mode" sbatch --wait --quiet -N2 -o "$TMPD/job.out" job.sh
