/* rdzv_wire.c - socket helpers of the rendezvous and the socket
 * collectives (see rendezvous_int.h, rendezvous.h). */
#include "rendezvous_int.h"

#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int sock_send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int sock_send_until(int fd, const void *buf, size_t len, long long deadline)
{
	const char *p = buf;

	while (len > 0) {
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };
		long long left = deadline - mono_ms();
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			p += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno != EINTR && errno != EAGAIN)
			return -1;
		if (left <= 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		if (poll(&pfd, 1, left > INT_MAX ? INT_MAX : (int)left) < 0 && errno != EINTR)
			return -1;
	}
	return 0;
}

/* Receives exactly len bytes, giving up at `deadline` (errno ETIMEDOUT);
 * a negative deadline waits for ever. */
int rdzv_recv_until(int fd, void *buf, size_t len, long deadline)
{
	char *p = buf;

	while (len > 0) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		long left = deadline < 0 ? -1 : deadline - mono_ms();
		ssize_t n;
		int ret;

		if (deadline >= 0 && left <= 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		ret = poll(&pfd, 1, left > INT_MAX ? INT_MAX : (int)left);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret < 0)
			return -1;
		if (ret == 0)
			continue;
		n = recv(fd, p, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0) {
			errno = ECONNRESET;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int sock_recv_all(int fd, void *buf, size_t len)
{
	return rdzv_recv_until(fd, buf, len, -1);
}

void rdzv_copy_str(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src != NULL ? src : "", size - 1);

	memcpy(dst, src != NULL ? src : "", n);
	dst[n] = '\0';
}

int rdzv_fail_set(struct rdzv *r, struct err *e, enum rdzv_fail kind, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	e->code = 1;
	r->fail = kind;
	return -1;
}

void rdzv_tune(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

void rdzv_send_status(int fd, enum rdzv_fail kind, const char *msg)
{
	struct status s = { .kind = htonl((uint32_t)kind) };

	memcpy(s.magic, MAGIC, 8);
	rdzv_copy_str(s.msg, sizeof(s.msg), msg);
	sock_send_all(fd, &s, sizeof(s));
}

void rdzv_hello_mac(const uint8_t key[JOBKEY_LEN], const struct hello *h, uint8_t mac[JOBKEY_LEN])
{
	jobkey_mac(key, (struct jobkey_part[]){ { "hello", 6 }, { h, offsetof(struct hello, mac) } },
		   2, mac);
}

void rdzv_auth_mac(const uint8_t key[JOBKEY_LEN], const char *role, const struct hello *h,
		   const uint8_t nonce0[RDZV_NONCE_LEN], uint8_t mac[JOBKEY_LEN])
{
	jobkey_mac(key, (struct jobkey_part[]){ { role, strlen(role) + 1 },
						{ h, sizeof(*h) },
						{ nonce0, RDZV_NONCE_LEN } },
		   3, mac);
}
