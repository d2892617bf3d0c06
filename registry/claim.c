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

enum holder { HOLDER_ALIVE, HOLDER_DEAD, HOLDER_NONE };

/* The holder of the claim at path: "HOST PID" into who, and whether it is
 * dead; *mine_pid gets its pid when it was of this host (else 0).
 * HOLDER_NONE: what is there is not a file ctrun makes (a FIFO, a link, a
 * folder), so no one holds the claim. */
static enum holder holder_of(const char *path, char *who, size_t size, long *mine_pid)
{
	char buf[128], host[64] = "", me[64];
	long pid = 0;
	struct stat st;
	ssize_t n = -1;
	int fd = open_regular(path, O_RDONLY | O_NOFOLLOW, &st);

	snprintf(who, size, "another ctrun");
	*mine_pid = 0;
	if (fd < 0 && (errno == EINVAL || errno == ELOOP))
		return HOLDER_NONE;
	if (fd < 0 && errno == ENOENT)
		return HOLDER_ALIVE; /* gone: the next round tries to create it */
	if (fd < 0 && lstat(path, &st) < 0)
		st.st_mtime = time(NULL);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	if (n > 0) {
		buf[n] = '\0';
		if (sscanf(buf, "%63s %ld", host, &pid) == 2)
			snprintf(who, size, "%s pid %ld", host, pid);
	}
	host_name(me, sizeof(me));
	*mine_pid = strcmp(host, me) == 0 ? pid : 0;
	if (pid > 0 && n > 0 && strcmp(host, me) == 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH)
		return HOLDER_DEAD;
	return time(NULL) - st.st_mtime > CLAIM_STALE_S ? HOLDER_DEAD : HOLDER_ALIVE;
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
	long long start = mono_ms() / 1000, deadline = start + wait_s;
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
		enum holder h;
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
		h = holder_of(c->path, who, sizeof(who), &dead_pid);
		if (h != HOLDER_ALIVE) {
			/* Only one waiter wins the rename; it removes the dead claim. */
			snprintf(dead, sizeof(dead), "%s.dead.%ld", c->path, (long)getpid());
			if (rename(c->path, dead) == 0) {
				remove_tree(dead);
				if (dead_pid > 0)
					remove_leftovers(store, dead_pid);
				if (!quiet && h == HOLDER_NONE)
					fprintf(stderr, "ctrun: %s is not a claim (not a regular file: "
						"someone put it there): removed\n", c->path);
				else if (!quiet)
					fprintf(stderr, "ctrun: %s, pulling %.19s, is gone: taking over\n",
						who, digest);
			}
			continue;
		}
		/* Said once the wait is noticeable. */
		if (!said && !quiet && mono_ms() / 1000 - start >= 2) {
			fprintf(stderr, "ctrun: waiting for %s, pulling %.19s into %s\n", who, digest,
				store);
			said = true;
		}
		if (mono_ms() / 1000 >= deadline)
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

/* Digits (and letters when `letters`) and the bytes of `also`: 1 to 64. */
static bool plain(const char *s, bool letters, const char *also)
{
	size_t n = strlen(s);

	if (n == 0 || n > 64)
		return false;
	for (const char *p = s; *p; p++)
		if (!(*p >= '0' && *p <= '9') && strchr(also, *p) == NULL &&
		    !(letters && ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z'))))
			return false;
	return true;
}

int job_record_of(const struct job_run *r, const char *reference, struct job_record *out)
{
	const char *restart = r->restart != NULL ? r->restart : "0";
	uint64_t h = 14695981039346656037ULL;

	if (r->job == NULL || r->step == NULL || !plain(r->job, false, "_") ||
	    !plain(r->step, false, "") || !plain(restart, false, "") ||
	    (r->start != NULL && !plain(r->start, false, "")) ||
	    (r->cluster != NULL && !plain(r->cluster, true, "._-")) ||
	    (r->node != NULL && !plain(r->node, true, "._-")))
		return -1;
	for (const char *p = reference; *p; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return -1;
		h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	}
	/* Each node's own record when the store is each node's. */
	if (r->node != NULL) {
		h *= 1099511628211ULL; /* a NUL between the two */
		for (const char *p = r->node; *p; p++)
			h = (h ^ (unsigned char)*p) * 1099511628211ULL;
	}
	if (xsnprintf(out->key, sizeof(out->key), "%s.%s-%016llx", r->job, r->step,
		      (unsigned long long)h) < 0)
		return -1;
	return xsnprintf(out->run, sizeof(out->run),
			 "ctrun job record\nrun %s %s.%s restart %s start %s node %s\nreference %s\n",
			 r->cluster != NULL ? r->cluster : "-", r->job, r->step, restart,
			 r->start != NULL ? r->start : "-", r->node != NULL ? r->node : "-",
			 reference) < 0 ? -1 : 0;
}

int job_record_format(const struct job_record *r, const char *result, char *out, size_t size)
{
	int len = (int)strcspn(result, "\n");

	return xsnprintf(out, size, "%s%.*s\n", r->run, len, result) < 0 ? -1 : 0;
}

int job_record_parse(const struct job_record *r, const char *text, char *out, size_t size)
{
	size_t n = strlen(r->run), len;
	const char *rest = text + n;

	if (strncmp(text, r->run, n) != 0)
		return 0;
	len = strcspn(rest, "\n");
	if (rest[len] != '\n' || rest[len + 1] != '\0')
		return 0;
	if (rest[0] == '!') {
		snprintf(out, size, "%.*s", (int)len - 1, rest + 1); /* cut to fit: a message */
		return 2;
	}
	if (len != 71 || xsnprintf(out, size, "%.*s", (int)len, rest) < 0 || !digest_valid(out))
		return 0;
	return 1;
}

/* A temporary file of ours under tmp/ that no one named before
 * (job-XXXXXX.HOST.PID, O_EXCL, mode 0600: only this user reads it). */
static int tmp_record(const char *store, char *tmp, size_t size, struct err *e)
{
	static const char name[] = "job-XXXXXX";
	size_t suffix;
	int fd;

	if (store_tmp(store, name, tmp, size, e) < 0)
		return -1;
	/* What follows the X's: .HOST.PID */
	suffix = strlen(tmp) - strlen(store) - strlen("/tmp/") - strlen(name);
	fd = mkostemps(tmp, (int)suffix, O_CLOEXEC);
	if (fd < 0)
		return err_sys(e, EXIT_CTRUN, "job record: a temporary file in %s/tmp", store);
	return fd;
}

int job_record_write(const char *store, const struct job_record *r, const char *result,
		     struct err *e)
{
	char dir[PATH_MAX], path[PATH_MAX], tmp[PATH_MAX], text[JOB_TEXT_MAX];
	int fd, rc;

	if (xsnprintf(dir, sizeof(dir), "%s/jobs", store) < 0 ||
	    xsnprintf(path, sizeof(path), "%s/%s", dir, r->key) < 0)
		return err_set(e, EXIT_CTRUN, "image store %s: path too long", store);
	if (job_record_format(r, result, text, sizeof(text)) < 0)
		return err_set(e, EXIT_CTRUN, "job record %s: too long", path);
	if (store_mkdir(store, dir, e) < 0)
		return -1;
	fd = tmp_record(store, tmp, sizeof(tmp), e);
	if (fd < 0)
		return -1;
	if (write_all(fd, text, strlen(text)) < 0 || close(fd) < 0) {
		unlink(tmp);
		return err_sys(e, EXIT_CTRUN, "%s", tmp);
	}
	/* rename replaces a file, a link or a FIFO at the name; a folder
	 * someone made there goes first. */
	rc = rename(tmp, path);
	if (rc < 0 && (errno == EISDIR || errno == ENOTEMPTY || errno == EEXIST)) {
		remove_tree(path);
		rc = rename(tmp, path);
	}
	if (rc < 0) {
		err_sys(e, EXIT_CTRUN, "%s", path);
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* This run's record at path: 1 a digest, 2 task 0's error (in out), 0
 * none yet; *why says what was there instead (kept from an earlier call
 * when nothing is there). */
static int record_read(const char *path, const struct job_record *r, char *out, size_t size,
		       char *why, size_t wsize)
{
	char buf[JOB_TEXT_MAX];
	struct stat st;
	ssize_t n;
	int fd = open_regular(path, O_RDONLY | O_NOFOLLOW, &st), got;

	if (fd < 0) {
		if (errno == EINVAL || errno == ELOOP)
			snprintf(why, wsize, "; ignored there: not a regular file");
		return 0;
	}
	/* Another user's file names no digest this user's tasks run. */
	if (st.st_uid != geteuid()) {
		close(fd);
		snprintf(why, wsize, "; ignored there: a file of uid %u", (unsigned)st.st_uid);
		return 0;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	got = job_record_parse(r, buf, out, size);
	if (got == 0)
		snprintf(why, wsize, "; ignored there: a record of another run");
	return got;
}

int job_record_wait(const char *store, const struct job_record *r, long wait_s, bool quiet,
		    char *digest, size_t size, struct err *e)
{
	long long start = mono_ms() / 1000, deadline = start + wait_s;
	char path[PATH_MAX], why[96] = "", said_there[900];
	bool said = false;

	if (xsnprintf(path, sizeof(path), "%s/jobs/%s", store, r->key) < 0)
		return err_set(e, EXIT_CTRUN, "image store %s: path too long", store);
	for (;;) {
		int got = record_read(path, r, said_there, sizeof(said_there), why, sizeof(why));

		if (got == 1)
			return xsnprintf(digest, size, "%s", said_there) < 0
				       ? err_set(e, EXIT_CTRUN, "job record %s: digest too long", path) : 0;
		if (got == 2)
			return err_set(e, EXIT_CTRUN, "the step's task 0 could not pull the image: %s",
				       said_there);
		if (!said && !quiet && mono_ms() / 1000 - start >= 2) {
			fprintf(stderr, "ctrun: waiting for the step's task 0 to resolve the image "
				"(%s%s)\n", path, why);
			said = true;
		}
		if (mono_ms() / 1000 >= deadline)
			return err_set(e, EXIT_CTRUN, "gave up after %ld s waiting for the step's task "
				       "0 to resolve the image (no record of this run at %s%s; is the "
				       "image store shared by the nodes? see [registry] store_shared)",
				       wait_s, path, why);
		sleep_ms(POLL_MS);
	}
}

void job_records_sweep(const char *store)
{
	char dir[PATH_MAX], p[PATH_MAX];
	time_t now = time(NULL);
	struct dirent *d;
	struct stat st;
	DIR *dh;

	if (xsnprintf(dir, sizeof(dir), "%s/jobs", store) < 0 || (dh = opendir(dir)) == NULL)
		return;
	while ((d = readdir(dh)) != NULL) {
		if (strcmp(d->d_name, ".") == 0 || strcmp(d->d_name, "..") == 0 ||
		    fstatat(dirfd(dh), d->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    now - st.st_mtime < JOB_RECORD_TTL_S ||
		    xsnprintf(p, sizeof(p), "%s/%s", dir, d->d_name) < 0)
			continue;
		remove_tree(p);
	}
	closedir(dh);
}
