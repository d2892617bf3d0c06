/* ref.c - image references in docker's and enroot's forms (see ref.h).
 * The grammar is distribution's (reference/regexp.go): a host of DNS
 * labels or a bracketed IPv6 address with an optional port; path
 * components of lowercase letters and digits joined by '.', '_', "__" or
 * dashes; a tag of [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}; a name of at most
 * 255 characters, host included. */
#include "ref.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "util.h"

#define PREFIX "docker://"
#define NAME_MAX_LEN 255 /* distribution's NameTotalLengthMax */
#define TAG_MAX_LEN 128
#define HOW "write docker://[HOST[:PORT]/]REPO[:TAG][@sha256:HEX] or [USER@]HOST#REPO[:TAG]"

#define LOWER_DIGITS "abcdefghijklmnopqrstuvwxyz0123456789"
#define ALNUM LOWER_DIGITS "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

static int bad(struct err *e, const char *s, const char *why, const char *hint)
{
	return err_set(e, EXIT_USAGE, "image reference '%.256s': %s (%s)", s, why, hint);
}

bool ref_is_reference(const char *s)
{
	if (s[0] == '/' || s[0] == '.')
		return false;
	return strncmp(s, PREFIX, strlen(PREFIX)) == 0 || strchr(s, '#') != NULL;
}

/* docker.io and the names Docker Hub also answers to (docker and enroot
 * read these as docker.io). */
bool ref_is_docker_hub(const char *host, size_t len)
{
	static const char *const names[] = { "docker.io", "index.docker.io",
					     "registry-1.docker.io" };

	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++)
		if (len == strlen(names[i]) && strncasecmp(host, names[i], len) == 0)
			return true;
	return false;
}

/* Does the text after an '@' read as a digest (ALGORITHM:HEX, or anything
 * starting sha256:) rather than the rest of a reference after USER@? */
static bool looks_like_digest(const char *s)
{
	size_t alg = strspn(s, LOWER_DIGITS "+._-");

	if (strncmp(s, "sha256:", 7) == 0)
		return true;
	return alg > 0 && s[alg] == ':' && s[alg + 1] != '\0' &&
	       strspn(s + alg + 1, "0123456789abcdefABCDEF") == strlen(s + alg + 1);
}

/* DNS labels joined by '.' (letters of either case), or [IPv6]; then an
 * optional :PORT in 1..65535. */
static int check_host(const char *s, const char *host, struct err *e)
{
	const char *p = host, *port = NULL;

	if (*p == '[') {
		size_t n = strspn(p + 1, "0123456789abcdefABCDEF:");

		if (n == 0 || p[1 + n] != ']')
			return bad(e, s, "the host is not a name or a [IPv6] address", HOW);
		p += n + 2;
	} else {
		for (;;) {
			size_t n = strspn(p, ALNUM "-");

			if (n == 0 || *p == '-' || p[n - 1] == '-')
				return bad(e, s, "the host is not a DNS name", HOW);
			p += n;
			if (*p != '.')
				break;
			p++;
		}
	}
	if (*p == ':') {
		long v;

		port = p + 1;
		if (strspn(port, "0123456789") != strlen(port) || parse_long(port, 1, 65535, &v) < 0)
			return bad(e, s, "the port is not a number from 1 to 65535", HOW);
		p += strlen(p);
	}
	if (*p != '\0')
		return bad(e, s, "the host is not a DNS name", HOW);
	return 0;
}

/* One path component: [a-z0-9]+ joined by '.', '_', "__" or any number of '-'. */
static bool component_ok(const char *c, size_t len)
{
	size_t i = 0;

	while (i < len) {
		size_t n = strspn(c + i, LOWER_DIGITS), sep;

		if (n == 0 || i + n > len)
			return false;
		i += n;
		if (i == len)
			return true;
		sep = strspn(c + i, "._-");
		if (i + sep >= len)
			return false; /* a trailing separator */
		if (!(sep == 1 || (sep == 2 && c[i] == '_' && c[i + 1] == '_') ||
		      strspn(c + i, "-") == sep))
			return false;
		i += sep;
	}
	return false;
}

static int check_repo(const char *s, const char *repo, struct err *e)
{
	const char *c = repo;

	if (*repo == '\0')
		return bad(e, s, "the repository name is empty", HOW);
	if (strspn(repo, LOWER_DIGITS "._-/") != strlen(repo)) {
		for (const char *p = repo; *p != '\0'; p++)
			if (*p >= 'A' && *p <= 'Z')
				return bad(e, s, "repository names are lowercase",
					   "write docker://HOST/REPO:TAG");
		return bad(e, s, "a repository name is lowercase letters, digits and . _ - /", HOW);
	}
	for (;;) {
		size_t n = strcspn(c, "/");

		if (!component_ok(c, n))
			return bad(e, s, n == 0 ? "the repository name has an empty component"
						: "a repository component is lowercase letters and "
						  "digits joined by '.', '_', '__' or dashes", HOW);
		if (c[n] == '\0')
			return 0;
		c += n + 1;
	}
}

static int check_tag(const char *s, const char *tag, struct err *e)
{
	size_t n = strlen(tag);

	if (n == 0)
		return bad(e, s, "the tag after ':' is empty", HOW);
	if (n > TAG_MAX_LEN || strspn(tag, ALNUM "_.-") != n || tag[0] == '.' || tag[0] == '-')
		return bad(e, s, "a tag is at most 128 letters, digits, '_', '.' and '-', not "
			   "starting with '.' or '-'", HOW);
	return 0;
}

static int check_digest(const char *s, const char *digest, struct err *e)
{
	if (strncmp(digest, "sha256:", 7) != 0 || strlen(digest + 7) != 64 ||
	    strspn(digest + 7, "0123456789abcdef") != 64)
		return bad(e, s, "a digest is sha256: and 64 lowercase hex digits",
			   "write docker://HOST/REPO@sha256:HEX");
	return 0;
}

/* Copies len bytes of src into dst[size] as a string; -1 if they do not fit. */
static int copy(char *dst, size_t size, const char *src, size_t len)
{
	if (len >= size)
		return -1;
	memcpy(dst, src, len);
	dst[len] = '\0';
	return 0;
}

int ref_parse(const char *s, struct image_ref *r, struct err *e)
{
	const char *p = s, *at, *hash, *slash, *colon;
	char name[1024];
	size_t n;

	memset(r, 0, sizeof(*r));
	if (strncmp(p, PREFIX, strlen(PREFIX)) == 0)
		p += strlen(PREFIX);
	if (*p == '\0')
		return bad(e, s, "it names no image", HOW);
	if (strlen(p) >= sizeof(name))
		return bad(e, s, "it is too long", HOW);

	/* enroot's USER@ (the credentials entry): an '@' before any '/' or '#'
	 * that does not start a digest. */
	at = strchr(p, '@');
	if (at != NULL && at < p + strcspn(p, "/#") && !looks_like_digest(at + 1)) {
		n = (size_t)(at - p);
		if (n == 0 || copy(r->user, sizeof(r->user), p, n) < 0)
			return bad(e, s, "USER@ is empty or too long", HOW);
		for (const char *u = r->user; *u != '\0'; u++)
			if (*u <= ' ' || *u == 0x7f)
				return bad(e, s, "USER@ holds a blank or control character", HOW);
		if (strchr(r->user, ':') != NULL)
			return bad(e, s, "USER@ names a login, not a password",
				   "write docker://USER@HOST#REPO; the password goes in the credentials file");
		p = at + 1;
	}

	/* @DIGEST, last. */
	n = strlen(p);
	at = strrchr(p, '@');
	if (at != NULL) {
		if (check_digest(s, at + 1, e) < 0)
			return -1;
		copy(r->digest, sizeof(r->digest), at + 1, strlen(at + 1)); /* 71 bytes */
		n = (size_t)(at - p);
		if (memchr(p, '@', n) != NULL)
			return bad(e, s, "it has more than one '@'", HOW);
	}
	copy(name, sizeof(name), p, n);

	/* The host: before '#' (enroot), or a first component with a '.' or a
	 * ':', or "localhost" (docker); else Docker Hub. */
	hash = strchr(name, '#');
	slash = strchr(name, '/');
	if (hash != NULL) {
		n = (size_t)(hash - name);
		if (n == 0 || strchr(hash + 1, '#') != NULL)
			return bad(e, s, n == 0 ? "the host before '#' is empty" : "it has two '#'",
				   HOW);
		p = hash + 1;
	} else if (slash != NULL &&
		   (memchr(name, '.', (size_t)(slash - name)) != NULL ||
		    memchr(name, ':', (size_t)(slash - name)) != NULL ||
		    strncmp(name, "localhost/", 10) == 0)) {
		n = (size_t)(slash - name);
		p = slash + 1;
	} else {
		n = 0;
		p = name;
	}
	if (n == 0 || ref_is_docker_hub(name, n))
		copy(r->host, sizeof(r->host), "docker.io", 9);
	else if (copy(r->host, sizeof(r->host), name, n) < 0)
		return bad(e, s, "the host is too long", HOW);
	else if (check_host(s, r->host, e) < 0)
		return -1;

	/* REPO[:TAG]: a ':' after the last '/'. */
	slash = strrchr(p, '/');
	colon = strrchr(slash != NULL ? slash : p, ':');
	n = colon != NULL ? (size_t)(colon - p) : strlen(p);
	if (colon != NULL) {
		if (check_tag(s, colon + 1, e) < 0)
			return -1;
		copy(r->tag, sizeof(r->tag), colon + 1, strlen(colon + 1)); /* <= 128 bytes */
	}
	if (copy(r->repo, sizeof(r->repo), p, n) < 0)
		return bad(e, s, "the name is longer than 255 characters", HOW);
	if (check_repo(s, r->repo, e) < 0)
		return -1;
	if (strcmp(r->host, "docker.io") == 0 && strchr(r->repo, '/') == NULL) {
		/* docker refuses a bare 64-hex name: it is an image ID. */
		if (strlen(r->repo) == 64 && strspn(r->repo, "0123456789abcdef") == 64)
			return bad(e, s, "a 64-hex-digit name is an image ID, not a reference", HOW);
		if (xsnprintf(name, sizeof(name), "library/%s", r->repo) < 0 ||
		    copy(r->repo, sizeof(r->repo), name, strlen(name)) < 0)
			return bad(e, s, "the name is longer than 255 characters", HOW);
	}
	if (strlen(r->host) + 1 + strlen(r->repo) > NAME_MAX_LEN)
		return bad(e, s, "the name is longer than 255 characters", HOW);
	if (r->tag[0] == '\0' && r->digest[0] == '\0')
		copy(r->tag, sizeof(r->tag), "latest", 6);
	return 0;
}

const char *ref_api_host(const struct image_ref *r)
{
	return ref_is_docker_hub(r->host, strlen(r->host)) ? "registry-1.docker.io" : r->host;
}

int ref_format(const struct image_ref *r, char *buf, size_t size)
{
	const char *h = r->host;
	/* A host that docker's rule would not read as one (a bare name from
	 * enroot's HOST#REPO) keeps the '#', so the text parses back the same. */
	bool hash = strpbrk(h, ".:") == NULL && strcmp(h, "localhost") != 0;

	return xsnprintf(buf, size, "%s%c%s%s%s%s%s", h, hash ? '#' : '/', r->repo,
			 r->tag[0] != '\0' ? ":" : "", r->tag, r->digest[0] != '\0' ? "@" : "",
			 r->digest) < 0 ? -1 : 0;
}
