/* cdiname.c - CDI device names (cdiname.h): the rules of the CDI
 * project's pkg/parser, byte for byte. */
#include "cdiname.h"

#include <stdbool.h>
#include <string.h>

#include "util.h"

static bool letter(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

static bool alnum(char c)
{
	return letter(c) || (c >= '0' && c <= '9');
}

/* first(s[0]), last(s[n-1]), between(s[1..n-2]). */
static const char *check(const char *s, bool (*first)(char), const char *inner)
{
	size_t n = strlen(s);

	if (n == 0)
		return "it is empty";
	if (!first(s[0]))
		return first == letter ? "it must start with a letter"
				       : "it must start with a letter or a digit";
	if (n == 1)
		return NULL;
	for (size_t i = 1; i + 1 < n; i++)
		if (!alnum(s[i]) && strchr(inner, s[i]) == NULL)
			return first == letter ? "only letters, digits, '_', '-' and '.' may be in it"
					       : "only letters, digits, '_', '-', '.' and ':' may be in it";
	if (!alnum(s[n - 1]))
		return "it must end with a letter or a digit";
	return NULL;
}

const char *cdi_vendor_class_invalid(const char *s)
{
	return check(s, letter, "_-.");
}

const char *cdi_device_name_invalid(const char *s)
{
	return check(s, alnum, "_-.:");
}

int cdi_kind_parse(const char *kind, char *vendor, char *class, size_t size, struct err *e)
{
	const char *slash = strchr(kind, '/'), *why;

	if (slash == NULL || slash == kind || slash[1] == '\0')
		return err_set(e, EXIT_USAGE, "kind '%s' is not vendor.com/class", kind);
	if (xsnprintf(vendor, size, "%.*s", (int)(slash - kind), kind) < 0 ||
	    xsnprintf(class, size, "%s", slash + 1) < 0)
		return err_set(e, EXIT_USAGE, "kind '%.64s...' is too long", kind);
	if ((why = cdi_vendor_class_invalid(vendor)) != NULL)
		return err_set(e, EXIT_USAGE, "kind '%s': vendor '%s': %s", kind, vendor, why);
	if ((why = cdi_vendor_class_invalid(class)) != NULL)
		return err_set(e, EXIT_USAGE, "kind '%s': class '%s': %s", kind, class, why);
	return 0;
}

int cdi_name_parse(const char *s, struct cdi_name *n, struct err *e)
{
	const char *eq = strchr(s, '='), *why;
	char kind[2 * CDI_NAME_MAX];

	if (s[0] == '/' || eq == NULL || eq == s || eq[1] == '\0' ||
	    memchr(s, '/', (size_t)(eq - s)) == NULL)
		return err_set(e, EXIT_USAGE, "device '%s' is not a CDI device name (the form is "
			       "vendor.com/class=name, e.g. nvidia.com/gpu=0)", s);
	if (xsnprintf(kind, sizeof(kind), "%.*s", (int)(eq - s), s) < 0 ||
	    xsnprintf(n->name, sizeof(n->name), "%s", eq + 1) < 0)
		return err_set(e, EXIT_USAGE, "device '%.64s...' is too long", s);
	if (cdi_kind_parse(kind, n->vendor, n->class, sizeof(n->vendor), e) < 0)
		return err_wrap(e, "device '%s'", s);
	if ((why = cdi_device_name_invalid(n->name)) != NULL)
		return err_set(e, EXIT_USAGE, "device '%s': name '%s': %s", s, n->name, why);
	return 0;
}
