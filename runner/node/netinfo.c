/* netinfo.c - resolving MASTER_ADDR and finding a free port. */
#include "netinfo.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

bool net_is_loopback(const char *addr)
{
	struct in6_addr a6;

	if (strncmp(addr, "127.", 4) == 0)
		return true;
	if (inet_pton(AF_INET6, addr, &a6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&a6) || (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127);
	return false;
}

static int numeric(const struct sockaddr *sa, socklen_t len, char *out, size_t size)
{
	return getnameinfo(sa, len, out, (socklen_t)size, NULL, 0, NI_NUMERICHOST) == 0 ? 0 : -1;
}

static int local_address(char *out, size_t size)
{
	struct ifaddrs *ifs, *i;
	int rv = -1;

	if (getifaddrs(&ifs) < 0)
		return -1;
	for (int family = AF_INET; rv < 0 && family != 0; family = family == AF_INET ? AF_INET6 : 0)
		for (i = ifs; i != NULL && rv < 0; i = i->ifa_next) {
			if (i->ifa_addr == NULL || i->ifa_addr->sa_family != family ||
			    (i->ifa_flags & IFF_UP) == 0 || (i->ifa_flags & IFF_LOOPBACK) != 0)
				continue;
			if (family == AF_INET6 &&
			    IN6_IS_ADDR_LINKLOCAL(&((struct sockaddr_in6 *)(void *)i->ifa_addr)->sin6_addr))
				continue;
			rv = numeric(i->ifa_addr, family == AF_INET ? sizeof(struct sockaddr_in)
								    : sizeof(struct sockaddr_in6), out, size);
		}
	freeifaddrs(ifs);
	return rv;
}

int net_resolve_master(const char *name, bool self, char *out, size_t size, struct err *e)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res = NULL, *r;
	char first[INET6_ADDRSTRLEN] = "";
	int ret, rv = -1;

	ret = getaddrinfo(name, NULL, &hints, &res);
	if (ret != 0)
		return err_set(e, EXIT_CTRUN, "master address '%s' does not resolve: %s (pass "
			       "--master-addr with a name or address every node resolves)", name,
			       gai_strerror(ret));
	/* IPv4 first: what every rank will agree on, and what gloo prefers. */
	for (int family = AF_INET; rv < 0 && family != 0; family = family == AF_INET ? AF_INET6 : 0)
		for (r = res; r != NULL && rv < 0; r = r->ai_next) {
			char buf[INET6_ADDRSTRLEN];

			if (r->ai_family != family || numeric(r->ai_addr, r->ai_addrlen, buf, sizeof(buf)) < 0)
				continue;
			if (first[0] == '\0')
				memcpy(first, buf, sizeof(buf));
			if (!net_is_loopback(buf) && strlen(buf) < size) {
				memcpy(out, buf, strlen(buf) + 1);
				rv = 0;
			}
		}
	freeaddrinfo(res);
	if (rv == 0)
		return 0;
	if (self && local_address(out, size) == 0)
		return 0;
	return err_set(e, EXIT_CTRUN, "master address '%s' resolves only to loopback (%s) here: "
		       "the other nodes cannot reach it (fix /etc/hosts or pass --master-addr)",
		       name, first);
}

/* The kernel's ephemeral range (connect() and bind(0) take ports there). */
static long ephemeral_low(void)
{
	long lo = 32768, hi;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");

	if (f != NULL) {
		if (fscanf(f, "%ld %ld", &lo, &hi) != 2)
			lo = 32768;
		fclose(f);
	}
	return lo;
}

int net_free_port(long *port, struct err *e)
{
	const long first = 10000, last = ephemeral_low() - 1;
	long span = last - first + 1, start;

	if (span < 100)
		return err_set(e, EXIT_CTRUN, "finding a free port: the kernel's ephemeral range "
			       "starts at %ld, leaving none below it (set --master-port)", last + 1);
	/* Below the ephemeral range, so no connect() or bind(0) on this host
	 * takes the port between this probe and the workers' bind; from a
	 * place of this process's own, so two ctruns do not probe alike. */
	start = first + (long)((unsigned long)getpid() * 2654435761UL % (unsigned long)span);
	for (long i = 0; i < span && i < 4096; i++) {
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY) };
		long p = first + (start - first + i) % span;
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), ok;

		if (fd < 0)
			return err_sys(e, EXIT_CTRUN, "socket");
		sa.sin_port = htons((uint16_t)p);
		ok = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
		close(fd);
		if (ok) {
			*port = p;
			return 0;
		}
	}
	return err_set(e, EXIT_CTRUN, "finding a free port: none free in %ld-%ld (set --master-port)",
		       first, last);
}

int net_route_ifname(const char *addr, char *ifname, size_t size, struct err *e)
{
	struct addrinfo hints = { .ai_socktype = SOCK_DGRAM, .ai_flags = AI_NUMERICHOST };
	struct addrinfo *res = NULL;
	struct sockaddr_storage src;
	socklen_t len = sizeof(src);
	struct ifaddrs *ifs = NULL;
	int fd = -1, rv = -1, ret;

	ret = getaddrinfo(addr, "9", &hints, &res);
	if (ret != 0)
		return err_set(e, EXIT_CTRUN, "address '%s': %s", addr, gai_strerror(ret));
	/* A UDP connect sends nothing: it only asks the kernel for the route,
	 * and getsockname then tells which source address that route uses. */
	fd = socket(res->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen) < 0 ||
	    getsockname(fd, (struct sockaddr *)&src, &len) < 0) {
		err_sys(e, EXIT_CTRUN, "no route to %s", addr);
		goto out;
	}
	if (getifaddrs(&ifs) < 0) {
		err_sys(e, EXIT_CTRUN, "listing interfaces");
		goto out;
	}
	for (struct ifaddrs *i = ifs; i != NULL; i = i->ifa_next) {
		bool same = false;

		if (i->ifa_addr == NULL || i->ifa_addr->sa_family != src.ss_family)
			continue;
		if (src.ss_family == AF_INET)
			same = ((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr.s_addr ==
			       ((struct sockaddr_in *)(void *)&src)->sin_addr.s_addr;
		else if (src.ss_family == AF_INET6)
			same = memcmp(&((struct sockaddr_in6 *)(void *)i->ifa_addr)->sin6_addr,
				      &((struct sockaddr_in6 *)(void *)&src)->sin6_addr,
				      sizeof(struct in6_addr)) == 0;
		if (same && strlen(i->ifa_name) < size) {
			memcpy(ifname, i->ifa_name, strlen(i->ifa_name) + 1);
			rv = 0;
			break;
		}
	}
	if (rv < 0)
		err_set(e, EXIT_CTRUN, "no interface owns the source address for %s", addr);
out:
	if (ifs != NULL)
		freeifaddrs(ifs);
	if (fd >= 0)
		close(fd);
	freeaddrinfo(res);
	return rv;
}
