/* spenv.c - the container's changes to a task's environment (spenv.h). */
#include <string.h>

#include "spenv.h"

/* The entry of v whose key is the key of kv (up to its '='), or NULL. */
static const char *find_key(char *const *v, const char *kv)
{
	size_t klen = strcspn(kv, "=");

	for (; v != NULL && *v != NULL; v++)
		if (strncmp(*v, kv, klen) == 0 && ((*v)[klen] == '=' || (*v)[klen] == '\0'))
			return *v;
	return NULL;
}

int sp_env_diff(char *const *given, char *const *held, struct strv *set, struct strv *unset)
{
	for (char *const *h = held; h != NULL && *h != NULL; h++) {
		const char *g = find_key(given, *h);

		if (strchr(*h, '=') == NULL || (g != NULL && strcmp(g, *h) == 0))
			continue;
		if (strv_push(set, *h) < 0)
			return -1;
	}
	for (char *const *g = given; g != NULL && *g != NULL; g++) {
		size_t klen = strcspn(*g, "=");

		/* ctrun's own settings: a ctrun the task runs reads them. */
		if ((*g)[klen] != '=' || find_key(held, *g) != NULL || strncmp(*g, "CTRUN_", 6) == 0)
			continue;
		if (strv_pushn(unset, *g, klen) < 0)
			return -1;
	}
	return 0;
}

int sp_env_lines(const char *text, struct strv *out)
{
	const char *p = text;

	while (*p != '\0') {
		size_t len = strcspn(p, "\n");

		if (len == 0)
			break; /* the end of the first block */
		if (memchr(p, '=', len) != NULL && p[0] != '=' && strv_pushn(out, p, len) < 0)
			return -1;
		p += len;
		if (*p == '\n')
			p++;
	}
	return 0;
}
