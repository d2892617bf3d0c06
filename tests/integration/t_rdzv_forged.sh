#!/bin/bash
# Another user of the cluster against a running `ctrun check`: the job
# string (JOB.STEP) is public in squeue and MASTER_PORT is known, so the
# attacker sends rank 0 forged hellos (a wrong world size, a claimed rank;
# in this protocol's layout and the previous one's) while rank 0 waits for
# rank 1.  They used to abort the job (world size mismatch, 2 of 2 tries).
# Now rank 0 drops them (they cannot prove the job's key) and the check
# still succeeds with its real ranks.
. "$(dirname "$0")/lib.sh"
cd "$TMPD"
attacker=$("$CTRUN_REPO/tests/cluster/ensure-user.sh" ctrunmallory)
N1=${NODES[0]} N2=${NODES[1]}
IP1=$CTRUN_CLUSTER_SUBNET.11 # node i is .(10+i)
port=$((CTRUN_CLUSTER_PORT_BASE + 471))

cat > forge.py <<'P'
import os, socket, struct, sys, time
addr, port, job = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def hello(version, rank, world):
    h = b"CTRUNRZ%d" % version + struct.pack("!II", rank, world)
    h += job.encode().ljust(64, b"\0") + b"attacker".ljust(64, b"\0")
    return h + (os.urandom(32) if version >= 3 else b"")
deadline = time.time() + 30
while True: # until rank 0 listens
    try:
        socket.create_connection((addr, port), timeout=2).close()
        break
    except OSError:
        if time.time() > deadline:
            sys.exit("rank 0 never listened")
        time.sleep(0.1)
for version in (2, 3):
    for rank, world in ((1, 3), (1, 2)):
        what = f"v{version} rank {rank} world {world}"
        try:
            s = socket.create_connection((addr, port), timeout=10)
            s.sendall(hello(version, rank, world))
            head = s.recv(12, socket.MSG_WAITALL)
            if len(head) == 12 and head[8:12] == b"CHLG":
                s.recv(64, socket.MSG_WAITALL)
                s.sendall(os.urandom(32)) # a guessed proof
                what += " challenged"
            while s.recv(4096): # until rank 0 closes it
                pass
            print(what, "closed by rank 0", flush=True)
        except OSError as e:
            print(what, "error", e, flush=True)
P
chmod 644 forge.py

note "rank 1 starts only after the attacker is done; rank 0 waits for it"
# shellcheck disable=SC2016
srun -N2 --ntasks-per-node=1 bash -c 'if [ "$SLURM_NODEID" = 1 ]; then
	while [ ! -e "$1/go" ]; do sleep 0.05; done; fi
	exec "$2" check --nproc-per-node 1 --master-port "$3" --rdzv-timeout 60' \
	_ "$TMPD" "$CTRUN" "$port" > out.txt 2> err.txt &
check=$!

note "the attacker reads the step from squeue, as any user can"
step=""
for ((i = 0; i < 400; i++)); do
	step=$(su "$attacker" -s /bin/bash -c "SLURM_CONF='$SLURM_CONF' squeue -h -s -o %i" |
		grep -E '^[0-9]+\.[0-9]+$' | head -1) || true
	[ -n "$step" ] && break
	sleep 0.05
done
[ -n "$step" ] || fail "no step in squeue"

# rank 1 waits for go, made at the top level whatever the attacker's
# behaviour did, so the check ends either way.
forge() {
	echo "forged hellos for job $step from $attacker on $N2"
	run_rc "$CLUSTER" exec "$N2" su "$attacker" -s /bin/bash -c "$PY '$TMPD/forge.py' $IP1 $port $step" \
		> forge.txt 2>&1
	cat forge.txt
	assert_eq 0 "$rc" "the attacker's script"
}
behaviour "another user's forged hellos, sent while rank 0 waits: the attacker's script runs" forge
touch go
run_rc wait "$check"
check_rc=$rc
cat out.txt err.txt
check_ok() {
	assert_eq 0 "$check_rc" "ctrun check with an attacker"
	grep -q "rendezvous: 2 of 2 ranks" out.txt || fail "rendezvous did not complete"
	grep -qx "check: ok" out.txt || fail "no verdict"
}
behaviour "ctrun check succeeds with its real ranks" check_ok
# The attack reached rank 0 and was dropped there, not refused before.
dropped() { assert_eq 2 "$(grep -c '^v3 .* challenged closed by rank 0$' forge.txt)" "forged hellos dropped"; }
behaviour "the forged hellos reached rank 0 and were dropped there" dropped
no_workers_left() { assert_no_leftovers "__worker check"; }
behaviour "no worker of the check left" no_workers_left
