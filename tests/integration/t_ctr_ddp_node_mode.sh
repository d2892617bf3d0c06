#!/bin/bash
# DDP training inside containers (torch image, runc) through srun with one
# task per node: one container per node, its agent starting 2 workers.
# Then: every worker of a node shares that node's container (PID namespace,
# the agent as PID 1), and there are exactly as many containers as nodes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/ctrlib.sh"
need_image TORCH torch.sqsh
need_image BUSYBOX busybox.sqsh
cd "$TMPD"
cp "$CTRUN_REPO/examples/train_ddp.py" .
ddp() {
	run_rc srun -N2 --ntasks-per-node=1 "$CTRUN" --image "$TORCH" --nproc-per-node 2 \
		train_ddp.py --epochs 2 --out "$TMPD"
	assert_eq 0 "$rc" "srun exit status"
	check_ddp "$TMPD" 2 2
}

one_container_per_node() {
run_rc srun -N2 --ntasks-per-node=1 "$CTRUN" --image "$BUSYBOX" --nproc-per-node 2 -- \
	sh -c 'echo "$(hostname) $(readlink /proc/self/ns/pid) $(tr "\0" " " </proc/1/cmdline)" > ns.$RANK'
assert_eq 0 "$rc" "srun exit status (namespaces)"
"$PY" - "$TMPD" "$CTRUN_CLUSTER_NODE_NAMES" <<'PYEOF'
import sys
d, nodes = sys.argv[1], sys.argv[2].split()
rows = [open(f"{d}/ns.{r}").read().split(None, 2) for r in range(4)]
for r, (host, ns, init) in enumerate(rows):
    assert host == nodes[r // 2], f"rank {r} on {host}"
    assert init.startswith("/.ctrun/agent /.ctrun/spec"), f"rank {r}: PID 1 is {init!r}"
per_node = {h: {ns for hh, ns, _ in rows if hh == h} for h in nodes}
assert all(len(v) == 1 for v in per_node.values()), f"a node has several containers: {per_node}"
assert len({ns for _, ns, _ in rows}) == 2, "two nodes must have two containers"
print("ok: one container per node", per_node)
PYEOF
}

behaviour "DDP training in containers, 2 nodes x 2 workers" ddp
behaviour "the workers of a node share one container, one per node" one_container_per_node
behaviour "no container is left" assert_no_containers
