/* backend.c - the table of backends and what every backend shares (see
 * backend.h).  A new backend is one file with its backend_ops and one line
 * here. */
#include "backend.h"

#include <string.h>

const struct backend_ops *const backend_table[] = {
	&backend_nccl,
	&backend_socket,
	NULL,
};

const struct backend_ops *backend_find(const char *name)
{
	for (size_t i = 0; backend_table[i] != NULL; i++)
		if (strcmp(backend_table[i]->name, name) == 0)
			return backend_table[i];
	return NULL;
}

int backend_open(struct backend *b, const struct backend_ops *ops, struct rdzv *r,
		 const struct rank_row *row, struct err *e)
{
	b->ops = ops;
	b->impl = NULL;
	return ops->open(b, r, row, e);
}

void backend_close(struct backend *b)
{
	if (b->ops != NULL && b->impl != NULL)
		b->ops->close(b);
	b->impl = NULL;
}
