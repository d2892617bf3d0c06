/* runtimes.h - the names of ctrun's container runtimes: the one list.
 *
 * Each name is a driver, ctr_driver_NAME (rt/drivers.h), defined in a
 * folder runner/container/rt/NAME/ (or a sibling's: crun's in oci/,
 * singularity's in apptainer/); adding a runtime is its folder and one
 * line here.  The driver table, --runtime's choices and --help are made
 * from this list, in its order: the order `ctrun --version` lists the
 * binaries and the messages list the names.  (The documents that list the
 * runtimes are checked against it by tests/unit/test_runtimes.sh.) */
#ifndef CTRUN_RUNTIMES_H
#define CTRUN_RUNTIMES_H

#define CTR_DRIVERS(X) \
	X(enroot)      \
	X(apptainer)   \
	X(singularity) \
	X(oci)         \
	X(crun)        \
	X(charliecloud)

#endif
