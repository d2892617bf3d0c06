/* rank.c - a worker's view of its contract and its report row (see rank.h). */
#include "rank.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cpulist.h"
#include "fabric.h"
#include "gpu.h"
#include "util.h"

static int env_long(char *const *envp, const char *key, long min, long *out, struct err *e)
{
	const char *v = envp_get(envp, key);

	if (v == NULL || parse_long(v, min, 1L << 30, out) < 0)
		return err_set(e, EXIT_USAGE, "__worker: %s='%s' is missing or invalid (this "
			       "command is started by `ctrun check` and `ctrun bench`)", key,
			       v != NULL ? v : "");
	return 0;
}

int worker_ctx_read(char *const *envp, struct worker_ctx *w, struct err *e)
{
	const char *addr = envp_get(envp, "MASTER_ADDR"), *node = envp_get(envp, "SLURMD_NODENAME");
	const char *job = envp_get(envp, "TORCHELASTIC_RUN_ID"), *step = envp_get(envp, "SLURM_STEP_ID");

	memset(w, 0, sizeof(*w));
	if (env_long(envp, "RANK", 0, &w->rank, e) < 0 ||
	    env_long(envp, "LOCAL_RANK", 0, &w->local_rank, e) < 0 ||
	    env_long(envp, "WORLD_SIZE", 1, &w->world, e) < 0 ||
	    env_long(envp, "LOCAL_WORLD_SIZE", 1, &w->local_world, e) < 0 ||
	    env_long(envp, "NODE_RANK", 0, &w->node_rank, e) < 0 ||
	    env_long(envp, "NNODES", 1, &w->nnodes, e) < 0 ||
	    env_long(envp, "MASTER_PORT", 1, &w->master_port, e) < 0)
		return -1;
	if (addr == NULL || *addr == '\0')
		return err_set(e, EXIT_USAGE, "__worker: MASTER_ADDR is not set");
	snprintf(w->master_addr, sizeof(w->master_addr), "%s", addr);
	if (node != NULL && *node != '\0')
		snprintf(w->host, sizeof(w->host), "%s", node);
	else if (gethostname(w->host, sizeof(w->host) - 1) == 0)
		w->host[strcspn(w->host, ".")] = '\0';
	snprintf(w->job, sizeof(w->job), "%s.%s", job != NULL ? job : "none",
		 step != NULL ? step : "-");
	/* The job string is public; the key proves this rank belongs to the
	 * job (jobkey.h).  ctrun put it here, never on an argv. */
	if (jobkey_from_hex(envp_get(envp, JOBKEY_RDZV_ENV), w->key) < 0)
		return err_set(e, EXIT_USAGE, "__worker: " JOBKEY_RDZV_ENV " is missing or not 64 hex "
			       "digits (this command is started by `ctrun check` and `ctrun bench`)");
	return 0;
}

/* The node's RDMA ports, and whether this rank can open their devices:
 * each device's verbs node in its /dev (in a container: ctrun passed it). */
static void collect_fabric(char *const *envp, struct rank_row *row)
{
	static struct fabric_info f;
	const char *libs = envp_get(envp, "CTRUN_FABRIC_BOUND");

	fabric_scan("/sys", "/dev", &f);
	for (size_t i = 0; i < f.nports && row->nports < RANK_PORTS; i++) {
		struct rank_port *p = &row->ports[row->nports++];

		snprintf(p->dev, sizeof(p->dev), "%s", f.ports[i].dev);
		snprintf(p->state, sizeof(p->state), "%s", f.ports[i].state);
		snprintf(p->link, sizeof(p->link), "%s", f.ports[i].link);
		snprintf(p->rate, sizeof(p->rate), "%s", f.ports[i].rate);
		p->port = (uint8_t)f.ports[i].port;
		p->active = f.ports[i].active;
		for (size_t k = 0; k < f.nnodes; k++)
			if (strcmp(f.nodes[k].ibdev, f.ports[i].dev) == 0 &&
			    strncmp(f.nodes[k].path, "/dev/infiniband/uverbs", 22) == 0 &&
			    f.nodes[k].present)
				p->received = 1;
	}
	snprintf(row->netlibs, sizeof(row->netlibs), "%s", libs != NULL ? libs : "");
}

void rank_row_collect(const struct worker_ctx *w, char *const *envp, struct rank_row *row)
{
	const char *group = envp_get(envp, "SLURM_PROCID");
	struct gpu_info g;
	cpu_set_t cpus;

	memset(row, 0, sizeof(*row));
	row->rank = (int32_t)w->rank;
	row->local_rank = (int32_t)w->local_rank;
	row->node_rank = (int32_t)w->node_rank;
	row->pid = (int32_t)getpid();
	snprintf(row->host, sizeof(row->host), "%s", w->host);
	snprintf(row->group, sizeof(row->group), "%s", group != NULL ? group : "-");
	gpu_discover(w->local_rank, envp, &g);
	row->cuda = g.cuda;
	row->ordinal = g.ordinal;
	row->ndevices = g.ndevices;
	row->gpu_numa = g.numa;
	snprintf(row->gpu, sizeof(row->gpu), "%s", g.index);
	snprintf(row->bus_id, sizeof(row->bus_id), "%s", g.bus_id);
	snprintf(row->uuid, sizeof(row->uuid), "%s", g.uuid);
	snprintf(row->gpu_name, sizeof(row->gpu_name), "%s", g.name);
	snprintf(row->gpu_cpus, sizeof(row->gpu_cpus), "%s", g.cpulist);
	snprintf(row->why, sizeof(row->why), "%s", g.why);
	collect_fabric(envp, row);
	if (sched_getaffinity(0, sizeof(cpus), &cpus) == 0) {
		if (cpulist_format(&cpus, row->cpus, sizeof(row->cpus)) < 0)
			snprintf(row->cpus, sizeof(row->cpus), "(%d CPUs)", CPU_COUNT(&cpus));
		numa_nodes_of(&cpus, row->numa, sizeof(row->numa));
	}
}

void backend_fallback_note(const struct rank_row *row, const char *nccl_why, char *out,
			   size_t size)
{
	if (!row->cuda)
		snprintf(out, size, "no CUDA device: using socket backend (%s)", row->why);
	else if (nccl_why != NULL && nccl_why[0] != '\0')
		snprintf(out, size, "no NCCL: using socket backend (%s)", nccl_why);
	else
		out[0] = '\0';
}

void rank_row_seal(struct rank_row *row)
{
#define SEAL(f) row->f[sizeof(row->f) - 1] = '\0'
	SEAL(host);
	SEAL(group);
	SEAL(gpu);
	SEAL(bus_id);
	SEAL(uuid);
	SEAL(gpu_name);
	SEAL(cpus);
	SEAL(numa);
	SEAL(gpu_cpus);
	SEAL(why);
	SEAL(netlibs);
	if (row->nports < 0 || row->nports > RANK_PORTS)
		row->nports = 0;
	for (int32_t i = 0; i < row->nports; i++) {
		SEAL(ports[i].dev);
		SEAL(ports[i].state);
		SEAL(ports[i].link);
		SEAL(ports[i].rate);
	}
#undef SEAL
}
