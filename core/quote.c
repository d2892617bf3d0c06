/* quote.c - POSIX shell quoting (see quote.h). */
#include "quote.h"

#include <stdio.h>
#include <string.h>

void shell_quote(FILE *f, const char *s)
{
	if (*s != '\0' && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				    "0123456789_-+./:=,@%") == strlen(s)) {
		fputs(s, f);
		return;
	}
	/* Single quotes keep everything literal, newlines included; a single
	 * quote itself becomes '\'' . */
	fputc('\'', f);
	for (; *s != '\0'; s++) {
		if (*s == '\'')
			fputs("'\\''", f);
		else
			fputc(*s, f);
	}
	fputc('\'', f);
}

void shell_quote_argv(FILE *f, char *const *argv)
{
	for (size_t i = 0; argv[i] != NULL; i++) {
		if (i > 0)
			fputc(' ', f);
		shell_quote(f, argv[i]);
	}
}

const char *char_name(char c, char *buf, size_t size)
{
	if (c == '\0')
		return "end of input";
	if ((unsigned char)c < 0x20 || (unsigned char)c >= 0x7f || c == '\'')
		snprintf(buf, size, "character 0x%02x", (unsigned char)c);
	else
		snprintf(buf, size, "character '%c'", c);
	return buf;
}
