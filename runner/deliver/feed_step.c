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
#include "feed_serve.h"
#include "hostlist.h"
#include "ref.h"
#include "rendezvous.h"
#include "reuse.h"
#include "store.h"
#include "strv.h"
#include "topology.h"
#include "util.h"

#define CONNECT_MS 60000 /* a neighbour's ctrun starts within this of ours */
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
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	sa.sin_addr.s_addr = htonl(INADDR_ANY);
	if (fd < 0)
		return err_sys(e, EXIT_CTRUN, "image feed: socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 4096) < 0) {
		err_sys(e, EXIT_CTRUN, "image feed: listening on port %ld of %s", f->port, f->host);
		close(fd);
		return -1;
	}
	return fd;
}

/* The link to the node below, served by a thread from now on
 * (feed_serve.h); NULL when this node cannot listen (one line says so:
 * the node below pulls for itself). */
static struct feed_serve *serve_down(const struct feed_step *f, bool quiet, const char *who)
{
	struct feed_link l = { f->job, f->host, f->down, (uint32_t)f->nodeid + 1 };
	struct feed_serve *s = NULL;
	struct err e = { 0 };
	int lfd = listen_on(f, &e);

	if (lfd >= 0)
		s = feed_serve_start(lfd, f->key, &l, FEED_SILENT_MS,
				     mono_ms() + CONNECT_MS + FEED_HELLO_MS, &e);
	if (s == NULL && !quiet)
		fprintf(stderr, "ctrun: %s; %s\n", e.msg, who);
	return s;
}

/* The end of the link below, while this node's own image was fine (say):
 * one line when the node below stopped reading and was dropped; with -v,
 * when it went away (it may have had the image already). */
static void end_down(const struct feed_step *f, struct feed_serve *s, bool say,
		     const struct registry_cfg *c)
{
	char why[200];
	enum feed_served r = feed_serve_end(s, why, sizeof(why));

	if (say && !c->quiet && (r == FEED_STALLED || (r == FEED_GONE && c->verbose > 0)))
		fprintf(stderr, "ctrun: image feed to the step's node %s: %s%s\n", f->down, why,
			r == FEED_STALLED ? "; it pulls for itself" : "");
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
 * its layer record when the store has one (reuse.h); the link below is
 * kept alive meanwhile. */
static int feed_root(const struct feed_step *f, const struct registry_cfg *c, const char *store,
		     const char *image, struct pulled *p, struct err *e)
{
	struct feed_serve *s = serve_down(f, c->quiet, "the step's other nodes pull for themselves");
	struct err le = { 0 };
	struct stat st;
	char *layers = NULL;
	size_t nlayers = 0;
	int rv = registry_pull(c, image, p, e), fd;
	bool sent = false;

	if (s == NULL)
		return rv;
	if (rv == 0 && reuse_record_read(store, p->sqsh, &layers, &nlayers, &le) < 0)
		memset(&le, 0, sizeof(le)); /* without it the image is only not a base */
	if (rv < 0) {
		feed_serve_head(s, 1, "", 0, NULL, 0, e->msg, -1);
		feed_serve_verified(s, NULL);
	} else if ((fd = open_published(store, p->sqsh, &st, &le)) < 0) {
		if (!c->quiet)
			fprintf(stderr, "ctrun: image feed to the step's node %s: %s; it pulls for "
				"itself\n", f->down, le.msg);
	} else {
		feed_serve_head(s, 0, p->digest, (uint64_t)st.st_size, layers, (uint32_t)nlayers, "",
				fd);
		feed_serve_more(s, (uint64_t)st.st_size);
		feed_serve_verified(s, NULL);
		close(fd);
		sent = true;
	}
	free(layers);
	end_down(f, s, sent, c);
	return rv;
}

/* What node k does with a head and its layer record: the image into the
 * store (unless there), handed down as it comes (s), then its layer record
 * as a pull writes it; the node's job record for its other tasks. */
static int take(const struct feed_step *f, const struct registry_cfg *c, const char *store,
		const struct feed_up *u, const struct feed_head *hd, const char *layers,
		struct feed_serve *s, struct pulled *p, struct err *e)
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
	if (have && s == NULL)
		return registry_lookup_digest(c, hd->digest, p, e) == 1 ? 0 : -1;
	/* Written even when the store has it: the link below reads it back. */
	snprintf(name, sizeof(name), "feed-%.64s", hd->digest + 7);
	if (store_tmp(store, name, tmp, sizeof(tmp), e) < 0)
		goto fail;
	rv = feed_recv_image(u, hd, layers, s, tmp, have ? NULL : sqsh, e);
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

/* Node k's link to the node above: connected, its hello sent (made for
 * that link). */
static int link_up(const struct feed_step *f, const struct registry_cfg *c, struct feed_up *u,
		   struct err *e)
{
	struct feed_link l = { f->job, f->up, f->host, (uint32_t)f->nodeid };

	u->key = f->key;
	u->silent_ms = FEED_SILENT_MS;
	u->deadline = mono_ms() + (c->wait_s > 0 ? c->wait_s : WAIT_DEFAULT_S) * 1000LL;
	u->fd = connect_up(f, e);
	if (u->fd < 0 || feed_hello_make(&u->hello, f->key, &l, e) < 0)
		return -1;
	if (sock_send_until(u->fd, &u->hello, sizeof(u->hello), mono_ms() + FEED_SILENT_MS) < 0)
		return err_sys(e, EXIT_CTRUN, "port %ld: sending the hello", f->port);
	return 0;
}

/* Node 0's error, come down the chain: the same reason on every node. */
static int root_failed(const struct registry_cfg *c, const char *store, const char *msg,
		       struct feed_serve *s, struct err *e)
{
	feed_serve_head(s, 1, "", 0, NULL, 0, msg, -1);
	feed_serve_verified(s, NULL);
	err_set(e, EXIT_CTRUN, "the step's node 0 could not pull the image: %s", msg);
	if (c->job != NULL) {
		char rec[300];
		struct err e2 = { 0 };

		snprintf(rec, sizeof(rec), "!%s", e->msg);
		job_record_write(store, c->job, rec, &e2);
	}
	return -1;
}

int feed_image(const struct feed_step *f, const struct registry_cfg *c, const char *store,
	       const char *image, struct pulled *p, char *digest, size_t dsize, struct err *e)
{
	struct feed_serve *s = NULL;
	struct feed_up u = { .fd = -1 };
	struct feed_head hd;
	struct err fe = { 0 };
	char *layers = NULL;
	int rv = 1;

	digest[0] = '\0';
	if (f->nodeid == 0)
		return feed_root(f, c, store, image, p, e);
	/* No room for the node below: it pulls for itself; this node goes on. */
	if (f->down[0] != '\0') {
		char who[300];

		snprintf(who, sizeof(who), "node %s pulls for itself", f->down);
		s = serve_down(f, c->quiet, who);
	}
	if (link_up(f, c, &u, &fe) < 0)
		goto out;
	if (feed_wait_head(&u, &hd, &fe) < 0) {
		err_wrap(&fe, "port %ld", f->port);
		goto out;
	}
	if (be32toh(hd.status) == 1) {
		rv = root_failed(c, store, hd.msg, s, e);
		goto out;
	}
	snprintf(digest, dsize, "%s", hd.digest);
	if (feed_recv_layers(&u, &hd, &layers) < 0) {
		err_sys(&fe, EXIT_CTRUN, "the image's layer record");
		goto out;
	}
	if (take(f, c, store, &u, &hd, layers, s, p, &fe) == 0) {
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
	end_down(f, s, rv == 0, c);
	free(layers);
	if (u.fd >= 0)
		close(u.fd);
	return rv;
}
