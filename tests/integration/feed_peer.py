#!/usr/bin/env python3
"""feed_peer.py - the image feed's other parties for t_registry_feed_peers.sh: another
user on a node and a slow node of the step (runner/deliver/feed.h has the wire; issue 41, points
4-7).  Every mode prints one line per event, flushed, for the test to wait on and check.

  silent PORT
      listens on 0.0.0.0:PORT ("listening"), before the step's ctrun can, accepts every
      connection and reads its hello ("hello N": N bytes), and never answers: a silent
      impostor on the feed's port.
  flood HOST PORT N
      keeps N connections to HOST:PORT open that never say a word, opening a new one
      (one try each 50 ms) for each the other side closes ("closed"); "flooding" once N
      were made.  The first connects while refused (the step's ctrun not listening yet).
  hello SECRET JOB STEP UP DOWN POS
      writes to stdout the hello node DOWN (at position POS) sends to node UP in step
      JOB.STEP of the job whose secret (CTRUN_JOB_SECRET) is SECRET: what someone who
      reads the cluster network sees on that link.
  replay HOST PORT FILE
      connects to HOST:PORT (while refused: not listening yet), sends FILE's bytes and
      reads until the other side closes: "answered N" (the bytes it got).
  stall UP DOWN
      in a task of the step, as its node DOWN (SLURM_NODEID its position, CTRUN_JOB_SECRET
      the job's secret), with a tiny receive buffer: sends its hello to node UP's feed
      port, checks the acknowledgement's MAC ("acked"), then never reads again: a node
      below that stops reading.  When the other side drops the link: "dropped", and it
      ends.
"""
import hashlib
import hmac
import os
import select
import selectors
import socket
import sys
import time

MAGIC = b"CTRUNIF3"


def feed_key(secret_hex, job, step):
    label = b"ctrun-imagefeed\0" + job.encode() + b"\0" + step.encode() + b"\0"
    return hmac.new(bytes.fromhex(secret_hex), label, hashlib.sha256).digest()


def field(s, n=64):
    b = s.encode()
    assert len(b) < n
    return b.ljust(n, b"\0")


def hello(key, job, step, up, down, pos):
    """struct feed_hello: magic, job, host (the sender), up, pos, nonce, mac."""
    h = MAGIC + field(job + "." + step) + field(down) + field(up) + int(pos).to_bytes(4, "big")
    h += os.urandom(32)
    return h + hmac.new(key, b"feed-hello\0" + h, hashlib.sha256).digest()


def dial(host, port, rcvbuf=0):
    """A connection, retried while refused (for at most 60 s)."""
    for _ in range(1200):
        s = socket.socket()
        if rcvbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        try:
            s.connect((host, port))
            return s
        except ConnectionRefusedError:
            s.close()
            time.sleep(0.05)
    sys.exit("feed_peer: %s:%d refused for 60 s" % (host, port))


def say(*words):
    print(*words, flush=True)


def silent(port):
    ls = socket.socket()
    ls.bind(("0.0.0.0", port))
    ls.listen(16)
    say("listening")
    held = []
    while True:
        c, _ = ls.accept()
        held.append(c)
        say("hello", len(c.recv(4096)))


def gone(s):
    """Whether the other side closed s (it never sends)."""
    try:
        return not s.recv(4096)
    except ConnectionResetError:
        return True


def attempt(host, port):
    """One connection, or None when refused."""
    s = socket.socket()
    try:
        s.connect((host, port))
        return s
    except ConnectionRefusedError:
        s.close()
        return None


def flood(host, port, n):
    sel = selectors.DefaultSelector()
    made = 0
    while True:
        # The first n wait for the port; after that, one try a round.
        while len(sel.get_map()) < n:
            s = dial(host, port) if made < n else attempt(host, port)
            if s is None:
                break
            sel.register(s, selectors.EVENT_READ)
            made += 1
            if made == n:
                say("flooding")
        full = len(sel.get_map()) == n
        for k, _ in sel.select(None if full else 0.05):
            if gone(k.fileobj):
                sel.unregister(k.fileobj)
                k.fileobj.close()
                say("closed")


def replay(host, port, path):
    s = dial(host, port)
    s.sendall(open(path, "rb").read())
    got = 0
    while True:
        try:
            b = s.recv(1 << 20)
        except ConnectionResetError:
            break
        if not b:
            break
        got += len(b)
    say("answered", got)


def feed_port(job, step):
    """runner/deliver/feed_step.c, feed_port."""
    return 10000 + (int(job) * 16 + int(step) % 16 + 11000) % 22000


def stall(up, down):
    job, step, pos = os.environ["SLURM_JOB_ID"], os.environ["SLURM_STEP_ID"], os.environ["SLURM_NODEID"]
    key = feed_key(os.environ["CTRUN_JOB_SECRET"], job, step)
    h = hello(key, job, step, up, down, pos)
    s = dial(up, feed_port(job, step), rcvbuf=4096)
    s.sendall(h)
    beat = s.recv(48, socket.MSG_WAITALL)
    nonce = h[8 + 64 * 3 + 4:][:32]
    mac = hmac.new(key, b"feed-beat\0" + nonce + beat[:16], hashlib.sha256).digest()
    if len(beat) != 48 or beat[:8] != MAGIC or int.from_bytes(beat[8:12], "big") != 1 or \
            not hmac.compare_digest(mac, beat[16:]):
        sys.exit("feed_peer: no acknowledgement of node %s" % up)
    say("acked")
    # Only the end of the link, never its data: nothing is read.
    p = select.poll()
    p.register(s, select.POLLRDHUP)
    while not any(ev & (select.POLLHUP | select.POLLERR | select.POLLRDHUP) for _, ev in p.poll()):
        pass
    say("dropped")


def main(a):
    if a[0] == "silent":
        silent(int(a[1]))
    elif a[0] == "flood":
        flood(a[1], int(a[2]), int(a[3]))
    elif a[0] == "hello":
        sys.stdout.buffer.write(hello(feed_key(a[1], a[2], a[3]), a[2], a[3], a[4], a[5], a[6]))
    elif a[0] == "replay":
        replay(a[1], int(a[2]), a[3])
    elif a[0] == "stall":
        stall(a[1], a[2])
    else:
        sys.exit(__doc__)


main(sys.argv[1:])
