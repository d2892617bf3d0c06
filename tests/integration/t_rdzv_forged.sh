#!/bin/bash
# Another user of the cluster against a running `ctrun check`: the job
# string (JOB.STEP) is public in squeue and MASTER_PORT is known, so the
# attacker sends rank 0 forged hellos (a wrong world size, a claimed rank;
# in this protocol's layout and the previous one's) while rank 0 waits for
# rank 1.  They used to abort the job (world size mismatch, 2 of 2 tries).
# Now rank 0 drops them (they cannot prove the job's key) and the check
# still succeeds with its real ranks.
# Then a flood (issue 29, point 12): the attacker keeps 2000 connections to
# MASTER_PORT open from rank 1's own node (silent ones, garbage, forged
# hellos, a few bytes of the magic), reconnecting each one rank 0 closes,
# and rank 1 starts only once rank 0 has no room left.  Rank 0 used to keep
# 64 unproven connections for 5 s each and close every newcomer while full,
# so rank 1 got in only by luck and the check timed out.  Now a newcomer
# takes the oldest stranger's place and a rank's MAC'd hello takes it out
# of the strangers' places at once: the check completes under the flood.
. "$(dirname "$0")/lib.sh"
cd "$TMPD"
attacker=$("$CTRUN_REPO/tests/cluster/ensure-user.sh" ctrunmallory)
stop_attacker() {
	"$CLUSTER" exec "${NODES[1]}" pkill -KILL -u "$attacker" 2>/dev/null || true
	pkill -KILL -u "$attacker" 2>/dev/null || true
}
trap 'stop_attacker; cleanup_tmp' EXIT
N1=${NODES[0]} N2=${NODES[1]}
IP1=$CTRUN_CLUSTER_SUBNET.11 # node i is .(10+i)
port=$((CTRUN_CLUSTER_PORT_BASE + 471))

cat > forge.py <<'P'
import os, socket, struct, sys, time
addr, port, job = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def hello(version, rank, world):
    h = b"CTRUNRZ%d" % version + struct.pack("!II", rank, world)
    h += job.encode().ljust(64, b"\0") + b"attacker".ljust(64, b"\0")
    h += os.urandom(32) if version >= 3 else b""  # the nonce
    return h + (os.urandom(32) if version >= 4 else b"")  # a guessed MAC
deadline = time.time() + 30
while True: # until rank 0 listens
    try:
        socket.create_connection((addr, port), timeout=2).close()
        break
    except OSError:
        if time.time() > deadline:
            sys.exit("rank 0 never listened")
        time.sleep(0.1)
for version in (3, 4):
    for rank, world in ((1, 3), (1, 2)):
        what = f"v{version} rank {rank} world {world}"
        try:
            s = socket.create_connection((addr, port), timeout=10)
            s.sendall(hello(version, rank, world))
            head = s.recv(12, socket.MSG_WAITALL)
            if len(head) == 12 and head[8:12] == b"CHLG":
                s.recv(64, socket.MSG_WAITALL)
                what += " challenged"
                try:
                    s.sendall(os.urandom(32)) # a guessed proof
                    while s.recv(4096): # until rank 0 closes it
                        pass
                except ConnectionError: # closed already: the hello's MAC was wrong
                    pass
            else:
                while s.recv(4096):
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
dropped() { assert_eq 2 "$(grep -c '^v4 .* challenged closed by rank 0$' forge.txt)" "forged hellos dropped"; }
behaviour "the forged hellos reached rank 0 and were dropped there" dropped
no_workers_left() { assert_no_leftovers "__worker check"; }
behaviour "no worker of the check left" no_workers_left

# The flood.  The attacker's script, on rank 1's node, until $TMPD/stop:
# 2000 connections, a quarter each silent, garbage, a forged hello of the
# job (a guessed MAC) and four bytes of the magic, each one rank 0 closes
# opened again.  It creates flooded when rank 0 first closed one of its
# silent connections (no room left, or its place given to a newcomer), and
# prints how many connections it made and how many rank 0 closed.
cat > flood.py <<'P'
import os, resource, select, socket, struct, sys, time
addr, port, job, stop, ready = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
N = 2000
resource.setrlimit(resource.RLIMIT_NOFILE, (N + 64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
hello = b"CTRUNRZ4" + struct.pack("!II", 1, 2) + job.encode().ljust(64, b"\0")
hello += b"stranger".ljust(64, b"\0") + os.urandom(64)  # nonce, guessed MAC
payload = {"silent": b"", "garbage": b"GET / HTTP/1.0\r\n\r\n" + os.urandom(200),
           "hello": hello, "magic": b"CTRU"}
kinds = list(payload)
socks, poller = {}, select.poll()
made = closed = i = 0
flooded = False
deadline = time.time() + 180
while not os.path.exists(stop) and time.time() < deadline:
    while len(socks) < N:
        s = socket.socket()
        s.setblocking(False)
        try:
            s.connect((addr, port))
        except BlockingIOError:
            pass
        socks[s.fileno()] = [s, kinds[i % 4], False]
        poller.register(s, select.POLLOUT)
        i += 1
    refused = 0
    for fd, ev in poller.poll(100):
        s, kind, up = socks[fd]
        gone = False
        if not up:  # connecting
            if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) != 0:
                refused += 1  # rank 0 not listening (yet): try again
                gone = True
            else:
                socks[fd][2] = True
                made += 1
                try:
                    s.send(payload[kind])
                except OSError:
                    pass
                poller.modify(s, select.POLLIN)
        else:
            try:
                gone = not s.recv(4096)  # a challenge is never answered
            except BlockingIOError:
                pass
            except OSError:
                gone = True
            if gone:
                closed += 1
                if kind == "silent" and not flooded:
                    open(ready, "w").close()
                    flooded = True
        if gone:
            poller.unregister(s)
            s.close()
            del socks[fd]
    if refused:
        time.sleep(0.05)
print(f"flood: {made} connections made, {closed} closed by rank 0", flush=True)
P
chmod 644 flood.py
port2=$((CTRUN_CLUSTER_PORT_BASE + 472))
note "rank 1 starts only once the attacker has filled rank 0's room"
# shellcheck disable=SC2016
srun -N2 --ntasks-per-node=1 bash -c 'if [ "$SLURM_NODEID" = 1 ]; then
	while [ ! -e "$1/go2" ]; do sleep 0.05; done; fi
	exec "$2" check --nproc-per-node 1 --master-port "$3" --rdzv-timeout 10' \
	_ "$TMPD" "$CTRUN" "$port2" > flood-out.txt 2> flood-err.txt &
check=$!
first_step=$step step=""
for ((i = 0; i < 400; i++)); do
	step=$(squeue -h -s -o %i | grep -E '^[0-9]+\.[0-9]+$' | grep -vx "$first_step" | head -1) || true
	[ -n "$step" ] && break
	sleep 0.05
done
[ -n "$step" ] || { touch go2; fail "no step of the flooded check in squeue"; }
"$CLUSTER" exec "$N2" su "$attacker" -s /bin/bash -c \
	"exec $PY '$TMPD/flood.py' $IP1 $port2 '$step' '$TMPD/stop' '$TMPD/flooded'" > flood.txt 2>&1 &
flooder=$!
for ((i = 0; i < 1200; i++)); do [ -e flooded ] && break; sleep 0.05; done
flooded_first=no
[ -e flooded ] && flooded_first=yes
touch go2 # whatever happened: the check must end either way
run_rc wait "$check"
check_rc=$rc
touch stop
run_rc wait "$flooder"
flooder_rc=$rc
cat flood-out.txt flood-err.txt flood.txt
flood_reached() {
	assert_eq yes "$flooded_first" "rank 0 full of the attacker's connections before rank 1 started"
	assert_eq 0 "$flooder_rc" "the attacker's script"
	local closed
	closed=$(sed -n 's/^flood: [0-9]* connections made, \([0-9]*\) closed by rank 0$/\1/p' flood.txt)
	[ -n "$closed" ] && [ "$closed" -gt 64 ] ||
		fail "rank 0 closed ${closed:-no} connections of the flood: it never ran out of room"
}
behaviour "the flood filled rank 0's room before rank 1 came, and went on" flood_reached
flood_check_ok() {
	assert_eq 0 "$check_rc" "ctrun check under a flood of connections"
	grep -q "rendezvous: 2 of 2 ranks" flood-out.txt || fail "rendezvous did not complete"
	grep -qx "check: ok" flood-out.txt || fail "no verdict"
}
behaviour "ctrun check completes under the flood" flood_check_ok
behaviour "no worker of the flooded check left" no_workers_left
