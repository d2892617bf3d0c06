#!/usr/bin/python3
"""A DDP training (gloo, CPU) written for torchrun's elastic mode, for the
in-job restart tests (t_resilience.sh) and the benchmark (bench/restart.sh):
it reads only the torchrun contract, checkpoints every --every steps and,
when it starts, resumes from its last checkpoint, as a torchrun-elastic
script does.

Every step's data is a function of the step and the rank only, so a run
that loses a node and resumes on a spare in the same rank ends with the
same weights, bit for bit, as a run that was never interrupted.  The model
is one parameter tensor: DDP lays its gradient bucket out again after its
first step, and with several tensors a resumed run's first step all-reduces
them in another layout, so other chunks, summed in another order: weights
1e-8 apart (PyTorch's own arithmetic, restarted on the same nodes or not).

In --dir: ckpt.pt (rank 0, written whole then renamed), "progress" (one
line per event, every rank), weights (rank 0 at the end: the parameters as
float.hex, comma-separated).  Test switches, attempt 0 only (the first
TORCHELASTIC_RESTART_COUNT): --stall-at S makes every rank wait, silent,
after step S (the test then kills a node); with --hang-rank R only rank R
waits, and the others block in the next step's all-reduce (a hang)."""
import argparse
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--dir", required=True)
    p.add_argument("--steps", type=int, default=24)
    p.add_argument("--every", type=int, default=5)
    p.add_argument("--stall-at", type=int, default=0)
    p.add_argument("--hang-rank", type=int, default=-1)
    p.add_argument("--step-seconds", type=float, default=0.0)
    args = p.parse_args()

    attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    log = open(os.path.join(args.dir, "progress"), "a")

    def say(msg):
        log.write(f"{time.time():.3f} {msg}\n")
        log.flush()

    torch.manual_seed(0)
    model = nn.Linear(16, 4, bias=False)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    ckpt, start = os.path.join(args.dir, "ckpt.pt"), 1
    if os.path.exists(ckpt):
        state = torch.load(ckpt)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["step"] + 1
    ddp = nn.parallel.DistributedDataParallel(model)
    say(f"start attempt={attempt} rank={rank} world={world} group={os.environ['GROUP_RANK']} "
        f"nnodes={os.environ['NNODES']} host={socket.gethostname()} from={start} "
        f"master={os.environ['MASTER_ADDR']} max={os.environ['TORCHELASTIC_MAX_RESTARTS']}")
    for step in range(start, args.steps + 1):
        gen = torch.Generator().manual_seed(step * 1000 + rank)
        x = torch.randn(8, 16, generator=gen)
        y = torch.randn(8, 4, generator=gen)
        loss = nn.functional.mse_loss(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.6f}", flush=True)
        say(f"step {step} attempt={attempt} rank={rank}")
        if args.step_seconds:
            time.sleep(args.step_seconds)
        if step % args.every == 0 and rank == 0:
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step},
                       ckpt + ".tmp")
            os.replace(ckpt + ".tmp", ckpt)
            say(f"ckpt step={step}")
        if attempt == 0 and step == args.stall_at and args.hang_rank in (-1, rank):
            say(f"stalled rank={rank}")
            while True:
                time.sleep(1)
    if rank == 0:
        flat = torch.cat([t.detach().flatten() for t in model.state_dict().values()])
        with open(os.path.join(args.dir, "weights"), "w") as f:
            f.write(",".join(float(v).hex() for v in flat.tolist()))
        say(f"done world={world}")
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
