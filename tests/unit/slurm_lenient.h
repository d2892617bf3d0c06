/* slurm_lenient.h - the inputs libslurm 22.05 accepts (or mangles) that
 * the builtin hostlist parser refuses on purpose, and the suffixes it
 * refuses that the builtin takes as newer releases do (see hostlist.h).  Shared
 * by the differential unit test and the fuzz target, so both judge a
 * disagreement by the same rules. */
#ifndef CTRUN_SLURM_LENIENT_H
#define CTRUN_SLURM_LENIENT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

/* Where libslurm 22.05 answers but the builtin refuses on purpose
 * (hostlist.h): brackets that do not pair up flat, control characters,
 * anything but "N" or "N-M" between the commas of a bracket, three or more
 * brackets in one name (libslurm silently drops the names whose inner
 * brackets are bad), or a number libslurm cannot hold (a bracket number, or
 * the trailing digits of a name without brackets, of ULONG_MAX or more). */
static inline bool libslurm_lenient(const char *s)
{
	size_t groups = 0;
	bool inside = false;

	for (size_t i = 0; s[i] != '\0'; i++) {
		unsigned char c = (unsigned char)s[i];

		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return true;
		if (c == '[') {
			if (inside || ++groups >= 3)
				return true;
			inside = true;
		} else if (c == ']') {
			if (!inside)
				return true;
			inside = false;
		} else if (!inside && (c == ',' || c == ' ' || c == '\t')) {
			groups = 0;
		}
		if (c >= '0' && c <= '9' && (i == 0 || s[i - 1] < '0' || s[i - 1] > '9')) {
			/* A number: too large, where libslurm reads it? */
			unsigned long v = 0;
			bool big = false;
			size_t j = i;

			for (; s[j] >= '0' && s[j] <= '9'; j++) {
				if (v > (ULONG_MAX - (unsigned)(s[j] - '0')) / 10)
					big = true;
				else
					v = v * 10 + (unsigned)(s[j] - '0');
			}
			if ((big || v == ULONG_MAX) &&
			    (inside || s[j] == '\0' || s[j] == ',' || s[j] == ' ' || s[j] == '\t'))
				return true;
		}
		if (inside && c != '[') {
			/* Each element must be N or N-M. */
			bool start = s[i - 1] == '[' || s[i - 1] == ',';

			if (c != ',' && c != ']' && c != '-' && (c < '0' || c > '9'))
				return true;
			if (start && (c == '-' || c == ',' || c == ']'))
				return true;
			if (c == '-' && (s[i + 1] < '0' || s[i + 1] > '9'))
				return true;
			if (c == '-') {
				size_t j = i + 1;

				while (s[j] >= '0' && s[j] <= '9')
					j++;
				if (s[j] == '-')
					return true;
			}
		}
	}
	return inside;
}

/* Whether some expression of s has text after its last ']' (Slurm 23.11
 * and later take it as a suffix of every name; earlier releases refuse). */
static inline bool hostlist_has_suffix(const char *s)
{
	bool after = false;

	for (size_t i = 0; s[i] != '\0'; i++) {
		char c = s[i];

		if (c == ']')
			after = true;
		else if (c == '[' || c == ',' || c == ' ' || c == '\t' || c == '\n')
			after = false;
		else if (after)
			return true;
	}
	return false;
}

#endif
