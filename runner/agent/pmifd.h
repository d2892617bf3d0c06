/* pmifd.h - the step's PMI2 socket at descriptor 3 in the container.
 *
 * Under srun --mpi=pmi2, ctrun hands the task's PMI2 socket to the runtime
 * as descriptor 3 and sets PMI_FD=3 for the worker (spec record B,
 * agentspec.h; docs/decisions/launch-and-topology.md, "MPI").  A runtime
 * that closes inherited descriptors (enroot built without INHERIT_FDS)
 * loses it.  The agent looks at descriptor 3 before it opens anything, as
 * its first open would take the number; where the socket did not arrive,
 * descriptor 3 is /dev/null for the workers and one line says so: an MPI
 * program's PMI start then fails loudly (its read finds the end), a
 * program that does not use PMI runs (a site's MpiDefault=pmi2 gives every
 * task a PMI_FD), and no file a worker opens can take the number PMI_FD
 * names. */
#ifndef CTRUN_PMIFD_H
#define CTRUN_PMIFD_H

#include <stdbool.h>

struct pmifd {
	bool socket;   /* descriptor 3 was a socket at the agent's start */
	bool reserved; /* it was closed: /dev/null put there */
};

/* The agent's first step: what descriptor 3 is, /dev/null there if closed. */
void pmifd_probe(struct pmifd *p);
/* After the spec: with want (record B) and no socket, descriptor 3 stays
 * (or becomes) /dev/null, inherited, and one line says so unless quiet;
 * without want, the reservation is closed. */
void pmifd_settle(const struct pmifd *p, bool want, bool quiet);

#endif
