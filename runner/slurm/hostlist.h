/* hostlist.h - Slurm hostlist expansion ("n[001-004],gpu[1-2]x[3,5]").
 *
 * hostlist_expand is the builtin expander: pure, no I/O, no globals, so unit
 * tests and the fuzzer call it directly.  On everything it accepts it gives
 * exactly what libslurm gives (same hosts, same order, duplicates kept):
 * 22.05 for lists without a suffix, 23.11 and later for all;
 * tests/unit/runner/slurm/test_hostlist_libslurm.c checks that against
 * every libslurm it finds.  It is stricter than libslurm where libslurm
 * silently invents names:
 *
 *   input             libslurm 22.05        builtin
 *   n[1-              "n]"                  missing ']'
 *   a]b, a[1[2]       "a]b", "a[12"         stray / nested bracket
 *   n[1, 3] n[+1]     "n1","n03" / "n01"    invalid character in range
 *   n[1-]  n[1a-3]    "n1" / "n01".."n03"   missing upper bound / bad char
 *   a[x]b[1]c[1]      0 hosts, no error     invalid character in range
 *   "a\nb"            one host "a\nb"       control character
 *   n99999999999999999999  "n18446744073709551615"   number too large
 *
 * Everything libslurm refuses, the builtin refuses too (n[], n[3-1], n[a-b],
 * n[[1-2]], a range of more than 65536 hosts), with one exception: text
 * after the last bracket.  Slurm 23.11 added it (n[1-2]-ib is n1-ib,n2-ib;
 * n[1-2]n3 is n1n3,n2n3: the text ends every name); 22.05 refuses it, and
 * the builtin takes the newest Slurm's side.  Limits are Slurm's: MAX_RANGE
 * (65536 hosts per range), MAX_PREFIX_CNT (65536 names from the brackets
 * before the last one), MAX_RANGES (262144 ranges in one bracket); plus
 * ctrun's own caps on the whole result (slurmlib.h).  An empty or blank
 * string is 0 hosts, not an error (as libslurm): callers that need a node
 * must check out->n.
 *
 * Several bracket groups expand as libslurm does: the last group varies
 * fastest, then the first, the second, ..., the second-to-last slowest;
 * a[1-2]b[1-2]c[1-2] = a1b1c1 a1b1c2 a2b1c1 a2b1c2 a1b2c1 ...  For two
 * groups that is the plain cartesian product: rack[1-2]n[1-2] = rack1n1
 * rack1n2 rack2n1 rack2n2. */
#ifndef CTRUN_HOSTLIST_H
#define CTRUN_HOSTLIST_H

#include <stddef.h>

#include "err.h"
#include "strv.h"

/* Expands s into out, which must be empty ({0}) on entry.  Returns 0, or -1
 * with err_set(e, EXIT_CTRUN, ...) naming the input and the byte offset of
 * the problem; out is then still empty. */
int hostlist_expand(const char *s, struct strv *out, struct err *e);

/* Accepts exactly what hostlist_expand accepts, so a malformed list fails
 * the same way everywhere; the names then come from the installed libslurm
 * when it can be loaded (see slurmlib.h) and the environment does not say
 * CTRUN_NO_LIBSLURM=1 (identical on 22.05, and that release's own answer
 * on others), else from the builtin.  If this libslurm refuses the list,
 * so does ctrun; if its helper crashes or hangs, the builtin's names are
 * used.  Same contract as hostlist_expand. */
int hostlist_expand_any(const char *s, struct strv *out, struct err *e);

/* For -v: where hostlist_expand_any takes the names from, and why. */
void hostlist_describe(char *buf, size_t size);

#endif
