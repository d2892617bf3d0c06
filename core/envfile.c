/* envfile.c - KEY=VALUE lines of an image's /etc/environment (envfile.h). */
#include "envfile.h"

#include <string.h>

int envfile_parse(char *text, struct strv *env)
{
	char *line, *save = NULL;

	for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		char *eq, *v;
		size_t vl;

		line += strspn(line, " \t");
		if (*line == '#' || *line == '\0')
			continue;
		if (strncmp(line, "export ", 7) == 0)
			line += 7;
		eq = strchr(line, '=');
		if (eq == NULL || eq == line || strspn(line, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklm"
					"nopqrstuvwxyz0123456789_") != (size_t)(eq - line) ||
		    (line[0] >= '0' && line[0] <= '9'))
			continue;
		*eq = '\0';
		v = eq + 1;
		vl = strlen(v);
		while (vl > 0 && (v[vl - 1] == ' ' || v[vl - 1] == '\t' || v[vl - 1] == '\r'))
			v[--vl] = '\0';
		if (vl >= 2 && (v[0] == '"' || v[0] == '\'') && (v[vl - 1] == '"' || v[vl - 1] == '\'')) {
			v[vl - 1] = '\0';
			v++;
		}
		if (strv_setenv(env, line, v, 1) < 0)
			return -1;
	}
	return 0;
}
