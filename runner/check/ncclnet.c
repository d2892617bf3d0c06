/* ncclnet.c - the network NCCL chose, from its INFO lines (see ncclnet.h). */
#include "ncclnet.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

#define LOG_MAX (4u << 20) /* bytes of NCCL's log read */

/* The message of an INFO line ("... NCCL INFO MSG"), or NULL. */
static const char *info_msg(const char *line)
{
	const char *p = strstr(line, " NCCL INFO ");

	return p != NULL ? p + strlen(" NCCL INFO ") : NULL;
}

static bool starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* "NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB ib0:..." */
static void ib_links(const char *msg, bool *ib, bool *roce)
{
	const char *end = strstr(msg, "; OOB");

	for (const char *p = strchr(msg, '['); p != NULL && (end == NULL || p < end);
	     p = strchr(p + 1, '[')) {
		const char *slash = strchr(p, '/'), *next = strchr(p + 1, '[');

		if (slash == NULL || (next != NULL && slash > next) || (end != NULL && slash > end))
			continue;
		*ib |= starts(slash, "/IB");
		*roce |= starts(slash, "/RoCE");
	}
}

/* A plugin line's text (up to the end of line) into out. */
static void copy_msg(char *out, size_t size, const char *msg)
{
	snprintf(out, size, "%.*s", (int)strcspn(msg, "\n"), msg);
}

static void parse_line(const char *msg, struct ncclnet *n, bool *ib, bool *roce)
{
	const char *via;

	if (starts(msg, "Using network ")) {
		copy_msg(n->net, sizeof(n->net), msg + strlen("Using network "));
	} else if (starts(msg, "NET/IB : Using")) {
		ib_links(msg, ib, roce);
	} else if (starts(msg, "NET/Plugin: Loaded net plugin ")) {
		copy_msg(n->plugin, sizeof(n->plugin), msg + strlen("NET/Plugin: Loaded net plugin "));
	} else if ((starts(msg, "NET/Plugin: ") && !starts(msg, "NET/Plugin: Loaded ")) ||
		   starts(msg, "External network plugin ") ||
		   starts(msg, "Failed to initialize NET plugin ")) {
		/* dlopen's own error says most; "Could not find" only the names. */
		if (n->plugin_err[0] == '\0' || starts(n->plugin_err, "NET/Plugin: Could not find"))
			copy_msg(n->plugin_err, sizeof(n->plugin_err), msg);
	} else if (starts(msg, "Channel ") && (via = strstr(msg, " via NET/")) != NULL) {
		const char *nl = strchr(via, '\n'), *g = strstr(via, "/GDRDMA");

		if (g != NULL && (nl == NULL || g < nl))
			n->gdr = 1;
	}
}

static void classify(struct ncclnet *n, bool ib, bool roce)
{
	if (n->net[0] == '\0')
		n->transport[0] = '\0';
	else if (strcmp(n->net, "IB") == 0)
		snprintf(n->transport, sizeof(n->transport), "%s",
			 ib && roce ? "IB+RoCE" : roce ? "RoCE" : "IB");
	else if (strcmp(n->net, "Socket") == 0)
		snprintf(n->transport, sizeof(n->transport), "Socket");
	else
		snprintf(n->transport, sizeof(n->transport), "%.30s (plugin)", n->net);
}

void ncclnet_parse(const char *text, size_t len, struct ncclnet *n)
{
	const char *p = text, *end = text + len;
	bool ib = false, roce = false;
	char line[1024];

	n->net[0] = n->transport[0] = n->plugin[0] = n->plugin_err[0] = '\0';
	n->gdr = 0;
	n->read = 1;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);
		const char *msg;

		/* A line longer than the buffer is cut: its start says enough. */
		memcpy(line, p, l < sizeof(line) ? l : sizeof(line) - 1);
		line[l < sizeof(line) ? l : sizeof(line) - 1] = '\0';
		if ((msg = info_msg(line)) != NULL)
			parse_line(msg, n, &ib, &roce);
		p = nl != NULL ? nl + 1 : end;
	}
	/* A loaded plugin that NCCL then used clears an earlier miss (the
	 * name without the prefix was looked for first). */
	if (n->plugin[0] != '\0' && n->net[0] != '\0' && strncmp(n->plugin, n->net, strlen(n->net)) == 0)
		n->plugin_err[0] = '\0';
	classify(n, ib, roce);
}

void ncclnet_seal(struct ncclnet *n)
{
	n->net[sizeof(n->net) - 1] = '\0';
	n->transport[sizeof(n->transport) - 1] = '\0';
	n->plugin[sizeof(n->plugin) - 1] = '\0';
	n->plugin_err[sizeof(n->plugin_err) - 1] = '\0';
	n->wanted[sizeof(n->wanted) - 1] = '\0';
}

int ncclnet_capture_begin(struct ncclnet_cap *c)
{
	const char *tmp = getenv("TMPDIR"), *level = getenv("NCCL_DEBUG");

	memset(c, 0, sizeof(*c));
	if (getenv("NCCL_DEBUG_FILE") != NULL)
		return -1; /* the user's own: NCCL writes there, not to us */
	if (tmp == NULL || tmp[0] != '/' || strlen(tmp) > 40)
		tmp = "/tmp";
	/* A directory of our own: NCCL opens the file itself (fopen "w"),
	 * and a name another user could take first in /tmp is no place. */
	if (xsnprintf(c->dir, sizeof(c->dir), "%s/ctrun-nccl.XXXXXX", tmp) < 0 ||
	    mkdtemp(c->dir) == NULL || xsnprintf(c->file, sizeof(c->file), "%s/nccl.log", c->dir) < 0) {
		c->dir[0] = '\0';
		return -1;
	}
	if (level != NULL && level[0] != '\0') {
		c->replay = true;
		snprintf(c->level, sizeof(c->level), "%s", level);
	}
	setenv("NCCL_DEBUG_FILE", c->file, 1);
	setenv("NCCL_DEBUG", "INFO", 1);
	setenv("NCCL_DEBUG_SUBSYS", "INIT,NET", 1);
	return 0;
}

/* The user's NCCL_DEBUG: their WARN (or INFO) lines, as NCCL would have
 * printed them. */
static void replay(const struct ncclnet_cap *c, const char *text, size_t len)
{
	bool info = strcasecmp(c->level, "INFO") == 0 || strcasecmp(c->level, "TRACE") == 0;
	bool warn = info || strcasecmp(c->level, "WARN") == 0;
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl != NULL ? (size_t)(nl - p + 1) : (size_t)(end - p);

		if ((info && memmem(p, l, " NCCL INFO ", 11) != NULL) ||
		    (warn && memmem(p, l, " NCCL WARN ", 11) != NULL))
			fwrite(p, 1, l, stderr);
		p += l;
	}
}

void ncclnet_capture_end(struct ncclnet_cap *c, struct ncclnet *n)
{
	const char *wanted = getenv("NCCL_NET_PLUGIN");
	size_t len = 0;
	char *text;
	int fd;

	snprintf(n->wanted, sizeof(n->wanted), "%s", wanted != NULL ? wanted : "");
	if (c->dir[0] == '\0')
		return;
	fd = open(c->file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	text = fd >= 0 ? read_fd_max(fd, LOG_MAX, &len) : NULL;
	if (fd >= 0)
		close(fd);
	if (text != NULL) {
		ncclnet_parse(text, len, n);
		if (c->replay)
			replay(c, text, len);
		free(text);
	}
	/* NCCL keeps the file open; the name goes, the inode with NCCL. */
	unlink(c->file);
	rmdir(c->dir);
	c->dir[0] = '\0';
}

/* "mlx5_0:1 ACTIVE IB, mlx5_1:1 DOWN RoCE" of a row. */
static void ports_of(const struct rank_row *r, char *buf, size_t size)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int32_t i = 0; i < r->nports && off < size; i++) {
		int w = snprintf(buf + off, size - off, "%s%s:%u %s %s", i ? ", " : "",
				 r->ports[i].dev, r->ports[i].port, r->ports[i].state, r->ports[i].link);

		if (w < 0)
			break;
		off += (size_t)w;
	}
}

/* Why NCCL took sockets on a node with RDMA, and what to do. */
static const char *socket_fix(const struct rank_row *r)
{
	bool received = false, active = false;

	for (int32_t i = 0; i < r->nports; i++) {
		received |= r->ports[i].received;
		active |= r->ports[i].active;
	}
	if (!received)
		return "the rank has none of their /dev/infiniband/uverbs nodes (the container did "
		       "not receive them): set [fabric] rdma = auto or true in ctrun.ini "
		       "(docs/hooks.md \"RDMA\")";
	if (!active)
		return "no port is ACTIVE: check the links (ibstat, ibv_devinfo) and the subnet "
		       "manager";
	return "NCCL did not take them: check NCCL_IB_DISABLE, NCCL_NET, NCCL_IB_HCA, and that the "
	       "image has rdma-core's libibverbs with the device's provider (libmlx5 for mlx5)";
}

bool check_nccl_net(const struct rank_row *rows, const struct ncclnet *nets, size_t n,
		    char *msg, size_t size)
{
	for (size_t i = 0; i < n; i++) {
		const struct ncclnet *x = &nets[i];
		char ports[300];

		if (!x->read)
			continue;
		if (x->wanted[0] != '\0' && strcmp(x->wanted, "none") != 0 &&
		    (x->plugin[0] == '\0' || x->plugin_err[0] != '\0')) {
			snprintf(msg, size, "net plugin not loaded: NCCL_NET_PLUGIN=%s on %s (rank %d): "
				 "%s; NCCL used %s instead: bind the plugin and the libraries it needs "
				 "into the container ([fabric] libraries, docs/hooks.md \"The network "
				 "stack\") or unset NCCL_NET_PLUGIN", x->wanted, rows[i].host,
				 rows[i].rank, x->plugin_err[0] != '\0' ? x->plugin_err
				 : "no \"NET/Plugin: Loaded net plugin\" line",
				 x->transport[0] != '\0' ? x->transport : "its internal network");
			return false;
		}
		if (strcmp(x->transport, "Socket") == 0 && rows[i].nports > 0) {
			ports_of(&rows[i], ports, sizeof(ports));
			snprintf(msg, size, "socket fallback: NCCL on %s (rank %d) used sockets "
				 "(NET/Socket), though %s has RDMA devices (%s): %s", rows[i].host,
				 rows[i].rank, rows[i].host, ports, socket_fix(&rows[i]));
			return false;
		}
	}
	return true;
}

static void one(const struct ncclnet *x, char *buf, size_t size)
{
	snprintf(buf, size, "%s%s", x->transport[0] != '\0' ? x->transport : "?",
		 x->gdr ? ", GDRDMA" : "");
}

void ncclnet_summary(const struct rank_row *rows, const struct ncclnet *nets, size_t n,
		     char *buf, size_t size)
{
	char first[80] = "", cur[80];
	bool same = true, any = false;
	size_t off = 0;

	for (size_t i = 0; i < n; i++) {
		if (!nets[i].read)
			continue;
		one(&nets[i], cur, sizeof(cur));
		if (!any)
			snprintf(first, sizeof(first), "%s", cur);
		same &= strcmp(first, cur) == 0;
		any = true;
	}
	if (!any) {
		snprintf(buf, size, "unknown (NCCL's lines were not read)");
		return;
	}
	if (same) {
		snprintf(buf, size, "%s", first);
		return;
	}
	buf[0] = '\0';
	for (size_t i = 0; i < n && off < size; i++) {
		bool seen = false;
		int w;

		for (size_t k = 0; k < i; k++)
			seen |= strcmp(rows[k].host, rows[i].host) == 0;
		if (seen || !nets[i].read)
			continue;
		one(&nets[i], cur, sizeof(cur));
		w = snprintf(buf + off, size - off, "%s%s %s", off ? "; " : "", rows[i].host, cur);
		if (w < 0)
			break;
		off += (size_t)w;
	}
}
