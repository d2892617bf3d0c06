/* slurmlib.c - libslurm's hostlist expansion in a child process (see
 * slurmlib.h for why a child).
 *
 * Protocol on the pipe, child to parent: records of one type byte, a
 * payload without NUL, and a NUL.  'L' soname loaded, 'H' one host name,
 * then exactly one end record: 'K' done, 'R' libslurm refused the input,
 * 'N' no libslurm could be loaded, 'T' too many hosts, 'B' too many bytes,
 * 'O' libslurm's int host count wrapped around.  No end record means the
 * child died. */
#include "slurmlib.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "slurmfind.h"
#include "util.h"

#define DEFAULT_TIMEOUT_MS 5000L
/* Larger than any answer within the caps: names plus one type byte each. */
#define MAX_REPLY (HOSTLIST_MAX_BYTES + HOSTLIST_MAX_HOSTS + 4096)
/* libslurm 22.05 calls exit(1) past this many ranges in one bracket. */
#define SLURM_MAX_RANGES 262144UL

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

extern char **environ;

/* Whether two paths name the same file. */
static bool realpath_eq(const char *a, const char *b)
{
	char ra[PATH_MAX], rb[PATH_MAX];

	return realpath(a, ra) != NULL && realpath(b, rb) != NULL && strcmp(ra, rb) == 0;
}

/* ---- child ---------------------------------------------------------- */

struct out_buf {
	int fd;
	size_t len;
	char b[65536];
};

static void child_exit(int code) __attribute__((noreturn));
static void child_exit(int code)
{
	_exit(code);
}

/* exit() from inside libslurm (fatal()) must not run the atexit handlers
 * ctrun registered before the fork, nor flush its stdio buffers a second
 * time: the handler registered last runs first, and ends the process. */
static void child_atexit(void)
{
	_exit(3);
}

static void out_flush(struct out_buf *o)
{
	if (o->len > 0 && write_all(o->fd, o->b, o->len) < 0)
		child_exit(4);
	o->len = 0;
}

static void out_record(struct out_buf *o, char type, const char *payload)
{
	size_t n = payload != NULL ? strlen(payload) : 0;

	if (o->len + n + 2 > sizeof(o->b))
		out_flush(o);
	if (n + 2 > sizeof(o->b)) {
		/* A name longer than the buffer: write it straight. */
		char hdr = type, nul = '\0';

		if (write_all(o->fd, &hdr, 1) < 0 || write_all(o->fd, payload, n) < 0 ||
		    write_all(o->fd, &nul, 1) < 0)
			child_exit(4);
		return;
	}
	o->b[o->len++] = type;
	if (n > 0)
		memcpy(o->b + o->len, payload, n);
	o->len += n;
	o->b[o->len++] = '\0';
}

static void out_end(struct out_buf *o, char type) __attribute__((noreturn));
static void out_end(struct out_buf *o, char type)
{
	out_record(o, type, NULL);
	out_flush(o);
	child_exit(0);
}

struct api {
	void *(*create)(const char *);
	int (*count)(void *);
	char *(*shift)(void *);
	char *(*nth)(void *, int);
	void (*destroy)(void *);
};

static void *load(const char *name, struct api *a)
{
	void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);

	if (h == NULL)
		return NULL;
	/* Through a union: ISO C has no cast from void * to a function
	 * pointer, and -Wpedantic builds would say so. */
#define SYM(field, sym)                                         \
	do {                                                    \
		union { void *p; __typeof__(a->field) f; } u_; \
		u_.p = dlsym(h, sym);                           \
		a->field = u_.f;                                \
	} while (0)
	SYM(create, "slurm_hostlist_create");
	SYM(count, "slurm_hostlist_count");
	SYM(shift, "slurm_hostlist_shift");
	SYM(nth, "slurm_hostlist_nth");
	SYM(destroy, "slurm_hostlist_destroy");
#undef SYM
	if (a->create == NULL || a->count == NULL || a->shift == NULL || a->nth == NULL ||
	    a->destroy == NULL) {
		dlclose(h);
		return NULL;
	}
	return h;
}

static void child(int fd, const char *s, const struct slurmlib_choice *c)
	__attribute__((noreturn));
static void child(int fd, const char *s, const struct slurmlib_choice *c)
{
	static struct out_buf o;
	char soname[32];
	const char *loaded = NULL;
	struct api a = { 0 };
	unsigned long hosts = 0, bytes = 0;
	void *hl;
	char *host;
	int null, n;

	o.fd = fd;
	if (atexit(child_atexit) != 0)
		child_exit(5);
	/* libslurm logs to stderr and fflush()es stdout, which would write
	 * ctrun's unflushed stdout a second time. */
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0 || dup2(null, STDOUT_FILENO) < 0 || dup2(null, STDERR_FILENO) < 0)
		child_exit(6);
	signal(SIGPIPE, SIG_DFL);
#ifndef UNDER_ASAN
	{
		/* Runaway input must not take the node's memory with it: 4 GiB
		 * more address space than the parent already had. */
		unsigned long pages = 0;
		FILE *f = fopen("/proc/self/statm", "r");

		if (f != NULL && fscanf(f, "%lu", &pages) == 1) {
			rlim_t lim = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) +
				     ((rlim_t)4 << 30);
			struct rlimit rl = { lim, lim };

			setrlimit(RLIMIT_AS, &rl);
		}
		if (f != NULL)
			fclose(f);
	}
#endif
	if (c->path[0] != '\0' && load(c->path, &a) != NULL)
		loaded = c->path;
	/* The dynamic linker's, newest soname first: Slurm bumps it every
	 * release (22.05 is .38, 26.05 .45), so later ones are tried too. */
	for (int v = SLURMLIB_NEWEST_SONAME; !c->only && v >= 30 && loaded == NULL; v--) {
		snprintf(soname, sizeof(soname), "libslurm.so.%d", v);
		if (load(soname, &a) != NULL)
			loaded = soname;
	}
	if (!c->only && loaded == NULL && load("libslurm.so", &a) != NULL)
		loaded = "libslurm.so";
	if (loaded == NULL)
		out_end(&o, 'N');
	{
		/* Name the file, not the symlink: "libslurm.so.38.0.0". */
		union { void (*f)(void *); void *p; } u = { .f = a.destroy };
		Dl_info info;
		char *real = NULL;

		if (dladdr(u.p, &info) != 0 && info.dli_fname != NULL)
			real = realpath(info.dli_fname, NULL);
		out_record(&o, 'L', real != NULL ? real : loaded);
		out_flush(&o); /* names the library should it hang or crash */
		free(real);
	}
	if (s == NULL)
		out_end(&o, 'K');

	hl = a.create(s);
	if (hl == NULL)
		out_end(&o, 'R');
	n = a.count(hl);
	if (n < 0 || (unsigned long)n > HOSTLIST_MAX_HOSTS)
		out_end(&o, 'T');
	while ((host = a.shift(hl)) != NULL) {
		bytes += strlen(host) + 1;
		if (++hosts > HOSTLIST_MAX_HOSTS)
			out_end(&o, 'T');
		if (bytes > HOSTLIST_MAX_BYTES)
			out_end(&o, 'B');
		out_record(&o, 'H', host);
		free(host);
	}
	/* libslurm counts hosts in an int: past 2^31 the count wraps and
	 * shift stops early with ranges left over. */
	host = a.nth(hl, 0);
	if (host != NULL)
		out_end(&o, 'O');
	a.destroy(hl);
	out_end(&o, 'K');
}

/* ---- parent --------------------------------------------------------- */

struct reply {
	char *buf;
	size_t len;
	int status;     /* waitpid status, valid if waited */
	bool waited;
	bool timed_out;
};

static long timeout_ms(void)
{
	const char *v = getenv("CTRUN_LIBSLURM_TIMEOUT_MS");
	long ms;

	if (v == NULL || parse_long(v, 1, 24L * 3600 * 1000, &ms) < 0)
		return DEFAULT_TIMEOUT_MS;
	return ms;
}

/* Runs the child on s (NULL: only load) and collects all it writes. */
static int run_child(const char *s, struct reply *r, struct err *e)
{
	struct slurmlib_choice c;
	int fds[2], saved;
	long deadline = mono_ms() + timeout_ms();
	size_t cap = 0;
	pid_t pid, w;

	memset(r, 0, sizeof(*r));
	slurmlib_find(environ, &c);
	if (pipe2(fds, O_CLOEXEC) < 0)
		return err_sys(e, EXIT_CTRUN, "libslurm: pipe");
	pid = fork();
	if (pid < 0) {
		saved = errno;
		close(fds[0]);
		close(fds[1]);
		errno = saved;
		return err_sys(e, EXIT_CTRUN, "libslurm: fork");
	}
	if (pid == 0) {
		close(fds[0]);
		child(fds[1], s, &c);
	}
	close(fds[1]);

	for (;;) {
		struct pollfd pfd = { .fd = fds[0], .events = POLLIN };
		long left = deadline - mono_ms();
		ssize_t n;
		int ret;

		if (left <= 0) {
			r->timed_out = true;
			kill(pid, SIGKILL);
			break;
		}
		ret = poll(&pfd, 1, left > 1000000 ? 1000000 : (int)left);
		if (ret < 0 && errno == EINTR)
			continue;
		if (ret < 0) {
			saved = errno;
			kill(pid, SIGKILL);
			errno = saved;
			err_sys(e, EXIT_CTRUN, "libslurm: poll");
			goto fail;
		}
		if (ret == 0)
			continue;
		if (r->len == cap) {
			char *nb;

			if (cap >= MAX_REPLY) {
				kill(pid, SIGKILL); /* more than the child may send */
				break;
			}
			cap = cap ? cap * 2 : 65536;
			if (cap > MAX_REPLY)
				cap = MAX_REPLY;
			nb = realloc(r->buf, cap);
			if (nb == NULL) {
				kill(pid, SIGKILL);
				errno = ENOMEM;
				err_set(e, EXIT_CTRUN, "libslurm: out of memory");
				goto fail;
			}
			r->buf = nb;
		}
		n = read(fds[0], r->buf + r->len, cap - r->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		r->len += (size_t)n;
	}
	close(fds[0]);
	do
		w = waitpid(pid, &r->status, 0);
	while (w < 0 && errno == EINTR);
	r->waited = w == pid;
	return 0;

fail:
	saved = errno;
	close(fds[0]);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	free(r->buf);
	r->buf = NULL;
	errno = saved;
	return -1;
}

/* The end record, or 0 if the reply has none (the child died). */
static char end_of(const struct reply *r)
{
	if (r->len < 2 || r->buf[r->len - 1] != '\0')
		return 0;
	/* The last record starts after the previous NUL. */
	size_t i = r->len - 1;

	while (i > 0 && r->buf[i - 1] != '\0')
		i--;
	if (r->len - i != 2)
		return 0;
	return strchr("KRNTBO", r->buf[i]) != NULL ? r->buf[i] : 0;
}

/* The library the child loaded: its file name, or its path when full. */
static const char *loaded_file(const struct reply *r, bool full)
{
	const char *p, *slash;

	if (r->len <= 2 || r->buf[0] != 'L' || memchr(r->buf, '\0', r->len) == NULL)
		return "libslurm";
	p = r->buf + 1;
	slash = strrchr(p, '/');
	return full || slash == NULL ? p : slash + 1;
}

static const char *loaded_name(const struct reply *r)
{
	return loaded_file(r, false);
}

static void quote(char *buf, size_t size, const char *s)
{
	size_t len = 0, i;

	for (i = 0; s[i] != '\0' && i < 60 && len + 5 < size; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\')
			len += (size_t)snprintf(buf + len, size - len, "\\x%02x", c);
		else
			buf[len++] = (char)c;
	}
	buf[len] = '\0';
	if (s[i] != '\0' && len + 4 <= size)
		memcpy(buf + len, "...", 4);
}

/* Sets e (and errno) for a child that ended without 'K'. */
static int child_failed(const struct reply *r, const char *s, char end, struct err *e)
{
	char q[256];
	int err = EIO;

	quote(q, sizeof(q), s != NULL ? s : "");
	switch (end) {
	case 'N': {
		struct slurmlib_choice c;

		slurmlib_find(environ, &c);
		err = ENOENT;
		err_set(e, EXIT_CTRUN, "libslurm: no loadable libslurm (tried %s%s%s)", c.path,
			c.path[0] != '\0' && !c.only ? ", then " : "",
			c.only ? "" : "libslurm.so.N from the dynamic linker");
		break;
	}
	case 'R':
		err = EINVAL;
		err_set(e, EXIT_CTRUN, "hostlist \"%s\": %s refused it", q, loaded_name(r));
		break;
	case 'T':
		err = EINVAL;
		err_set(e, EXIT_CTRUN, "hostlist \"%s\": expands to more than %lu hosts", q,
			HOSTLIST_MAX_HOSTS);
		break;
	case 'B':
		err = EINVAL;
		err_set(e, EXIT_CTRUN, "hostlist \"%s\": expands to more than %lu MiB of "
			"host names", q, HOSTLIST_MAX_BYTES >> 20);
		break;
	case 'O':
		err = EINVAL;
		err_set(e, EXIT_CTRUN, "hostlist \"%s\": more than 2^31 hosts (%s's count "
			"wrapped around)", q, loaded_name(r));
		break;
	default:
		if (r->timed_out) {
			err = ETIMEDOUT;
			err_set(e, EXIT_CTRUN, "hostlist \"%s\": %s gave no answer in %ld ms", q,
				loaded_name(r), timeout_ms());
		} else if (r->waited && WIFSIGNALED(r->status)) {
			err_set(e, EXIT_CTRUN, "hostlist \"%s\": %s crashed (signal %d)", q,
				loaded_name(r), WTERMSIG(r->status));
		} else if (r->waited && WIFEXITED(r->status)) {
			err_set(e, EXIT_CTRUN, "hostlist \"%s\": %s exited with status %d", q,
				loaded_name(r), WEXITSTATUS(r->status));
		} else {
			err_set(e, EXIT_CTRUN, "hostlist \"%s\": the libslurm helper gave an "
				"incomplete answer", q);
		}
	}
	errno = err;
	return -1;
}

/* The last answer of slurmlib_available, for the choice it was about. */
static struct slurmlib_choice cached_choice;
static int cached = -1;
static char cached_file[PATH_MAX];

/* What an answer of the child says of the library it was to load: an end
 * record but 'N' means loaded, 'N' not; none (it died) says nothing. */
static void remember(const struct slurmlib_choice *c, const struct reply *r, char end)
{
	if (end == 0)
		return;
	cached_choice = *c;
	cached = end != 'N';
	snprintf(cached_file, sizeof(cached_file), "%s", cached ? loaded_file(r, true) : "");
}

bool slurmlib_absent(void)
{
	struct slurmlib_choice c;

	slurmlib_find(environ, &c);
	return cached == 0 && strcmp(cached_choice.path, c.path) == 0 && cached_choice.only == c.only;
}

bool slurmlib_available(void)
{
	struct slurmlib_choice c;
	struct reply r;
	struct err e = { 0 };

	slurmlib_find(environ, &c);
	if (cached >= 0 && strcmp(cached_choice.path, c.path) == 0 && cached_choice.only == c.only)
		return cached == 1;
	if (run_child(NULL, &r, &e) < 0)
		return false; /* not cached: fork may work next time */
	remember(&c, &r, end_of(&r) == 'K' ? 'K' : 'N');
	free(r.buf);
	return cached == 1;
}

void slurmlib_describe(char *buf, size_t size)
{
	const struct slurmlib_choice *c = &cached_choice;

	if (!slurmlib_available())
		snprintf(buf, size, "no loadable libslurm (%s%s%s)", c->why,
			 c->path[0] != '\0' ? ": " : "", c->path);
	else if (c->path[0] == '\0' || realpath_eq(cached_file, c->path))
		snprintf(buf, size, "%s (%s)", cached_file, c->why);
	else
		snprintf(buf, size, "%s (the dynamic linker's: %s, %s, did not load)", cached_file,
			 c->path, c->why);
}

/* libslurm exit()s on more than SLURM_MAX_RANGES ranges in a bracket.  Its
 * bracket is always the text after some '[' up to a ']' and the ranges it
 * counts before failing hold no ']', so counting commas after each '['
 * up to the next ']' finds every such input. */
static bool too_many_ranges(const char *s)
{
	unsigned long commas = 0;
	bool inside = false;

	for (; *s != '\0'; s++) {
		if (*s == '[') {
			inside = true;
			commas = 0;
		} else if (*s == ']') {
			inside = false;
		} else if (*s == ',' && inside && ++commas >= SLURM_MAX_RANGES) {
			return true;
		}
	}
	return false;
}

int slurmlib_hostlist_expand(const char *s, struct strv *out, struct err *e)
{
	struct strv hosts = { 0 };
	struct slurmlib_choice c;
	struct reply r;
	char q[256], end;
	size_t i;

	if (s == NULL) {
		errno = EINVAL;
		return err_set(e, EXIT_CTRUN, "hostlist: no input");
	}
	if (too_many_ranges(s)) {
		quote(q, sizeof(q), s);
		errno = EINVAL;
		return err_set(e, EXIT_CTRUN, "hostlist \"%s\": a bracket has more than %lu "
			       "ranges", q, SLURM_MAX_RANGES);
	}
	slurmlib_find(environ, &c);
	if (run_child(s, &r, e) < 0)
		return -1;
	end = end_of(&r);
	remember(&c, &r, end);
	if (end != 'K') {
		int err;

		child_failed(&r, s, end, e);
		err = errno;
		free(r.buf);
		errno = err;
		return -1;
	}
	for (i = 0; i < r.len;) {
		size_t n = strlen(r.buf + i); /* the reply ends in NUL */

		if (r.buf[i] == 'H' && strv_pushn(&hosts, r.buf + i + 1, n - 1) < 0) {
			strv_free(&hosts);
			free(r.buf);
			errno = ENOMEM;
			return err_set(e, EXIT_CTRUN, "libslurm: out of memory");
		}
		i += n + 1;
	}
	free(r.buf);
	if (out->n == 0) {
		strv_free(out);
		*out = hosts;
	} else {
		int ret = strv_extend(out, strv_argv(&hosts));

		strv_free(&hosts);
		if (ret < 0) {
			errno = ENOMEM;
			return err_set(e, EXIT_CTRUN, "libslurm: out of memory");
		}
	}
	return 0;
}
