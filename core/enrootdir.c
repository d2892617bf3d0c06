/* enrootdir.c - enroot's configuration directories (see enrootdir.h). */
#include "enrootdir.h"

#include <errno.h>

#include "strv.h"
#include "util.h"

/* enroot's `${VAR:-default}`: unset and empty are the same. */
static const char *env_set(char *const *envp, const char *key)
{
	const char *v = envp_get(envp, key);

	return v != NULL && *v != '\0' ? v : NULL;
}

int enroot_sysconf_path(char *const *envp, char *buf, size_t size)
{
	const char *v = env_set(envp, "ENROOT_SYSCONF_PATH");

	if (xsnprintf(buf, size, "%s", v != NULL ? v : ENROOT_SYSCONF_DEFAULT) >= 0)
		return 0;
	if (size > 0)
		buf[0] = '\0';
	return -1;
}

int enroot_config_path(char *const *envp, char *buf, size_t size)
{
	const char *v;
	int ret = -1;

	errno = ENOENT; /* none set; xsnprintf says ENAMETOOLONG */
	if ((v = env_set(envp, "ENROOT_CONFIG_PATH")) != NULL)
		ret = xsnprintf(buf, size, "%s", v);
	else if ((v = env_set(envp, "XDG_CONFIG_HOME")) != NULL)
		ret = xsnprintf(buf, size, "%s/enroot", v);
	else if ((v = env_set(envp, "HOME")) != NULL)
		ret = xsnprintf(buf, size, "%s/.config/enroot", v);
	if (ret < 0 && size > 0)
		buf[0] = '\0';
	return ret < 0 ? -1 : 0;
}
