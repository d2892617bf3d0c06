/* holdsrun_client.c - `srun` inside the batch step's container: the agent hands
 * the command to ctrun __hold on the host (holdmsg.h), which runs the
 * host's srun with the agent's descriptors, and ends with its status.  The
 * other half, the host's, is holdsrun_server.c. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "agentspec.h"
#include "err.h"
#include "holdmsg.h"
#include "strv.h"
#include "util.h"

extern char **environ;

int hold_srun_client(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	union {
		char b[CMSG_SPACE(sizeof(int) * 3)];
		struct cmsghdr align;
	} u;
	struct strv parts = { 0 };
	char cwd[PATH_MAX], reply[64], line[] = SRUN_MAGIC "\n";
	struct iovec iov = { line, sizeof(line) - 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b,
			    .msg_controllen = sizeof(u.b) };
	struct cmsghdr *c;
	const int fds[3] = { 0, 1, 2 };
	size_t got = 0, total = 0;
	int sock, status = -1, rc = 0;

	if (getcwd(cwd, sizeof(cwd)) == NULL)
		strcpy(cwd, "/");
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", AGENT_DIR, SRUN_SOCK);
	sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sock < 0 || connect(sock, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "srun: ctrun: cannot reach the host's srun (%s): %s\n", sa.sun_path,
			strerror(errno));
		return EXIT_CTRUN;
	}
	memset(&u, 0, sizeof(u));
	c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(fds));
	memcpy(CMSG_DATA(c), fds, sizeof(fds));
	for (int i = 1; i < argc; i++)
		rc |= strv_push(&parts, argv[i]);
	rc |= strv_push(&parts, "");
	for (char **v = environ; *v != NULL; v++)
		rc |= strv_push(&parts, *v);
	rc |= strv_push(&parts, "") | strv_push(&parts, cwd);
	if (rc != 0 || sendmsg(sock, &m, MSG_NOSIGNAL) != (ssize_t)iov.iov_len)
		goto broken;
	for (size_t i = 0; i < parts.n; i++) {
		total += strlen(parts.v[i]) + 1;
		if (total > SRUN_TEXT_MAX || write_all(sock, parts.v[i], strlen(parts.v[i]) + 1) < 0)
			goto broken;
	}
	strv_free(&parts);
	shutdown(sock, SHUT_WR);
	for (;;) {
		ssize_t n = read(sock, reply + got, sizeof(reply) - 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
		if (got == sizeof(reply) - 1)
			break;
	}
	reply[got] = '\0';
	close(sock);
	if (sscanf(reply, "status %d", &status) != 1 || status < 0 || status > 255) {
		fprintf(stderr, "srun: ctrun: the host's srun gave no status\n");
		return EXIT_CTRUN;
	}
	return status;
broken:
	strv_free(&parts);
	close(sock);
	fprintf(stderr, "srun: ctrun: cannot hand the command to the host's srun: %s\n",
		strerror(errno));
	return EXIT_CTRUN;
}
