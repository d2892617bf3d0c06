/* util.c - strict number parsing and small file helpers (see util.h). */
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int parse_long(const char *s, long min, long max, long *out)
{
	char *end = NULL;
	long v;

	if (s == NULL || *s == '\0' || *s == ' ' || *s == '\t' || *s == '+') {
		errno = EINVAL;
		return -1;
	}
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0') {
		if (errno == 0)
			errno = EINVAL;
		return -1;
	}
	if (v < min || v > max) {
		errno = ERANGE;
		return -1;
	}
	*out = v;
	return 0;
}

int parse_bool(const char *s, bool *out)
{
	static const char *yes[] = { "1", "true", "yes", "on" };
	static const char *no[] = { "0", "false", "no", "off" };

	for (size_t i = 0; i < sizeof(yes) / sizeof(*yes); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	errno = EINVAL;
	return -1;
}

int xsnprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	if (ret < 0 || (size_t)ret >= size) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return ret;
}

char *read_fd_max(int fd, size_t max, size_t *len)
{
	char *buf = NULL, *tmp;
	size_t cap = 0, n = 0;
	ssize_t r;

	for (;;) {
		if (n + 1 >= cap) {
			/* Doubling from 4 KiB, never past the bound. */
			cap = cap == 0 ? 4096 : cap > SIZE_MAX / 2 ? SIZE_MAX : cap * 2;
			if (max < SIZE_MAX && cap > max + 1)
				cap = max + 1;
			tmp = realloc(buf, cap);
			if (tmp == NULL)
				goto fail;
			buf = tmp;
		}
		if (n >= max)
			break;
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			goto fail;
		if (r == 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
fail:
	free(buf);
	return NULL;
}

char *read_file(const char *path, size_t *len)
{
	size_t n;
	char *buf;
	int fd = open(path, O_RDONLY | O_CLOEXEC), saved;

	if (fd < 0)
		return NULL;
	buf = read_fd_max(fd, SIZE_MAX - 1, &n);
	saved = errno;
	close(fd);
	errno = saved;
	if (buf != NULL && len != NULL)
		*len = n;
	return buf;
}

int open_regular(const char *path, int flags, struct stat *st)
{
	struct stat own;
	int fd = open(path, flags | O_NONBLOCK | O_NOCTTY | O_CLOEXEC), saved;

	if (st == NULL)
		st = &own;
	if (fd < 0)
		return -1;
	if (fstat(fd, st) < 0)
		saved = errno;
	else if (S_ISREG(st->st_mode))
		return fd;
	else
		saved = EINVAL;
	close(fd);
	errno = saved;
	return -1;
}

int mkdir_p(const char *path, unsigned mode)
{
	char buf[PATH_MAX];
	struct stat st;

	if (xsnprintf(buf, sizeof(buf), "%s", path) < 0)
		return -1;
	for (char *p = buf + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, (mode_t)mode) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(buf, (mode_t)mode) < 0) {
		if (errno != EEXIST)
			return -1;
		if (stat(buf, &st) < 0)
			return -1;
		if (!S_ISDIR(st.st_mode)) {
			errno = ENOTDIR;
			return -1;
		}
	}
	return 0;
}

int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t w = write(fd, p, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int parse_size(const char *s, unsigned long long *out)
{
	static const char units[] = "KMGTP";
	char *end = NULL;
	double v;

	if (s == NULL || !isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s)
		return -1;
	if (*end != '\0') {
		const char *u = strchr(units, toupper((unsigned char)*end));

		if (u == NULL || *u == '\0')
			return -1;
		for (long i = 0; i <= u - units; i++)
			v *= 1024.0;
		end++;
		if (*end == 'i' || *end == 'I')
			end++;
		if (*end == 'b' || *end == 'B')
			end++;
		if (*end != '\0')
			return -1;
	}
	if (v < 0 || v >= 1.8e19)
		return -1;
	*out = (unsigned long long)v;
	return 0;
}

int wait_child(pid_t pid, long timeout_ms)
{
	long long start = mono_ms();
	int status;

	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid)
			return status;
		if (w < 0 && errno != EINTR)
			return -1;
		if (mono_ms() - start >= timeout_ms) {
			kill(pid, SIGKILL);
			while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
				;
			return -1;
		}
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	}
}

int sibling_path(const char *name, char *out, size_t size)
{
	char self[PATH_MAX], *slash;

	if (realpath("/proc/self/exe", self) == NULL)
		return -1;
	slash = strrchr(self, '/');
	if (slash == NULL)
		return -1;
	*slash = '\0';
	/* Next to ctrun (the build tree), else where `make install` and the
	 * Debian package put the helpers: PREFIX/libexec/ctrun. */
	if (xsnprintf(out, size, "%s/%s", self, name) < 0)
		return -1;
	if (access(out, X_OK) == 0)
		return 0;
	if (xsnprintf(out, size, "%s/../libexec/ctrun/%s", self, name) < 0 || access(out, X_OK) < 0) {
		xsnprintf(out, size, "%s/%s", self, name); /* the error names the first place */
		return -1;
	}
	return 0;
}

long long mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

long long mono_ms(void)
{
	return mono_ns() / 1000000;
}
