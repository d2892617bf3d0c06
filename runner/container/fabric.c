/* fabric.c - the fabric phase (container.h): the node's RDMA devices
 * ([fabric] rdma) and, with GPUs, GDRCopy's /dev/gdrdrv into the
 * container's edits (rt/edits.h), then the host's network stack
 * (netstack.c).  Each runtime applies the edits its way: OCI makes the
 * nodes with their device-cgroup rules, enroot binds them through its
 * fstab as its own 99-mellanox.sh hook does, apptainer and charliecloud
 * bind them. */
#include "container.h"

#include <stdio.h>
#include <string.h>

#include "edits.h"
#include "fabric.h"
#include "util.h"

static int rdma(struct ctr_setup *c, struct err *e)
{
	static struct fabric_info f;
	struct ctr_edits *d = &c->spec.edits;
	const char *want = c->ask.rdma;
	bool on, gpus = c->spec.gpus || c->cdi_gpus.n > 0;
	struct strv nodes = { 0 };
	char line[600];
	size_t from_rdma = (size_t)-1, from_gdr = (size_t)-1, n = 0;
	int rv = -1;

	fabric_scan("/sys", "/dev", &f);
	on = strcmp(want, "false") != 0 && fabric_has_rdma(&f);
	if (strcmp(want, "true") == 0 && !fabric_has_rdma(&f))
		return err_set(e, EXIT_CTRUN, "[fabric] rdma = true, but this node has no RDMA "
			       "device (/sys/class/infiniband is empty or missing): set rdma = auto "
			       "to run without one");
	if (fabric_container_nodes(&f, &nodes) < 0) {
		err_sys(e, EXIT_CTRUN, "fabric");
		goto out;
	}
	for (size_t i = 0; i < nodes.n; i++) {
		bool gdr = strcmp(nodes.v[i], "/dev/gdrdrv") == 0;
		size_t *from = gdr ? &from_gdr : &from_rdma;

		/* GDRCopy serves GPUs; the RDMA nodes follow [fabric] rdma. */
		if (gdr ? !gpus : !on)
			continue;
		if (*from == (size_t)-1 &&
		    (*from = ctr_edits_from(d, gdr ? "GDRCopy (/dev/gdrdrv, with GPUs)"
						   : "[fabric] rdma", e)) == (size_t)-1)
			goto out;
		if (ctr_edits_host_node(d, nodes.v[i], *from, e) < 0)
			goto out;
		n++;
	}
	if (c->ask.verbose > 0 && !c->ask.quiet) {
		fabric_ports_line(&f, line, sizeof(line));
		fprintf(stderr, "ctrun: RDMA (rdma = %s): %s; %zu device node%s into the container\n",
			want, line, n, n == 1 ? "" : "s");
	}
	rv = 0;
out:
	strv_free(&nodes);
	return rv;
}

int ctr_fabric(struct ctr_setup *c, struct err *e)
{
	if (rdma(c, e) < 0 || ctr_netstack(c, e) < 0)
		return -1;
	return 0;
}
