/* feed_step.c - a node's part in its step's image feed (see feed_step.h,
 * feed.h for the wire and the trust). */
#include "feed_step.h"

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "claim.h"
#include "feed.h"
#include "hostlist.h"
#include "ref.h"
#include "reuse.h"
#include "store.h"
#include "strv.h"
#include "topology.h"
#include "util.h"

#define CONNECT_MS 60000 /* a neighbour's ctrun starts within this of ours */
#define HELLO_MS 5000    /* a connection's deadline for its hello */
#define WAIT_DEFAULT_S 1800

long feed_port(unsigned long job, unsigned long step)
{
	return 10000 + (long)((job * 16 + step % 16 + 11000) % 22000);
}

static const char *env_of(char *const *envp, const char *name)
{
	size_t n = strlen(name);

	for (char *const *p = envp; *p != NULL; p++)
		if (strncmp(*p, name, n) == 0 && (*p)[n] == '=')
			return *p + n + 1;
	return NULL;
}

int feed_step_of(char *const *envp, long verbose, struct feed_step *f)
{
	const char *job = env_of(envp, "SLURM_JOB_ID"), *step = env_of(envp, "SLURM_STEP_ID");
	const char *nodeid = env_of(envp, "SLURM_NODEID");
	const char *list = env_of(envp, "SLURM_STEP_NODELIST");
	uint8_t secret[JOBKEY_LEN];
	struct strv nodes = { 0 };
	struct err e = { 0 };
	long id;

	memset(f, 0, sizeof(*f));
	/* The batch script's ctrun (a special step) is no node of a step. */
	if (job == NULL || step == NULL || nodeid == NULL || list == NULL ||
	    topo_special_step(step) || parse_long(nodeid, 0, 1000000, &id) < 0 || hostlist_expand(list, &nodes, &e) < 0)
		return 0;
	if (nodes.n < 2 || (size_t)id >= nodes.n ||
	    xsnprintf(f->job, sizeof(f->job), "%s.%s", job, step) < 0 ||
	    xsnprintf(f->host, sizeof(f->host), "%s", nodes.v[id]) < 0 ||
	    (id > 0 && xsnprintf(f->up, sizeof(f->up), "%s", nodes.v[id - 1]) < 0) ||
	    ((size_t)id + 1 < nodes.n &&
	     xsnprintf(f->down, sizeof(f->down), "%s", nodes.v[id + 1]) < 0)) {
		strv_free(&nodes);
		return 0;
	}
	f->nodeid = id;
	f->nnodes = (long)nodes.n;
	strv_free(&nodes);
	if (jobkey_secret(envp, secret, &e) < 0) {
		if (verbose > 0)
			fprintf(stderr, "ctrun: no image feed between the step's nodes (%s): each "
				"node pulls for itself\n", e.msg);
		return 0;
	}
	jobkey_derive(secret, "imagefeed", job, step, f->key);
	explicit_bzero(secret, sizeof(secret));
	f->port = feed_port(strtoul(job, NULL, 10), strtoul(step, NULL, 10));
	return 1;
}

static int listen_on(const struct feed_step *f, struct err *e)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)f->port) };
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	sa.sin_addr.s_addr = htonl(INADDR_ANY);
	if (fd < 0)
		return err_sys(e, EXIT_CTRUN, "image feed: socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 64) < 0) {
		err_sys(e, EXIT_CTRUN, "image feed: listening on port %ld of %s", f->port, f->host);
		close(fd);
		return -1;
	}
	return fd;
}

/* The node below's connection: the first whose hello proves the job's
 * key; strangers are dropped.  -1 at the deadline. */
static int accept_down(int lfd, const struct feed_step *f, struct feed_down *d,
		       long long deadline)
{
	d->fd = -1;
	while (mono_ms() < deadline) {
		struct pollfd pfd = { .fd = lfd, .events = POLLIN };
		long long left = deadline - mono_ms();
		int fd;

		if (poll(&pfd, 1, (int)(left > 0 ? left : 0)) <= 0)
			continue;
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		if (feed_recv(fd, &d->hello, sizeof(d->hello), mono_ms() + HELLO_MS) == 0 &&
		    feed_hello_ok(&d->hello, f->key, f->job)) {
			d->fd = fd;
			return 0;
		}
		close(fd);
	}
	return -1;
}

/* Connects to the node above, retrying while its ctrun starts. */
static int connect_up(const struct feed_step *f, struct err *e)
{
	long long deadline = mono_ms() + CONNECT_MS;
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *res;
	char port[16];
	int last = 0;

	snprintf(port, sizeof(port), "%ld", f->port);
	while (mono_ms() < deadline) {
		struct timespec ts = { 0, 100 * 1000 * 1000 };
		int fd, rc = getaddrinfo(f->up, port, &hints, &res);

		if (rc != 0)
			return err_set(e, EXIT_CTRUN, "node %s: %s", f->up, gai_strerror(rc));
		fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
			freeaddrinfo(res);
			return fd;
		}
		last = errno;
		if (fd >= 0)
			close(fd);
		freeaddrinfo(res);
		nanosleep(&ts, NULL);
	}
	errno = last;
	return err_sys(e, EXIT_CTRUN, "connecting to node %s port %ld for %d s", f->up, f->port,
		       CONNECT_MS / 1000);
}

/* The image just published, as the store trusts its files (no link, no
 * FIFO, a regular file of a trusted owner: store_open), since another
 * member of a group's store could have put something else at its name. */
static int open_published(const char *store, const char *sqsh, struct stat *st, struct err *e)
{
	struct trust t;
	int r = store_trust(store, &t, e), fd;

	if (r <= 0) {
		if (r == 0)
			err_set(e, EXIT_CTRUN, "image store %s is gone", store);
		return -1;
	}
	fd = store_open(sqsh, &t, st, e);
	if (fd >= 0 && !S_ISREG(st->st_mode)) {
		err_set(e, EXIT_CTRUN, "%s is not a regular file", sqsh);
		close(fd);
		return -1;
	}
	if (fd == -2)
		err_set(e, EXIT_CTRUN, "%s is gone", sqsh);
	return fd < 0 ? -1 : fd;
}

/* Node 0: pull, then send the image (or the error) down the chain, with
 * its layer record when the store has one (reuse.h). */
static int feed_root(const struct feed_step *f, const struct registry_cfg *c, const char *store,
		     const char *image, struct pulled *p, struct err *e)
{
	struct err le = { 0 };
	struct feed_down d = { .fd = -1 };
	struct feed_head hd;
	struct stat st;
	char *layers = NULL;
	size_t nlayers = 0;
	int lfd = listen_on(f, &le), rv, fd = -1;

	if (lfd < 0 && !c->quiet)
		fprintf(stderr, "ctrun: %s; the step's other nodes pull for themselves\n", le.msg);
	rv = registry_pull(c, image, p, e);
	if (lfd < 0)
		return rv;
	if (accept_down(lfd, f, &d, mono_ms() + CONNECT_MS) < 0) {
		close(lfd);
		return rv;
	}
	close(lfd);
	if (rv == 0 && reuse_record_read(store, p->sqsh, &layers, &nlayers, &le) < 0)
		memset(&le, 0, sizeof(le)); /* without it the image is only not a base */
	if (rv < 0) {
		feed_head_make(&hd, f->key, &d.hello, 1, "", 0, 0, e->msg);
		feed_send(d.fd, &hd, sizeof(hd));
	} else if ((fd = open_published(store, p->sqsh, &st, &le)) < 0 ||
		   feed_send_image(fd, &d, f->key, p->digest, (uint64_t)st.st_size, layers,
				   (uint32_t)nlayers, &le) < 0) {
		if (le.msg[0] == '\0')
			err_sys(&le, EXIT_CTRUN, "%s", p->sqsh);
		if (!c->quiet)
			fprintf(stderr, "ctrun: image feed to %s: %s\n", f->down, le.msg);
		if (fd >= 0)
			close(fd);
	} else {
		close(fd);
	}
	free(layers);
	close(d.fd);
	return rv;
}

/* What node k does with a head and its layer record: the image into the
 * store (unless there), forwarded down, then its layer record as a pull
 * writes it; the node's job record for its other tasks. */
static int take(const struct feed_step *f, const struct registry_cfg *c, const char *store,
		int up, const struct feed_hello *mine, const struct feed_head *hd,
		const char *layers, struct feed_down *d, struct pulled *p, struct err *e)
{
	char sqsh[PATH_MAX], tmp[PATH_MAX], name[80];
	long wait = c->wait_s > 0 ? c->wait_s : WAIT_DEFAULT_S;
	struct claim cl = { 0 };
	size_t n = be32toh(hd->layers);
	int have, rv;

	if (store_init(store, e) < 0 || store_image(store, hd->digest, sqsh, sizeof(sqsh), e) < 0)
		return -1;
	have = registry_lookup_digest(c, hd->digest, p, e);
	if (have < 0)
		return -1;
	if (have == 0) {
		/* Claimed like a pull: this node's other tasks wait for it. */
		have = claim_take(store, hd->digest, sqsh, wait, c->quiet, &cl, e);
		if (have < 0)
			return -1;
		have = have == 0;
	}
	if (c->job != NULL && job_record_write(store, c->job, hd->digest, e) < 0)
		goto fail;
	snprintf(name, sizeof(name), "feed-%.64s", hd->digest + 7);
	if (!have && store_tmp(store, name, tmp, sizeof(tmp), e) < 0)
		goto fail;
	if (have && d->fd < 0)
		return registry_lookup_digest(c, hd->digest, p, e) == 1 ? 0 : -1;
	rv = feed_recv_image(up, mine, hd, layers, d, f->key, have ? NULL : tmp, sqsh,
			     mono_ms() + (long long)wait * 1000, e);
	/* Verified by the tail, published: now a base for layer reuse too. */
	if (rv == 0 && !have && n > 0) {
		struct err e2 = { 0 };
		int w = reuse_record_valid(layers, n)
				? reuse_record_write_text(store, sqsh, layers, n, &e2)
				: err_set(&e2, EXIT_CTRUN, "not a layer record");

		if (w < 0 && c->verbose > 0)
			fprintf(stderr, "ctrun: %s: its layer record from node %s: %s\n",
				hd->digest, f->up, e2.msg);
	}
	claim_release(&cl);
	if (rv < 0)
		return -1;
	if (registry_lookup_digest(c, hd->digest, p, e) != 1)
		return err_set(e, EXIT_CTRUN, "%s: not in the store after the feed", hd->digest);
	return 0;
fail:
	claim_release(&cl);
	return -1;
}

int feed_image(const struct feed_step *f, const struct registry_cfg *c, const char *store,
	       const char *image, struct pulled *p, char *digest, size_t dsize, struct err *e)
{
	long long head_by = mono_ms() + (c->wait_s > 0 ? c->wait_s : WAIT_DEFAULT_S) * 1000LL;
	struct feed_down d = { .fd = -1 };
	struct feed_hello mine;
	struct feed_head hd;
	struct err fe = { 0 };
	char *layers = NULL;
	int lfd = -1, up = -1, rv = 1;

	digest[0] = '\0';
	if (f->nodeid == 0)
		return feed_root(f, c, store, image, p, e);
	/* No room for the node below: it pulls for itself; this node goes on. */
	if (f->down[0] != '\0' && (lfd = listen_on(f, &fe)) < 0 && !c->quiet)
		fprintf(stderr, "ctrun: %s; node %s pulls for itself\n", fe.msg, f->down);
	memset(&fe, 0, sizeof(fe));
	if ((up = connect_up(f, &fe)) < 0 || feed_hello_make(&mine, f->key, f->job, f->host, &fe) < 0)
		goto out;
	if (feed_send(up, &mine, sizeof(mine)) < 0 || feed_recv(up, &hd, sizeof(hd), head_by) < 0) {
		err_sys(&fe, EXIT_CTRUN, "node %s", f->up);
		goto out;
	}
	if (!feed_head_ok(&hd, f->key, &mine)) {
		err_set(&fe, EXIT_CTRUN, "what came from %s port %ld is not from a node of the job "
			"(no proof of the job's key): refused", f->up, f->port);
		goto out;
	}
	if (lfd >= 0)
		accept_down(lfd, f, &d, mono_ms() + CONNECT_MS);
	if (be32toh(hd.status) == 1) {
		/* Node 0 failed: the same reason on every node. */
		if (d.fd >= 0) {
			struct feed_head dh;

			feed_head_make(&dh, f->key, &d.hello, 1, "", 0, 0, hd.msg);
			feed_send(d.fd, &dh, sizeof(dh));
		}
		err_set(e, EXIT_CTRUN, "the step's node 0 could not pull the image: %s", hd.msg);
		if (c->job != NULL) {
			char rec[300];
			struct err e2 = { 0 };

			snprintf(rec, sizeof(rec), "!%s", e->msg);
			job_record_write(store, c->job, rec, &e2);
		}
		rv = -1;
		goto out;
	}
	snprintf(digest, dsize, "%s", hd.digest);
	if (feed_recv_layers(up, &hd, &layers, head_by) < 0) {
		err_sys(&fe, EXIT_CTRUN, "node %s: the image's layer record", f->up);
		goto out;
	}
	if (take(f, c, store, up, &mine, &hd, layers, &d, p, &fe) == 0) {
		struct image_ref r;
		struct err e2 = { 0 };

		/* The tag's record, as a pull makes it: an offline start later. */
		if (ref_parse(image, &r, &e2) == 0 && r.digest[0] == '\0')
			store_ref_write(store, &r, r.tag, hd.digest, &e2);
		if (c->verbose > 0)
			fprintf(stderr, "ctrun: %s -> %s (from node %s)\n", image, hd.digest, f->up);
		rv = 0;
	}
out:
	if (rv == 1 && !c->quiet)
		fprintf(stderr, "ctrun: image from the step's node %s failed (%s); pulling %s "
			"from the registry\n", f->up, fe.msg, digest[0] != '\0' ? digest : image);
	free(layers);
	if (d.fd >= 0)
		close(d.fd);
	if (up >= 0)
		close(up);
	if (lfd >= 0)
		close(lfd);
	return rv;
}
