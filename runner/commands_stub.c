/* commands_stub.c - placeholders for subcommands still being built: weak
 * definitions that a subcommand's own file overrides.  (ctrun links its
 * objects directly, not through the archive, so the strong ones win.) */
#include "commands.h"

#define STUB(name, word)                                                               \
	__attribute__((weak)) int name(struct options *o, struct err *e)               \
	{                                                                              \
		(void)o;                                                               \
		return err_set(e, EXIT_USAGE, "'%s' is not available in this build", word); \
	}

STUB(cmd_shell, "shell")
STUB(cmd_check, "check")
STUB(cmd_bench, "bench")
STUB(cmd_cache, "cache")
STUB(cmd_hooks, "hooks")
STUB(cmd_worker, "__worker")
