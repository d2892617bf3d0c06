/* tsummary.c - the job's start-up timings in one line (see tsummary.h). */
#include "tsummary.h"

#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "jobkey.h"
#include "strv.h"
#include "util.h"

extern char **environ;

#define REPORTS_MAX 4096 /* the most reports one ctrun gathers */

int tsum_encode(char *buf, size_t size, const char *tag, long rank, const char *host,
		const struct phase_row *rows, size_t n)
{
	int len = snprintf(buf, size, "%s\n%s\n%ld\n%.63s\n", TSUM_MAGIC, tag, rank, host);

	if (len < 0 || (size_t)len >= size)
		return -1;
	for (size_t i = 0; i < n; i++) {
		int k = snprintf(buf + len, size - (size_t)len, "%.31s\t%.17g\n", rows[i].name,
				 rows[i].ms);

		if (k < 0 || (size_t)k >= size - (size_t)len)
			return -1;
		len += k;
	}
	return len;
}

/* The next line of [*p, end) into out (at most size - 1 bytes, no control
 * byte but a tab where tab is allowed); advances *p past its newline. */
static int line(const char **p, const char *end, char *out, size_t size, bool tab)
{
	const char *nl = memchr(*p, '\n', (size_t)(end - *p));
	size_t len;

	if (nl == NULL || (len = (size_t)(nl - *p)) == 0 || len >= size)
		return -1;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)(*p)[i];

		if ((c < 0x20 && !(tab && c == '\t')) || c == 0x7f)
			return -1;
	}
	memcpy(out, *p, len);
	out[len] = '\0';
	*p = nl + 1;
	return 0;
}

int tsum_decode(const char *buf, size_t len, const char *tag, struct tsum_report *r)
{
	const char *p = buf, *end = buf + len;
	char l[256], *tab, *num_end;

	memset(r, 0, sizeof(*r));
	if (line(&p, end, l, sizeof(l), false) < 0 || strcmp(l, TSUM_MAGIC) != 0 ||
	    line(&p, end, l, sizeof(l), false) < 0 || strcmp(l, tag) != 0 ||
	    line(&p, end, l, sizeof(l), false) < 0)
		return -1;
	errno = 0;
	r->rank = strtol(l, &num_end, 10);
	if (errno != 0 || *num_end != '\0' || num_end == l || r->rank < 0 ||
	    line(&p, end, r->host, sizeof(r->host), false) < 0)
		return -1;
	while (p < end) {
		if (r->n == PHASE_ROWS_MAX || line(&p, end, l, sizeof(l), true) < 0)
			return -1;
		tab = strchr(l, '\t');
		if (tab == NULL || tab == l || (size_t)(tab - l) >= sizeof(r->rows[0].name))
			return -1;
		*tab = '\0';
		errno = 0;
		r->rows[r->n].ms = strtod(tab + 1, &num_end);
		if (errno != 0 || *num_end != '\0' || num_end == tab + 1 ||
		    !isfinite(r->rows[r->n].ms) || r->rows[r->n].ms < 0 || r->rows[r->n].ms > 1e9)
			return -1;
		strcpy(r->rows[r->n].name, l);
		r->n++;
	}
	return r->n > 0 ? 0 : -1;
}

int tsum_seal(char *buf, size_t len, size_t size, const uint8_t key[JOBKEY_LEN])
{
	if (len + JOBKEY_LEN > size)
		return -1;
	jobkey_mac(key, &(struct jobkey_part){ buf, len }, 1, (uint8_t *)buf + len);
	return (int)(len + JOBKEY_LEN);
}

int tsum_open(const char *buf, size_t len, const uint8_t key[JOBKEY_LEN])
{
	uint8_t mac[JOBKEY_LEN];

	if (len < JOBKEY_LEN)
		return -1;
	jobkey_mac(key, &(struct jobkey_part){ buf, len - JOBKEY_LEN }, 1, mac);
	return jobkey_equal(mac, (const uint8_t *)buf + len - JOBKEY_LEN) ? (int)(len - JOBKEY_LEN)
									   : -1;
}

struct slowest {
	const char *name, *host;
	double ms;
};

static void consider(struct slowest *s, size_t *ns, const struct tsum_report *r)
{
	for (size_t i = 0; i < r->n; i++) {
		size_t j;

		for (j = 0; j < *ns && strcmp(s[j].name, r->rows[i].name) != 0; j++)
			;
		if (j == *ns) {
			if (*ns == 2 * PHASE_ROWS_MAX)
				continue;
			s[j].name = r->rows[i].name;
			s[j].host = r->host;
			s[j].ms = r->rows[i].ms;
			(*ns)++;
		} else if (r->rows[i].ms > s[j].ms) {
			s[j].ms = r->rows[i].ms;
			s[j].host = r->host;
		}
	}
}

int tsum_batch_decode(const char *s, struct tsum_report *r)
{
	const char *p = strchr(s, ';');

	memset(r, 0, sizeof(*r));
	if (p == NULL || p == s ||
	    xsnprintf(r->host, sizeof(r->host), "%.*s batch script", (int)(p - s), s) < 0)
		return -1;
	while (*p == ';' && r->n < PHASE_ROWS_MAX) {
		const char *name = p + 1, *eq = strchr(name, '=');
		char *end;

		if (eq == NULL || eq == name || (size_t)(eq - name) >= sizeof(r->rows[0].name))
			return -1;
		memcpy(r->rows[r->n].name, name, (size_t)(eq - name));
		r->rows[r->n].name[eq - name] = '\0';
		errno = 0;
		r->rows[r->n].ms = strtod(eq + 1, &end);
		if (errno != 0 || end == eq + 1 || (*end != ';' && *end != '\0') ||
		    !isfinite(r->rows[r->n].ms) || r->rows[r->n].ms < 0 || r->rows[r->n].ms > 1e9 ||
		    strcmp(r->rows[r->n].name, "total") == 0)
			return -1;
		r->n++;
		p = end;
	}
	return *p == '\0' && r->n > 0 ? 0 : -1;
}

void tsum_print(FILE *f, const struct tsum_report *batch, const struct tsum_report *own,
		const struct tsum_report *reports, size_t n, long expected, const char *what)
{
	struct slowest s[2 * PHASE_ROWS_MAX];
	size_t ns = 0, total = SIZE_MAX, printed = 0;

	if (batch != NULL)
		consider(s, &ns, batch);
	consider(s, &ns, own);
	for (size_t i = 0; i < n; i++)
		consider(s, &ns, &reports[i]);
	fprintf(f, "ctrun: timings, slowest of %zu %s:", n + 1, what);
	for (size_t j = 0; j < ns; j++) {
		if (strcmp(s[j].name, "total") == 0) {
			total = j;
			continue;
		}
		fprintf(f, "%s %s %.1f ms (%s)", printed++ ? "," : "", s[j].name, s[j].ms,
			s[j].host);
	}
	if (total != SIZE_MAX)
		fprintf(f, "; total %.1f ms (%s)", s[total].ms, s[total].host);
	if ((long)n + 1 < expected)
		fprintf(f, "; %ld of %ld %s did not report", expected - (long)n - 1, expected, what);
	fputc('\n', f);
}

static long reporters(const struct topo *t)
{
	return t->mode == MODE_TASK ? t->world_size : t->nnodes;
}

static void tag_of(const struct topo *t, char *tag, size_t size)
{
	if (xsnprintf(tag, size, "%s.%s", t->job_id != NULL ? t->job_id : "none",
		      t->step_id != NULL ? t->step_id : "none") < 0)
		tag[0] = '\0';
}

int tsum_listen(const struct topo *t, int verbose)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT };
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY) };
	int fd, off = 0, rcvbuf = 1 << 20;

	if (t->rank_base != 0 || reporters(t) < 2 || t->master_port <= 0 || t->master_port > 65535)
		return -1;
	a6.sin6_port = a4.sin_port = htons((uint16_t)t->master_port);
	fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd >= 0 && (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)) < 0 ||
			bind(fd, (struct sockaddr *)&a6, sizeof(a6)) < 0)) {
		close(fd);
		fd = -1;
	}
	if (fd < 0) { /* no IPv6 on this node */
		fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd >= 0 && bind(fd, (struct sockaddr *)&a4, sizeof(a4)) < 0) {
			if (verbose > 0)
				fprintf(stderr, "ctrun: no timings summary: UDP port %ld: %s\n",
					t->master_port, strerror(errno));
			close(fd);
			return -1;
		}
	}
	if (fd >= 0)
		(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	return fd;
}

/* The ack rank 0 sends back for a report: the report's first three
 * lines, sealed too (a forged ack would end a sender's retries). */
static int ack_of(char *buf, size_t size, const char *tag, long rank, const uint8_t *key)
{
	int len = xsnprintf(buf, size, "%s\n%s\n%ld\nack\n", TSUM_MAGIC, tag, rank);

	return len < 0 ? -1 : tsum_seal(buf, (size_t)len, size, key);
}

/* Sends the report, again while rank 0's port is closed (a short command
 * on this node can end before rank 0's ctrun has started; the kernel says
 * so with "connection refused"), for at most SEND_BUDGET_MS.  Done when
 * rank 0 acknowledges it (it is gathering), or when 100 ms pass quietly:
 * rank 0 listens and will read it when its own workers end. */
#define SEND_BUDGET_MS 1500
static void send_report(const struct topo *t, const char *tag, const char *msg, size_t len,
			const uint8_t *key)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_DGRAM }, *res;
	char port[16], ack[256], got[256];
	long deadline = mono_ms() + SEND_BUDGET_MS;
	int fd, acklen = ack_of(ack, sizeof(ack), tag, t->rank_base, key);

	if (acklen < 0 || t->master_addr == NULL || t->master_port <= 0 ||
	    xsnprintf(port, sizeof(port), "%ld", t->master_port) < 0 ||
	    getaddrinfo(t->master_addr, port, &hints, &res) != 0)
		return;
	fd = socket(res->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
		while (mono_ms() < deadline) {
			struct pollfd p = { .fd = fd, .events = POLLIN };
			long until = mono_ms() + 100;
			bool refused = false;
			ssize_t n;

			if (send(fd, msg, len, 0) < 0 && errno != ECONNREFUSED)
				break;
			while (!refused && mono_ms() < until) {
				if (poll(&p, 1, (int)(until - mono_ms())) <= 0)
					continue;
				n = recv(fd, got, sizeof(got), 0);
				if (n == acklen && memcmp(got, ack, (size_t)n) == 0)
					goto out;
				refused = n < 0 && errno == ECONNREFUSED;
			}
			if (!refused)
				goto out;
			while (mono_ms() < until) /* rank 0 not there yet: again in a while */
				(void)poll(NULL, 0, (int)(until - mono_ms()));
		}
	}
out:
	if (fd >= 0)
		close(fd);
	freeaddrinfo(res);
}

/* Reports from fd into r[0..max) (one per rank, not rank 0's own) until
 * max are in or the deadline passes; how many. */
static size_t gather(int fd, const char *tag, const uint8_t *key, struct tsum_report *r, size_t max,
		     long deadline)
{
	char buf[TSUM_DGRAM_MAX + 1], ack[256];
	struct sockaddr_storage from;
	socklen_t from_len;
	size_t n = 0, seen = 0;
	int acklen;

	while (n < max && seen < 4 * max + 64) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		long left = deadline - mono_ms();
		ssize_t len;
		size_t i;

		if (poll(&p, 1, left > 0 ? (int)left : 0) <= 0)
			break;
		from_len = sizeof(from);
		len = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &from_len);
		if (len < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			break;
		}
		/* Only a datagram sealed with the job's key counts, even
		 * towards the bound on duplicates: a flood of forged ones
		 * ends nothing, the deadline does. */
		if ((size_t)len > TSUM_DGRAM_MAX || (len = tsum_open(buf, (size_t)len, key)) < 0)
			continue;
		seen++;
		if (tsum_decode(buf, (size_t)len, tag, &r[n]) < 0 || r[n].rank == 0)
			continue;
		if (acklen = ack_of(ack, sizeof(ack), tag, r[n].rank, key), acklen > 0)
			(void)sendto(fd, ack, (size_t)acklen, 0, (struct sockaddr *)&from, from_len);
		for (i = 0; i < n && r[i].rank != r[n].rank; i++)
			;
		if (i == n)
			n++;
	}
	return n;
}

void tsum_finish(int fd, const struct topo *t, long wait_ms, FILE *f)
{
	struct phase_row rows[PHASE_ROWS_MAX];
	size_t nrows = phase_rows(rows, PHASE_ROWS_MAX);
	long expected = reporters(t);
	char tag[160], msg[TSUM_DGRAM_MAX];
	uint8_t secret[JOBKEY_LEN], key[JOBKEY_LEN];
	struct tsum_report own, *r;
	struct err e = { 0 };
	int len, sealed;

	if (expected < 2 || nrows == 0) {
		if (fd >= 0)
			close(fd);
		return;
	}
	/* The job string is public: reports carry a MAC with the job's
	 * key (jobkey.h), and one without it is ignored. */
	if (jobkey_secret(environ, secret, &e) < 0) {
		fprintf(f, "ctrun: no timings summary: %s\n", e.msg);
		if (fd >= 0)
			close(fd);
		return;
	}
	jobkey_derive(secret, "timings", t->job_id, t->step_id, key);
	explicit_bzero(secret, sizeof(secret));
	tag_of(t, tag, sizeof(tag));
	len = tsum_encode(msg, sizeof(msg) - JOBKEY_LEN, tag, t->rank_base, t->host, rows, nrows);
	if (len < 0 || tsum_decode(msg, (size_t)len, tag, &own) < 0 ||
	    (sealed = tsum_seal(msg, (size_t)len, sizeof(msg), key)) < 0) {
		if (fd >= 0)
			close(fd);
		return;
	}
	if (t->rank_base != 0) {
		send_report(t, tag, msg, (size_t)sealed, key);
		return;
	}
	if (fd < 0)
		return;
	if (expected - 1 > REPORTS_MAX)
		expected = REPORTS_MAX + 1;
	r = calloc((size_t)expected - 1, sizeof(*r));
	if (r != NULL) {
		size_t n = gather(fd, tag, key, r, (size_t)expected - 1, mono_ms() + wait_ms);

		const char *staged = getenv(TSUM_BATCH_ENV);
		struct tsum_report batch;
		bool has_batch = staged != NULL && tsum_batch_decode(staged, &batch) == 0;

		tsum_print(f, has_batch ? &batch : NULL, &own, r, n, reporters(t),
			   t->mode == MODE_TASK ? "tasks" : "nodes");
		free(r);
	}
	close(fd);
}
