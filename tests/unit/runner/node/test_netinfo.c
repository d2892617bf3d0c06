/* Unit tests: the rendezvous address and port of this host (netinfo.h):
 * loopback is never handed to other nodes, free ports come from below the
 * kernel's ephemeral range, the interface of the route to the master. */
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "netinfo.h"

static void test_loopback_addresses(void **state)
{
	(void)state;
	assert_true(net_is_loopback("127.0.0.1"));
	assert_true(net_is_loopback("127.0.1.1"));
	assert_true(net_is_loopback("::1"));
	assert_true(net_is_loopback("::ffff:127.0.0.1"));
	assert_false(net_is_loopback("10.1.2.3"));
	assert_false(net_is_loopback("fe80::1"));
}

/* A loopback MASTER_ADDR at launch: on another node it is refused (the
 * ranks there could never reach it); on the master itself it becomes the
 * host's own reachable address (Debian's 127.0.1.1 for the hostname). */
static void test_loopback_master_refused_elsewhere_replaced_on_the_master(void **state)
{
	char out[64];
	struct err e = { 0 };

	(void)state;
	assert_int_equal(net_resolve_master("127.0.0.1", false, out, sizeof(out), &e), -1);
	assert_int_equal(e.code, EXIT_CTRUN);
	assert_non_null(strstr(e.msg, "master address '127.0.0.1' resolves only to loopback "
				      "(127.0.0.1) here"));
	assert_int_equal(net_resolve_master("localhost", true, out, sizeof(out), &e), 0);
	assert_false(net_is_loopback(out));
	assert_int_equal(net_resolve_master("10.1.2.3", false, out, sizeof(out), &e), 0);
	assert_string_equal(out, "10.1.2.3");
	assert_int_equal(net_resolve_master("no-such-host.invalid", true, out, sizeof(out), &e), -1);
	assert_non_null(strstr(e.msg, "does not resolve"));
}

static void test_free_port_is_bindable_and_below_the_ephemeral_range(void **state)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY) };
	struct err e = { 0 };
	long port = 0, lo = 32768, hi;
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
	int fd;

	(void)state;
	if (f != NULL) {
		assert_int_equal(fscanf(f, "%ld %ld", &lo, &hi), 2);
		fclose(f);
	}
	assert_int_equal(net_free_port(&port, &e), 0);
	assert_true(port >= 10000 && port < lo);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	sa.sin_port = htons((uint16_t)port);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(fd);
}

static void test_route_to_loopback_is_lo(void **state)
{
	char ifname[32];
	struct err e = { 0 };

	(void)state;
	assert_int_equal(net_route_ifname("127.0.0.1", ifname, sizeof(ifname), &e), 0);
	assert_string_equal(ifname, "lo");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loopback_addresses),
		cmocka_unit_test(test_loopback_master_refused_elsewhere_replaced_on_the_master),
		cmocka_unit_test(test_free_port_is_bindable_and_below_the_ephemeral_range),
		cmocka_unit_test(test_route_to_loopback_is_lo),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
