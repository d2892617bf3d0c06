#!/usr/bin/python3
# ptyrun.py INPUT CMD [ARG...]: runs CMD on a new pseudo-terminal as a user
# at a keyboard would, types INPUT (with \n escapes) once it has printed
# something or after a second, prints everything it wrote, then its exit
# status on a last line "status N".
import os, pty, select, sys, time

inp = sys.argv[1].encode().decode("unicode_escape").encode()
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
out = b""

def pump(seconds):
    global out
    end = time.time() + seconds
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            try:
                data = os.read(fd, 4096)
            except OSError:
                return False
            if not data:
                return False
            out += data
    return True

start = time.time()
while not out and time.time() - start < 20:
    if not pump(0.2):
        break
pump(0.3)
os.write(fd, inp)
deadline = time.time() + 60
while time.time() < deadline and pump(0.2):
    pass
_, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors="replace"))
print("\nstatus", os.waitstatus_to_exitcode(status))
