/* fabric.h - the node's RDMA fabric: its devices and ports as the kernel
 * shows them in sysfs, and the device nodes a process needs to use them.
 *
 * sysfs (root given, "/sys" but for tests):
 *   class/infiniband/DEV/ports/N/{state,phys_state,link_layer,rate}
 *       "4: ACTIVE", "5: LinkUp", "InfiniBand" or "Ethernet" (RoCE),
 *       "200 Gb/sec (4X HDR)";
 *   class/infiniband_verbs/uverbsK/{ibdev,dev}   "mlx5_0", "231:192";
 *   class/infiniband_mad/umadK/{ibdev,port,dev}  "mlx5_0", "1", "231:0".
 * The nodes (devdir, "/dev"): infiniband/uverbsK (libibverbs opens it for
 * every verbs user: NCCL's IB transport, UCX, libfabric's verbs provider),
 * infiniband/rdma_cm (librdmacm: UCX, MPI, libfabric), infiniband/umadK
 * (management datagrams: UCX's and the subnet tools' port queries), and
 * GDRCopy's /dev/gdrdrv.  enroot's 99-mellanox.sh gives a container the
 * same set (issmK, the subnet manager's, only to a superuser: left out).
 *
 * Pure but for the reads of the given roots: a unit test points them at a
 * tree of its own. */
#ifndef CTRUN_FABRIC_H
#define CTRUN_FABRIC_H

#include <stdbool.h>
#include <stddef.h>

#include "strv.h"

#define FABRIC_PORTS_MAX 16
#define FABRIC_NODES_MAX 64

struct fabric_port {
	char dev[32];     /* "mlx5_0" */
	unsigned port;
	bool active;      /* state "4: ACTIVE" */
	char state[16];   /* "ACTIVE", "DOWN", "INIT", ... */
	char link[12];    /* "IB", "RoCE", or the link_layer as it is */
	char rate[32];    /* "200 Gb/sec (4X HDR)" */
};

/* A device node of the fabric: its path, numbers, and whether devdir has
 * it as that character device. */
struct fabric_node {
	char path[64];    /* "/dev/infiniband/uverbs0" */
	char ibdev[32];   /* the RDMA device it belongs to, "" for rdma_cm and gdrdrv */
	unsigned major, minor;
	bool present;
};

struct fabric_info {
	struct fabric_port ports[FABRIC_PORTS_MAX];
	size_t nports;
	struct fabric_node nodes[FABRIC_NODES_MAX];
	size_t nnodes;
};

/* Reads sysfs (e.g. "/sys") and devdir (e.g. "/dev") into f.  A node
 * without RDMA has no ports (sysfs's class/infiniband absent or empty);
 * GDRCopy's gdrdrv is listed when devdir has it, with or without RDMA. */
void fabric_scan(const char *sysfs, const char *devdir, struct fabric_info *f);

/* Whether the node has RDMA devices (a port of any state). */
static inline bool fabric_has_rdma(const struct fabric_info *f)
{
	return f->nports > 0;
}

/* The device nodes a container gets (present ones; the verbs and mad
 * nodes of every RDMA device, rdma_cm, gdrdrv), as host paths. */
int fabric_container_nodes(const struct fabric_info *f, struct strv *out);

/* "mlx5_0:1 ACTIVE IB 200 Gb/sec (4X HDR), mlx5_1:1 DOWN RoCE" into buf
 * ("none" without RDMA). */
void fabric_ports_line(const struct fabric_info *f, char *buf, size_t size);

#endif
