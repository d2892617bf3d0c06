/* claim.c - pull claims and job records in the image store (see claim.h). */
#include "claim.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rootpath.h"
#include "store.h"
#include "util.h"

#define POLL_MS 200

static void sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&t, &t) < 0 && errno == EINTR)
		;
}

static long long now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec;
}

static void host_name(char *h, size_t size)
{
	if (gethostname(h, size - 1) < 0)
		snprintf(h, size, "localhost");
	h[size - 1] = '\0';
	h[strcspn(h, "./ ")] = '\0';
}

static void *beat(void *arg)
{
	struct claim *c = arg;
	struct timespec until;

	pthread_mutex_lock(&c->lock);
	while (!c->stopping) {
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += CLAIM_BEAT_S;
		pthread_cond_timedwait(&c->stop, &c->lock, &until);
		if (!c->stopping)
			futimens(c->fd, NULL);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* O_EXCL: 1 ours, 0 someone else's is there, -1 error. */
static int try_create(struct claim *c, struct err *e)
{
	char line[128], host[64];
	int fd = open(c->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	int n;

	if (fd < 0)
		return errno == EEXIST ? 0 : err_sys(e, EXIT_CTRUN, "pull claim %s", c->path);
	host_name(host, sizeof(host));
	n = snprintf(line, sizeof(line), "%s %ld\n", host, (long)getpid());
	if (write_all(fd, line, (size_t)n) < 0) {
		close(fd);
		unlink(c->path);
		return err_sys(e, EXIT_CTRUN, "pull claim %s", c->path);
	}
	c->fd = fd;
	c->held = true;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->stop, NULL);
	c->stopping = false;
	c->beating = pthread_create(&c->beat, NULL, beat, c) == 0;
	return 1;
}

/* The holder of the claim at path: "HOST PID", and whether it is dead;
 * *mine_pid gets its pid when it was of this host (else 0). */
static bool holder_dead(const char *path, char *who, size_t size, long *mine_pid)
{
	char buf[128], host[64] = "", me[64];
	long pid = 0;
	struct stat st;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	snprintf(who, size, "another ctrun");
	if (fd < 0)
		return false; /* gone: the next round tries to create it */
	n = read(fd, buf, sizeof(buf) - 1);
	if (fstat(fd, &st) < 0)
		st.st_mtime = time(NULL);
	close(fd);
	if (n > 0) {
		buf[n] = '\0';
		if (sscanf(buf, "%63s %ld", host, &pid) == 2)
			snprintf(who, size, "%s pid %ld", host, pid);
	}
	host_name(me, sizeof(me));
	*mine_pid = strcmp(host, me) == 0 ? pid : 0;
	if (pid > 0 && n > 0 && strcmp(host, me) == 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH)
		return true;
	return time(NULL) - st.st_mtime > CLAIM_STALE_S;
}

/* What a dead puller of this host left under tmp/ (NAME.HOST.PID). */
static void remove_leftovers(const char *store, long pid)
{
	char dir[PATH_MAX], suffix[96], host[64], p[PATH_MAX];
	struct dirent *d;
	size_t sl;
	DIR *dh;

	host_name(host, sizeof(host));
	snprintf(suffix, sizeof(suffix), ".%s.%ld", host, pid);
	sl = strlen(suffix);
	if (xsnprintf(dir, sizeof(dir), "%s/tmp", store) < 0 || (dh = opendir(dir)) == NULL)
		return;
	while ((d = readdir(dh)) != NULL) {
		size_t l = strlen(d->d_name);

		char part[PATH_MAX];

		if (l <= sl || strcmp(d->d_name + l - sl, suffix) != 0 ||
		    xsnprintf(p, sizeof(p), "%s/%s", dir, d->d_name) < 0)
			continue;
		/* A blob's bytes (HEX.HOST.PID) stay for the next pull to resume. */
		if (l == 64 + sl && d->d_type == DT_REG &&
		    xsnprintf(part, sizeof(part), "%s/%.64s.part", dir, d->d_name) >= 0 &&
		    rename(p, part) == 0)
			continue;
		remove_tree(p);
	}
	closedir(dh);
}

int claim_take(const char *store, const char *digest, const char *image, long wait_s,
	       bool quiet, struct claim *c, struct err *e)
{
	long long start = now_s(), deadline = start + wait_s;
	char who[128], dead[PATH_MAX + 64];
	long dead_pid = 0;
	bool said = false;
	struct stat st;

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	if (!digest_valid(digest) ||
	    xsnprintf(c->path, sizeof(c->path), "%s/tmp/%s.claim", store, digest + 7) < 0)
		return err_set(e, EXIT_CTRUN, "pull claim: bad digest or path");
	for (;;) {
		int r;

		if (stat(image, &st) == 0)
			return 0;
		r = try_create(c, e);
		if (r != 0) {
			/* Published between our look and the claim: nothing to do. */
			if (r == 1 && stat(image, &st) == 0) {
				claim_release(c);
				return 0;
			}
			return r;
		}
		if (holder_dead(c->path, who, sizeof(who), &dead_pid)) {
			/* Only one waiter wins the rename; it removes the dead claim. */
			snprintf(dead, sizeof(dead), "%s.dead.%ld", c->path, (long)getpid());
			if (rename(c->path, dead) == 0) {
				unlink(dead);
				if (dead_pid > 0)
					remove_leftovers(store, dead_pid);
				if (!quiet)
					fprintf(stderr, "ctrun: %s, pulling %.19s, is gone: taking over\n",
						who, digest);
			}
			continue;
		}
		/* Said once the wait is noticeable. */
		if (!said && !quiet && now_s() - start >= 2) {
			fprintf(stderr, "ctrun: waiting for %s, pulling %.19s into %s\n", who, digest,
				store);
			said = true;
		}
		if (now_s() >= deadline)
			return err_set(e, EXIT_CTRUN, "gave up after %ld s waiting for %s to pull %s "
				       "([registry] wait; its claim is %s)", wait_s, who, digest,
				       c->path);
		sleep_ms(POLL_MS);
	}
}

void claim_release(struct claim *c)
{
	if (!c->held)
		return;
	if (c->beating) {
		pthread_mutex_lock(&c->lock);
		c->stopping = true;
		pthread_cond_signal(&c->stop);
		pthread_mutex_unlock(&c->lock);
		pthread_join(c->beat, NULL);
	}
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->stop);
	unlink(c->path);
	close(c->fd);
	c->held = false;
}

int job_record_key(const char *job, const char *step, const char *reference, char *out,
		   size_t size)
{
	uint64_t h = 14695981039346656037ULL;

	for (const char *p = reference; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	for (const char *p = job; *p; p++)
		if (!(*p >= '0' && *p <= '9') && *p != '_')
			return -1;
	for (const char *p = step; *p; p++)
		if (!(*p >= '0' && *p <= '9'))
			return -1;
	return xsnprintf(out, size, "%s.%s-%016llx", job, step, (unsigned long long)h) < 0 ? -1 : 0;
}

int job_record_write(const char *store, const char *key, const char *text, struct err *e)
{
	char dir[PATH_MAX], path[PATH_MAX], tmp[PATH_MAX];
	size_t len = strlen(text);
	int fd;

	if (xsnprintf(dir, sizeof(dir), "%s/jobs", store) < 0 ||
	    xsnprintf(path, sizeof(path), "%s/%s", dir, key) < 0 ||
	    store_tmp(store, "job", tmp, sizeof(tmp), e) < 0)
		return err_set(e, EXIT_CTRUN, "image store %s: path too long", store);
	if (mkdir_p(dir, store_dir_mode(store)) < 0)
		return err_sys(e, EXIT_CTRUN, "%s", dir);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return err_sys(e, EXIT_CTRUN, "%s", tmp);
	if (write_all(fd, text, len) < 0 || write_all(fd, "\n", 1) < 0 || close(fd) < 0) {
		unlink(tmp);
		return err_sys(e, EXIT_CTRUN, "%s", tmp);
	}
	if (rename(tmp, path) < 0) {
		unlink(tmp);
		return err_sys(e, EXIT_CTRUN, "%s", path);
	}
	return 0;
}

int job_record_wait(const char *store, const char *key, long wait_s, bool quiet, char *digest,
		    size_t size, struct err *e)
{
	long long start = now_s(), deadline = start + wait_s;
	char path[PATH_MAX], buf[1100];
	bool said = false;

	if (xsnprintf(path, sizeof(path), "%s/jobs/%s", store, key) < 0)
		return err_set(e, EXIT_CTRUN, "image store %s: path too long", store);
	for (;;) {
		int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

		if (fd >= 0) {
			ssize_t n = read(fd, buf, sizeof(buf) - 1);

			close(fd);
			buf[n > 0 ? n : 0] = '\0';
			buf[strcspn(buf, "\n")] = '\0';
			if (buf[0] == '!')
				return err_set(e, EXIT_CTRUN, "the step's task 0 could not pull the "
					       "image: %s", buf + 1);
			if (!digest_valid(buf))
				return err_set(e, EXIT_CTRUN, "%s: not a digest", path);
			return xsnprintf(digest, size, "%s", buf) < 0 ? -1 : 0;
		}
		if (!said && !quiet && now_s() - start >= 2) {
			fprintf(stderr, "ctrun: waiting for the step's task 0 to resolve the image "
				"(%s)\n", path);
			said = true;
		}
		if (now_s() >= deadline)
			return err_set(e, EXIT_CTRUN, "gave up after %ld s waiting for the step's task "
				       "0 to resolve the image (no %s; is the image store shared "
				       "by the nodes? see [registry] store_shared)", wait_s, path);
		sleep_ms(POLL_MS);
	}
}
