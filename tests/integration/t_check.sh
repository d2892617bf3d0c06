#!/bin/bash
# tag: every-slurm
# `ctrun check` on the 2-node cluster: run like a training job in node,
# task and batch mode, every rank reported once with the right values, the
# all-reduce sum verified (socket backend: the nodes have no CUDA device,
# which must fail soft), and the classic misconfigurations diagnosed in one
# line each: master on loopback, port in use, nothing listening on the
# port, world size mismatch, wrong interface, duplicate GPU.
. "$(dirname "$0")/lib.sh"
cd "$TMPD"
N1=${NODES[0]} N2=${NODES[1]}
IP1=$CTRUN_CLUSTER_SUBNET.11 # node i is .(10+i)

# Every rank once, with the contract values and the GPU its LOCAL_RANK picks.
# usage: check_json FILE NNODES NPROC
check_json() {
	"$PY" - "$@" "${NODES[@]}" <<'P'
import json, sys
f, nnodes, nproc, nodes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
d = json.load(open(f))
world = nnodes * nproc
assert d["ok"] is True, d
assert d["world_size"] == world, d["world_size"]
assert sorted(r["rank"] for r in d["ranks"]) == list(range(world)), [r["rank"] for r in d["ranks"]]
for r in d["ranks"]:
    k = r["rank"]
    assert r["local_rank"] == k % nproc and r["node_rank"] == k // nproc, r
    assert r["host"] == nodes[k // nproc], r
    assert r["cpus"], r
    # The fake GPUs: node mode picks LOCAL_RANK's, task mode gets Slurm's per-task GPU.
    assert r["gpu"] == str(k % nproc), r
    assert r["bus_id"] is None, r  # no CUDA device here
m = d["master"].split(":")[0]
assert not m.startswith("127."), m
a = d["allreduce"]
assert a["run"] and a["ok"] and a["wrong"] == 0 and a["backend"] == "socket", a
assert a["note"].startswith("no CUDA device: using socket backend"), a
print(f"ok: {world} ranks, master {d['master']}")
P
}

node_mode() {
	srun -N2 --ntasks-per-node=1 "$CTRUN" check --nproc-per-node 2 --json > node.json
	check_json node.json 2 2
}
behaviour "node mode, 2 workers per node, JSON" node_mode

task_mode() {
	srun -N2 --ntasks-per-node=2 --gpus-per-task=1 "$CTRUN" check --json > task.json
	check_json task.json 2 2
}
behaviour "task mode, one GPU per task" task_mode

table_output() {
	srun -N2 --ntasks-per-node=1 "$CTRUN" --nproc-per-node 2 check > table.txt
	cat table.txt
	assert_eq "RANK LOCAL NODE HOST GPU BUS_ID CPUS NUMA GPU_NUMA" "$(head -1 table.txt | tr -s ' ')" "header"
	for r in 0 1 2 3; do
		assert_eq 1 "$(grep -c "^$r  " table.txt)" "rows of rank $r"
	done
	assert_eq "$N2" "$(awk '$1 == 3 {print $4}' table.txt)" "host of rank 3"
	grep -q "^all-reduce: no CUDA device: using socket backend" table.txt || fail "GPU path did not fail soft"
	grep -q "^all-reduce: socket, 4 ranks x 1048576 floats: sum correct" table.txt || fail "no verified sum"
	grep -qx "check: ok" table.txt || fail "no verdict"
}
behaviour "table output: one row per rank, verdict lines" table_output

batch_mode() {
	sbatch -N2 --wait -o batch.out --wrap "$CTRUN --nproc-per-node 1 check" > /dev/null
	cat batch.out
	grep -q "rendezvous: 2 of 2 ranks" batch.out || fail "batch mode check"
	grep -qx "check: ok" batch.out || fail "batch mode verdict"
}
behaviour "batch mode: ctrun check from an sbatch script" batch_mode

# A diagnosis: non-zero exit, the one line on stderr, fast.
# usage: diagnose PATTERN WHAT MAX-SECONDS COMMAND...
diagnose() {
	local pat=$1 what=$2 max=$3 start
	shift 3
	start=$SECONDS
	run_rc "$@" > out.txt 2> err.txt
	cat err.txt
	[ "$rc" -ne 0 ] || fail "$what: exit status 0"
	grep -q -- "ctrun: check: $pat" err.txt || fail "$what: no diagnosis matching '$pat'"
	[ $((SECONDS - start)) -le "$max" ] || fail "$what: took $((SECONDS - start))s"
}

loopback() {
	diagnose "master resolves to loopback: MASTER_ADDR '127.0.0.1' is 127.0.0.1" "loopback" 20 \
		srun -N2 --ntasks-per-node=1 "$CTRUN" check --master-addr 127.0.0.1 --nproc-per-node 1
}
behaviour "master resolves to loopback" loopback

# The port of this behaviour, and port + 1 for the next.
port=$((CTRUN_CLUSTER_PORT_BASE + 451))
port_in_use() {
	"$CLUSTER" exec "$N1" "$PY" -c "
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('0.0.0.0', $port)); s.listen(8); open('$TMPD/listening', 'w').close(); time.sleep(15)" &
	listener=$!
	for _ in $(seq 50); do [ -e listening ] && break; sleep 0.1; done
	diagnose "port in use: MASTER_PORT $port is already taken on $N1" "port in use" 20 \
		srun -N2 --ntasks-per-node=1 "$CTRUN" check --master-port "$port" --nproc-per-node 1
	kill "$listener" 2>/dev/null || true
	wait "$listener" 2>/dev/null || true
}
behaviour "port in use: another service listens on MASTER_PORT on the first node" port_in_use

not_listening() {
	diagnose "port blocked or not listening: $IP1:$((port + 1)) refused connections from $N2 for 2s" \
		"blocked port" 20 srun -N1 -w "$N2" "$CTRUN" check --nnodes 2 --node-rank 1 \
		--master-addr "$IP1" --master-port $((port + 1)) --rdzv-timeout 2 --nproc-per-node 1
}
behaviour "nothing listens on MASTER_PORT (rank 0 never started: blocked, or wrong host)" not_listening

world_size() {
	diagnose "world size mismatch: 2 of WORLD_SIZE=3 ranks" "world size" 30 \
		srun -N2 --ntasks-per-node=1 "$CTRUN" check --nnodes 3 --rdzv-timeout 2 --nproc-per-node 1
}
behaviour "world size mismatch" world_size

wrong_interface() {
	diagnose "wrong interface: NCCL_SOCKET_IFNAME=ib0 selects no interface" "interface" 20 \
		srun -N2 --ntasks-per-node=1 "$CTRUN" check --env NCCL_SOCKET_IFNAME=ib0 --nproc-per-node 1
}
behaviour "wrong interface" wrong_interface

duplicate_gpu() {
	diagnose "duplicate GPU per node: ranks 0 and 4 on $N1 both use GPU 0" "duplicate GPU" 20 \
		srun -N1 -w "$N1" "$CTRUN" check --nproc-per-node 8
	grep -q "^check: FAILED" out.txt || fail "duplicate GPU: report does not say FAILED"
}
behaviour "duplicate GPU: 8 workers on a node with 4 GPUs" duplicate_gpu

socket_ifname() {
	srun -N2 --ntasks-per-node=1 "$CTRUN" env --nproc-per-node 1 > env.txt
	assert_eq 2 "$(grep -c '^NCCL_SOCKET_IFNAME=eth0$' env.txt)" "NCCL_SOCKET_IFNAME"
	assert_eq 2 "$(grep -c '^GLOO_SOCKET_IFNAME=eth0$' env.txt)" "GLOO_SOCKET_IFNAME"
}
behaviour "workers get NCCL_SOCKET_IFNAME/GLOO_SOCKET_IFNAME of the route to the master" socket_ifname
behaviour "no check worker is left" assert_no_leftovers "__worker check"
