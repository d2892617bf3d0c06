/* cmd_check.c - the host side of `ctrun check` and `ctrun bench`: their
 * words turned into workers launched like a training job.  Kept apart from
 * the workers' own code (runner/check/), which also builds
 * build/ctrun-worker, the binary that runs them inside an image and needs
 * none of ctrun's launcher (nor its libraries). */
#include <arpa/inet.h>
#include <limits.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "batch.h"
#include "jobkey.h"
#include "bench.h"
#include "commands.h"
#include "rt.h"
#include "container.h"
#include "launch.h"
#include "netinfo.h"
#include "topology.h"
#include "strv.h"
#include "util.h"

extern char **environ;

/* A loopback MASTER_ADDR works on one node and hangs on two.  The first
 * node's own name mapping to 127.0.1.1 is fine (launch_prepare replaces it
 * there), a literal loopback address or a name that is loopback on another
 * node is not. */
static int master_loopback(const struct topo *t, struct err *e)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL;
	unsigned char buf[sizeof(struct in6_addr)];
	char first[INET6_ADDRSTRLEN] = "";
	bool literal;

	if (t->nnodes <= 1 || getaddrinfo(t->master_addr, NULL, &hints, &res) != 0)
		return 0;
	for (struct addrinfo *a = res; a != NULL; a = a->ai_next) {
		char num[INET6_ADDRSTRLEN];

		if (getnameinfo(a->ai_addr, a->ai_addrlen, num, sizeof(num), NULL, 0,
				NI_NUMERICHOST) != 0)
			continue;
		if (!net_is_loopback(num)) {
			freeaddrinfo(res);
			return 0;
		}
		if (first[0] == '\0')
			snprintf(first, sizeof(first), "%s", num);
	}
	freeaddrinfo(res);
	literal = inet_pton(AF_INET, t->master_addr, buf) == 1 ||
		  inet_pton(AF_INET6, t->master_addr, buf) == 1 ||
		  strcmp(t->master_addr, "localhost") == 0;
	if (t->node_rank == 0 && !literal)
		return 0;
	return err_set(e, 1, "master resolves to loopback: MASTER_ADDR '%s' is %s on %s, but the "
		       "job spans %ld nodes and the others cannot reach it (pass --master-addr "
		       "with the first node's address, or fix /etc/hosts)", t->master_addr, first,
		       t->host, t->nnodes);
}

/* The workers' rendezvous key, in their environment (CTRUN_RDZV_KEY; an
 * argv is readable by every user of the node, an environment by its user
 * and root only).  Derived from the job's secret on every node (jobkey.h);
 * when this ctrun starts every worker of the job itself (one node, not
 * task mode) a random one serves and no key file is needed.  The job's
 * secret itself stays with ctrun. */
static int rdzv_key_env(const struct topo *t, struct err *e)
{
	uint8_t secret[JOBKEY_LEN], key[JOBKEY_LEN];
	char hex[JOBKEY_HEX_LEN + 1];
	int rv = -1;

	if (t->nnodes == 1 && t->mode != MODE_TASK ? jobkey_random(secret, sizeof(secret), e) < 0
						     : jobkey_secret(environ, secret, e) < 0)
		goto out;
	jobkey_derive(secret, "rdzv", t->job_id, t->step_id, key);
	jobkey_to_hex(key, hex);
	if (setenv(JOBKEY_RDZV_ENV, hex, 1) < 0 || unsetenv(JOBKEY_SECRET_ENV) < 0) {
		err_sys(e, EXIT_CTRUN, "worker environment");
		goto out;
	}
	rv = 0;
out:
	explicit_bzero(secret, sizeof(secret));
	explicit_bzero(key, sizeof(key));
	explicit_bzero(hex, sizeof(hex));
	return rv;
}

/* Launches `ctrun __worker WORD WORDS... FLAGS` like a training job (any
 * launch mode; from a batch script through srun first), with the worker's
 * output unprefixed: rank 0 prints the report.  WORDS are the
 * subcommand's own (o->command); the settings of ctrun's layers travel as
 * FLAGS (--json given before the word, CTRUN_RDZV_TIMEOUT unless the words
 * set --rdzv-timeout: own_timeout).  Returns ctrun's exit status. */
static int launch_workers(struct options *o, const char *word, bool own_timeout, struct err *e)
{
	struct strv argv = { 0 };
	char self[PATH_MAX];
	struct topo t;
	int rv = -1;

	if (launch_topology(o, &t, e) < 0)
		goto out;
	if (t.mode == MODE_BATCH) { /* srun runs this same command once per node */
		rv = batch_run(o, &t, environ, e);
		goto out;
	}
	if (master_loopback(&t, e) < 0 || rdzv_key_env(&t, e) < 0) {
		err_wrap(e, "%s", word);
		goto out;
	}
	/* The workers are ctrun itself, found the way batch mode finds it.
	 * In an image they are ctrun-worker instead: the container set-up
	 * mounts it at CTR_WORKER_BIN when that is the command (ctrun needs
	 * libraries the image lacks; see docs/bench.md). */
	if (o->image != NULL) {
		snprintf(self, sizeof(self), "%s", CTR_WORKER_BIN);
	} else if (realpath("/proc/self/exe", self) == NULL) {
		err_sys(e, EXIT_CTRUN, "finding ctrun's own path");
		goto out;
	}
	if (strv_push(&argv, self) < 0 || strv_push(&argv, "__worker") < 0 ||
	    strv_push(&argv, word) < 0 || strv_extend(&argv, o->command.v) < 0 ||
	    (o->json && strv_push(&argv, "--json") < 0) ||
	    (!own_timeout && strv_pushf(&argv, "--rdzv-timeout=%ld", o->rdzv_timeout) < 0)) {
		err_sys(e, EXIT_CTRUN, "worker argv");
		goto out;
	}
	strv_free(&o->command);
	o->command = argv;
	argv = (struct strv){ 0 };
	/* Rank 0 alone prints the report, and parsers of nccl-tests output
	 * read it as it is: no "[rank0]: " prefix.  A check is not retried. */
	o->prefix = false;
	o->no_python = true;
	o->max_restarts = 0;
	rv = container_run_workers(o, &t, environ, e);
out:
	strv_free(&argv);
	topo_free(&t);
	return rv;
}

int cmd_check(struct options *o, struct err *e)
{
	if (o->command.n > 0)
		return err_set(e, EXIT_USAGE, "check takes no arguments, got '%s' (options go "
			       "before or after the word: ctrun check --json)", o->command.v[0]);
	return launch_workers(o, "check", false, e);
}

int cmd_bench(struct options *o, struct err *e)
{
	struct bench_params p;
	int rv = bench_parse_args(o->command.v, o->command.n, &p, e);

	if (rv != 0)
		return rv > 0 ? 0 : -1;
	/* The workers parse the same words again. */
	return launch_workers(o, "bench", p.timeout != 0, e);
}
