#!/usr/bin/python3
"""A DDP training that checkpoints when it is told to stop (SIGUSR1, the
warning `sbatch --signal=B:USR1@T` sends and ctrun passes to every worker)
and resumes from the checkpoint when it starts again.

After each epoch the ranks agree (all_reduce of "was I signalled") whether to
stop; then rank 0 saves DIR/ckpt.pt (model, optimizer, next epoch) and
touches DIR/preempted, and every rank exits 99.  A run that finds
DIR/ckpt.pt starts from its epoch.  Rank 0 appends "epoch N" to DIR/log."""
import argparse
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn

stop = False


def on_usr1(signum, frame):
    global stop
    stop = True


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ckpt", required=True)
    p.add_argument("--epochs", type=int, default=50)
    p.add_argument("--epoch-seconds", type=float, default=0.2)
    args = p.parse_args()
    signal.signal(signal.SIGUSR1, on_usr1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    path, start = os.path.join(args.ckpt, "ckpt.pt"), 0
    if os.path.exists(path):
        state = torch.load(path)
        model.module.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        start = state["epoch"]
        if rank == 0:
            print(f"resumed at epoch {start}", flush=True)
    gen = torch.Generator().manual_seed(rank)
    for epoch in range(start, args.epochs):
        x = torch.randn(16, 8, generator=gen)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        time.sleep(args.epoch_seconds)
        if rank == 0:
            with open(os.path.join(args.ckpt, "log"), "a") as f:
                f.write(f"epoch {epoch}\n")
        flag = torch.tensor([1 if stop else 0])
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        if flag.item():
            if rank == 0:
                torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(),
                            "epoch": epoch + 1}, path + ".tmp")
                os.replace(path + ".tmp", path)
                open(os.path.join(args.ckpt, "preempted"), "w").close()
                print(f"checkpoint at epoch {epoch + 1}", flush=True)
            dist.barrier()
            dist.destroy_process_group()
            return 99
    if rank == 0:
        print(f"done: {args.epochs} epochs", flush=True)
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
