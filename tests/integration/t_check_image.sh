#!/bin/bash
# `ctrun check` and `ctrun bench` with --image (torch image): the workers
# run inside the container, one per node in node mode, as build/ctrun-worker
# mounted at /.ctrun/worker (ctrun itself needs libraries the image lacks).
# Every rank is reported once with the contract values, the all-reduce sum
# is right, bench's #wrong is 0; an image without a C library is refused
# in one line before anything starts.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
need_image TORCH torch.sqsh
need_image BUSYBOX busybox.sqsh
[ -x "$(dirname "$CTRUN")/ctrun-worker" ] || fail "build/ctrun-worker missing (make)"
cd "$TMPD"

node_json() {
	srun -N2 --ntasks-per-node=1 "$CTRUN" --image "$TORCH" --nproc-per-node 2 check --json > node.json
	"$PY" - node.json "${NODES[@]}" <<'P'
import json, sys
f, nodes = sys.argv[1], sys.argv[2:]
d = json.load(open(f))
assert d["ok"] is True and d["world_size"] == 4, d
assert sorted(r["rank"] for r in d["ranks"]) == [0, 1, 2, 3], d["ranks"]
for r in d["ranks"]:
    k = r["rank"]
    assert r["local_rank"] == k % 2 and r["node_rank"] == k // 2, r
    assert r["host"] == nodes[k // 2], r
    assert r["cpus"], r
    # The container's PID namespace: the agent is PID 1, the workers its children.
    assert r["pid"] < 100, f"rank {k}: pid {r['pid']}: not in the container's PID namespace"
assert not d["master"].startswith("127."), d["master"]
a = d["allreduce"]
assert a["run"] and a["ok"] and a["wrong"] == 0 and a["backend"] == "socket", a
print(f"ok: 4 ranks in the containers, master {d['master']}")
P
}
behaviour "check, node mode in the image, JSON: every rank once, run inside the container" node_json

table_output() {
	srun -N2 --ntasks-per-node=1 "$CTRUN" --image "$TORCH" --nproc-per-node 2 check > table.txt
	cat table.txt
	for r in 0 1 2 3; do
		assert_eq 1 "$(grep -c "^$r  " table.txt)" "rows of rank $r"
		assert_eq "${NODES[$((r / 2))]}" "$(awk -v r=$r '$1 == r {print $4}' table.txt)" "host of rank $r"
		assert_eq "$((r % 2)) $((r / 2))" "$(awk -v r=$r '$1 == r {print $2, $3}' table.txt)" \
			"local and node rank of rank $r"
	done
	grep -q "^rendezvous: 4 of 4 ranks" table.txt || fail "rendezvous line"
	grep -q "^all-reduce: socket, 4 ranks x 1048576 floats: sum correct" table.txt || fail "no verified sum"
	grep -qx "check: ok" table.txt || fail "no verdict"
}
behaviour "check, table output" table_output

task_mode() {
	srun -N2 --ntasks-per-node=2 --gpus-per-task=1 "$CTRUN" --image "$TORCH" check > task.txt
	cat task.txt
	for r in 0 1 2 3; do
		assert_eq "$((r % 2)) $((r / 2)) ${NODES[$((r / 2))]}" \
			"$(awk -v r=$r '$1 == r {print $2, $3, $4}' task.txt)" "rank $r in task mode"
	done
	grep -qx "check: ok" task.txt || fail "task mode verdict"
}
behaviour "check, task mode in the image: a container per task, every rank once" task_mode

bench_in_image() {
	srun -N2 --ntasks-per-node=1 "$CTRUN" --image "$TORCH" --nproc-per-node 2 \
		bench --backend socket -b 1M -e 4M -n 3 -w 1 > bench.txt
	cat bench.txt
	"$PY" - bench.txt <<'P'
import sys
lines = open(sys.argv[1]).read().splitlines()
assert sum(l.startswith("#  Rank ") for l in lines) == 4, "ranks in the preamble"
rows = [l.split() for l in lines if l and not l.startswith("#")]
assert [int(r[0]) for r in rows] == [1048576, 2097152, 3145728, 4194304], rows
assert all(r[8] == "0" and r[12] == "0" for r in rows), rows  # #wrong
assert "# Out of bounds values : 0 OK" in lines
print("ok: 4 sizes, #wrong 0")
P
}
behaviour "bench --backend socket in the image: #wrong 0" bench_in_image

no_libc() {
	run_rc srun -N1 "$CTRUN" --image "$BUSYBOX" --nproc-per-node 1 check > bb.out 2> bb.err
	cat bb.err
	assert_eq 125 "$rc" "exit status in a libc-less image"
	grep -q "ctrun: image .*busybox.sqsh has no C library (no /lib64/ld-linux-x86-64.so.2): check and bench need glibc" \
		bb.err || fail "no clear message for the libc-less image"
}
behaviour "an image without a C library: one line, exit 125" no_libc
behaviour "no container is left" assert_no_containers
behaviour "no worker is left" assert_no_leftovers "__worker"
