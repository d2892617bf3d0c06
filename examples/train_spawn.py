#!/usr/bin/python3
"""The mp.spawn pattern: one process per node (ctrun --nproc-per-node 1)
starts one training process per GPU itself, and needs from the launcher only
NODE_RANK, NNODES, MASTER_ADDR, MASTER_PORT and the node's GPUs.

Global rank = NODE_RANK * GPUs per node + local index.  Gloo on CPU here (the
test cluster's GPUs are fakes); with CUDA, each process would take
cuda:local and NCCL.  With --out DIR every process writes DIR/rank-N.json
(its rank, world size, node, and a digest of its final weights)."""
import argparse
import hashlib
import json
import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


def gpus_of_node():
    """The node's GPUs: what CUDA sees, else what Slurm gave the task."""
    n = torch.cuda.device_count()
    if n == 0 and os.environ.get("CUDA_VISIBLE_DEVICES"):
        n = len(os.environ["CUDA_VISIBLE_DEVICES"].split(","))
    return max(n, 1)


def train(local, nprocs, args):
    node, nnodes = int(os.environ["NODE_RANK"]), int(os.environ["NNODES"])
    rank, world = node * nprocs + local, nnodes * nprocs
    dist.init_process_group(
        "gloo", init_method=f"tcp://{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}",
        rank=rank, world_size=world)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(8, 16), nn.Tanh(),
                                                              nn.Linear(16, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    gen = torch.Generator().manual_seed(1000 + rank)
    true_w = torch.arange(8, dtype=torch.float32).unsqueeze(1) / 8
    for epoch in range(args.epochs):
        for _ in range(20):
            x = torch.randn(32, 8, generator=gen)
            loss = nn.functional.mse_loss(model(x), x @ true_w)
            opt.zero_grad()
            loss.backward()
            opt.step()
        if rank == 0:
            print(f"epoch {epoch}: loss {loss.item():.5f}", flush=True)
    digest = hashlib.sha256()
    for t in model.state_dict().values():
        digest.update(t.detach().numpy().tobytes())
    if args.out:
        with open(os.path.join(args.out, f"rank-{rank}.json"), "w") as f:
            json.dump({"rank": rank, "world": world, "node": node, "nprocs": nprocs,
                       "host": socket.gethostname(), "weights": digest.hexdigest()}, f)
    dist.barrier()
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    n = gpus_of_node()
    mp.spawn(train, args=(n, args), nprocs=n)


if __name__ == "__main__":
    main()
