#!/usr/bin/python3
"""A small PyTorch DDP training (gloo, CPU) driven only by the torchrun
environment contract that ctrun sets.

Each rank trains on its own shard of a synthetic regression problem; DDP
averages the gradients, so every rank must end with identical weights.
With --out DIR every rank writes DIR/rank-N.json with what it saw
(RANK, LOCAL_RANK, WORLD_SIZE, NODE_RANK, host) and a digest of its final
weights; the integration tests compare those files."""
import argparse
import hashlib
import json
import os
import socket
import sys

import torch
import torch.distributed as dist
import torch.nn as nn


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--out", default=None)
    args = p.parse_args()

    env = {k: os.environ.get(k) for k in (
        "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "NODE_RANK",
        "GROUP_RANK", "NNODES", "MASTER_ADDR", "MASTER_PORT",
        "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_RUN_ID")}
    dist.init_process_group("gloo")  # env:// rendezvous from the contract
    rank, world = dist.get_rank(), dist.get_world_size()

    torch.manual_seed(0)  # same initial weights everywhere (DDP also broadcasts)
    model = nn.parallel.DistributedDataParallel(
        nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(1000 + rank)  # a different shard per rank
    true_w = torch.arange(8, dtype=torch.float32).unsqueeze(1) / 8
    for epoch in range(args.epochs):
        for _ in range(args.steps):
            x = torch.randn(32, 8, generator=gen)
            y = x @ true_w
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        total = loss.detach().clone()
        dist.all_reduce(total)
        if rank == 0:
            print(f"epoch {epoch}: mean loss {total.item() / world:.5f}", flush=True)

    digest = hashlib.sha256()
    for t in model.state_dict().values():
        digest.update(t.detach().numpy().tobytes())
    if args.out:
        with open(os.path.join(args.out, f"rank-{rank}.json"), "w") as f:
            json.dump({"env": env, "host": socket.gethostname(),
                       "weights": digest.hexdigest()}, f)
    print(f"rank {rank}/{world} on {socket.gethostname()}: weights {digest.hexdigest()[:16]}",
          flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
