/* ncclnet.h - the network NCCL chose, read from NCCL's own NCCL_DEBUG=INFO
 * lines, and the verdicts `ctrun check` draws from it per node.
 *
 * NCCL writes "[TIME] HOST:PID:TID [DEV] NCCL INFO MSG" (src/debug.cc);
 * the messages read here (NCCL 2.18 to 2.28, src/init.cc,
 * src/transport/net.cc, net_ib/init.cc, net_socket.cc,
 * src/plugin/plugin_open.cc, src/plugin/net.cc):
 *   "Using network NAME"                   the net NCCL took: IB, Socket, or a
 *                                          plugin's name (aws-ofi-nccl: Libfabric)
 *   "NET/IB : Using [0]mlx5_0:1/IB ..."    the IB devices and link layers
 *                                          (IB or RoCE)
 *   "NET/Socket : Using [0]eth0:..."       the socket transport's interfaces
 *   "NET/Plugin: Loaded net plugin NAME (vN)"
 *   "NET/Plugin: Could not find: LIB ..."  (ENOENT), "NET/Plugin: LIB: ERROR"
 *                                          (dlopen's other errors), "External
 *                                          network plugin LIB is unsupported",
 *                                          "Failed to initialize NET plugin NAME"
 *   "Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA"
 *                                          a connection; /GDRDMA: GPUDirect RDMA
 * The capture: the worker points NCCL_DEBUG_FILE at a file of a private
 * directory before NCCL starts, with NCCL_DEBUG=INFO and
 * NCCL_DEBUG_SUBSYS=INIT,NET, and reads it once the collective ran. */
#ifndef CTRUN_NCCLNET_H
#define CTRUN_NCCLNET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rank.h"

/* What one rank's NCCL said; fixed size, gathered at rank 0. */
struct ncclnet {
	char net[48];        /* "Using network NAME": "IB", "Socket", "Libfabric"; "" unseen */
	char transport[48];  /* for the report: "IB", "RoCE", "Socket", "Libfabric (plugin)" */
	char plugin[64];     /* the net plugin that loaded: "Libfabric (v9)", "" none */
	char plugin_err[200]; /* the line saying a plugin did not load or start */
	char wanted[64];     /* NCCL_NET_PLUGIN as this rank had it ("" none) */
	uint8_t gdr;         /* a connection used GPUDirect RDMA */
	uint8_t read;        /* NCCL's lines were captured and read */
};

/* Pure: text (len bytes, any content) into n (wanted is left as it is). */
void ncclnet_parse(const char *text, size_t len, struct ncclnet *n);

/* Terminates every string of a record another rank sent. */
void ncclnet_seal(struct ncclnet *n);

/* The capture around NCCL's start (ncclnet.c). */
struct ncclnet_cap {
	char dir[64];        /* the private directory, "" when not capturing */
	char file[96];
	bool replay;         /* the user set NCCL_DEBUG: their lines go to stderr after */
	char level[16];
};
/* Before NCCL starts (this process's environment): -1 only when it
 * cannot capture (the user's NCCL_DEBUG_FILE, no temporary directory). */
int ncclnet_capture_begin(struct ncclnet_cap *c);
/* After the collective: reads and parses the file into n, replays the
 * lines at the user's level, removes the directory. */
void ncclnet_capture_end(struct ncclnet_cap *c, struct ncclnet *n);

/* Rank 0: "IB, GDRDMA" when every node's NCCL took the same, else each
 * node's ("gpu01 IB; gpu02 Socket"); "unknown (NCCL's lines were not
 * read)" when none was read. */
void ncclnet_summary(const struct rank_row *rows, const struct ncclnet *nets, size_t n,
		     char *buf, size_t size);

/* Rank 0's verdicts for the ranks' rows and their NCCL records (both in
 * rank order): a diagnosis in msg (returns false) when a node has an RDMA
 * device and NCCL took sockets, or when NCCL_NET_PLUGIN did not load;
 * one at a time, the first found. */
bool check_nccl_net(const struct rank_row *rows, const struct ncclnet *nets, size_t n,
		    char *msg, size_t size);

#endif
