/* spmounts.c - pyxis's --container-mounts entries as ctrun's --mount
 * values (spmounts.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "spmounts.h"

/* ctrun's --mount escapes: '\' is written '\\' (a ':' cannot occur: it
 * separates pyxis's fields). */
static int push_escaped(struct strv *out, const char *const *parts, size_t n)
{
	size_t len = 0;
	char *s, *p;
	int rc;

	for (size_t i = 0; i < n; i++)
		len += 2 * strlen(parts[i]) + 1;
	p = s = malloc(len + 1);
	if (s == NULL)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			*p++ = ':';
		for (const char *q = parts[i]; *q != '\0'; q++) {
			if (*q == '\\' && i < 2)
				*p++ = '\\';
			*p++ = *q;
		}
	}
	*p = '\0';
	rc = strv_find(out, s) >= 0 ? 0 : strv_push(out, s);
	free(s);
	return rc;
}

/* pyxis's mount flags (joined with '+') that ctrun can honour: ctrun's
 * binds are recursive and private, nosuid and nodev unless asked. */
static int mount_flags(const char *entry, char *flags, char *out, size_t size, struct err *e)
{
	bool ro = false, rw = false, suid = false, dev = false, unbindable = false;
	char *f;

	while ((f = strsep(&flags, "+")) != NULL) {
		if (strcmp(f, "ro") == 0)
			ro = true;
		else if (strcmp(f, "rw") == 0)
			rw = true;
		else if (strcmp(f, "suid") == 0)
			suid = true;
		else if (strcmp(f, "dev") == 0)
			dev = true;
		else if (strcmp(f, "unbindable") == 0)
			unbindable = true;
		else if (strcmp(f, "rbind") != 0 && strcmp(f, "rprivate") != 0 &&
			 strcmp(f, "private") != 0 && strcmp(f, "nosuid") != 0 &&
			 strcmp(f, "nodev") != 0)
			return err_set(e, EXIT_USAGE, "--container-mounts: flag '%s' of %s is not "
				       "supported by ctrun (it takes ro, rw, rbind, rprivate, private, "
				       "nosuid, nodev, suid, dev, unbindable)", f, entry);
	}
	if (ro && rw)
		return err_set(e, EXIT_USAGE, "--container-mounts: %s is both ro and rw", entry);
	snprintf(out, size, "%s%s%s%s", ro ? "ro" : "rw", suid ? ",suid" : "", dev ? ",dev" : "",
		 unbindable ? ",unbindable" : "");
	return 0;
}

/* tmpfs:DST[:FLAGS] and umount:DST (ctrun's --mount forms of the same
 * names, mounts.h): the flags, joined with '+', are the tmpfs's options,
 * checked where the mount is made. */
static int special_mount(struct strv *mounts, const char *entry, const char *src, char *dst,
			 char *flags, struct err *e)
{
	if (dst[0] != '/')
		return err_set(e, EXIT_USAGE, "--container-mounts: %s: %s needs an absolute "
			       "target in the container (%s:/PATH)", entry, src, src);
	if (flags != NULL && src[0] == 'u')
		return err_set(e, EXIT_USAGE, "--container-mounts: %s: umount takes no flags",
			       entry);
	for (char *f = flags; f != NULL && *f != '\0'; f++)
		if (*f == '+')
			*f = ',';
	if (push_escaped(mounts, (const char *const[]){ src, dst, flags }, flags ? 3 : 2) <
	    0)
		return err_sys(e, EXIT_CTRUN, "--container-mounts");
	return 0;
}

int sp_mounts_parse(const char *entry, struct strv *mounts, struct strv *sources, struct err *e)
{
	char *dup = strdup(entry), *rest = dup, *src, *dst, *flags = NULL, opts[32] = "";
	int rv = -1;

	if (dup == NULL)
		return err_sys(e, EXIT_CTRUN, "--container-mounts");
	src = strsep(&rest, ":");
	if (*src == '\0')
		goto bad;
	dst = src;
	if (rest != NULL) {
		dst = strsep(&rest, ":");
		if (*dst == '\0')
			goto bad;
		flags = rest != NULL && *rest != '\0' ? rest : NULL;
	}
	if (strcmp(src, "tmpfs") == 0 || strcmp(src, "umount") == 0) {
		rv = special_mount(mounts, entry, src, dst, flags, e);
		goto out;
	}
	if (strspn(src, "./") == 0) {
		err_set(e, EXIT_USAGE, "--container-mounts: %s: mount source must be a relative "
			"path or an absolute path", entry);
		goto out;
	}
	if (strspn(dst, "./") == 0) {
		err_set(e, EXIT_USAGE, "--container-mounts: %s: mount target must be a relative "
			"path or an absolute path", entry);
		goto out;
	}
	if (dst[0] != '/') {
		err_set(e, EXIT_USAGE, "--container-mounts: %s: ctrun takes the target as an "
			"absolute path in the container", entry);
		goto out;
	}
	if (flags != NULL && mount_flags(entry, flags, opts, sizeof(opts), e) < 0)
		goto out;
	if (push_escaped(mounts, (const char *const[]){ src, dst, opts }, opts[0] ? 3 : 2) <
		    0 ||
	    (strv_find(sources, src) < 0 && strv_push(sources, src) < 0)) {
		err_sys(e, EXIT_CTRUN, "--container-mounts");
		goto out;
	}
	rv = 0;
	goto out;
bad:
	err_set(e, EXIT_USAGE, "--container-mounts: invalid format: %s", entry);
out:
	free(dup);
	return rv;
}

int sp_mounts_bind(struct strv *argv, const char *path, bool ro)
{
	struct strv one = { 0 };
	int rc = push_escaped(&one, (const char *const[]){ path, path, "ro" }, ro ? 3 : 2);

	rc |= strv_push(argv, "--mount");
	rc |= one.n == 1 ? strv_push(argv, one.v[0]) : -1;
	strv_free(&one);
	return rc;
}
