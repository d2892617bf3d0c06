/* enrootstock.c - enroot's own configuration files and the settings that
 * change a container (see enrootstock.h). */
#include "enrootstock.h"

#include <nettle/sha2.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

/* SHA-256 of the files enroot's Makefile installs into hooks.d, mounts.d and
 * environ.d (its conf/hooks/NAME.sh, conf/mounts/NAME.fstab and
 * conf/environ/NAME.env) at every release tag of github.com/NVIDIA/enroot
 * from v3.0.0 to v4.1.2 and at master 8ea147d (which
 * ../shared/tools/build-enroot.sh builds), one line per distinct content;
 * the releases each line covers in its comment. */
static const struct {
	const char *dir, *name, *sha256;
} stock[] = {
	{ "environ.d", "10-terminal.env", /* 3.0.0-4.1.2, master */
	  "e759938123a7148198fa9b2fabff5931ea05821d649981cfda1e02d373c3a9e3" },
	{ "hooks.d", "10-aptfix.sh", /* 3.3.0-3.4.0 */
	  "20c236b5fb902e86cfe4e94dd39f18798ff5cf8b7d458f9e022e08f341e619f4" },
	{ "hooks.d", "10-aptfix.sh", /* 3.4.1-4.1.2, master */
	  "c99f3925d06bc4de393d5affbffd132ecbcc07b3fbd545508ac7b732ef8a2472" },
	{ "hooks.d", "10-cgroups.sh", /* 3.0.0-3.2.0 */
	  "3ab99a74129fc0ed9e0644b71df2012fb5e2041c68de766f59d7b3f50290cbcf" },
	{ "hooks.d", "10-cgroups.sh", /* 3.3.0 */
	  "2067a5cffbf0307dc03724ac28f180f6d41e24e9798c7a8f3ddbfa9a23c4c1c5" },
	{ "hooks.d", "10-cgroups.sh", /* 3.3.1-3.4.0 */
	  "2f20375c1e01022fcd45f818afa20c9c376a193aae8616ddc9e3cbbef848f093" },
	{ "hooks.d", "10-cgroups.sh", /* 3.4.1 */
	  "8b16dd31566c4c4b003ab08137d2ad735e544a4b676904caf38519a9c911da0b" },
	{ "hooks.d", "10-cgroups.sh", /* 3.5.0-4.1.2, master */
	  "da4abae069cedff1989db8bd61f64290f246b51b71ab81f26b35be56746bc758" },
	{ "hooks.d", "10-devices.sh", /* 3.0.0-3.2.0 */
	  "b6ea2f3ef5b3cab43d58148ac20f11ba4a80eaa868d469b5f9fe51dbf34f9bdb" },
	{ "hooks.d", "10-devices.sh", /* 3.3.0-3.4.0 */
	  "5d7fba3e7e35ee8a17f367fa73a9c5ee412016a7d7570ef1a4985c6ae5e26cc4" },
	{ "hooks.d", "10-devices.sh", /* 3.4.1-4.1.2 */
	  "0b20811827c8dce9d8c0b62c52ada15065933b4f9843affcf178c0fd890b25b5" },
	{ "hooks.d", "10-devices.sh", /* master */
	  "45c63ea658e548df43133f7b60d2ec52a8ccc0ac869a64ca4cd6324f4477e60e" },
	{ "hooks.d", "10-home.sh", /* 3.0.0-3.2.0 */
	  "d8faf0fff0fbfe8800aafb75c10ce2deaf282565b369055f67262b2568ea030a" },
	{ "hooks.d", "10-home.sh", /* 3.3.0-3.4.0 */
	  "7d5896df9d99ab65c577a0ed11986fcb80a5b96af7e1adc0ade6df9011e1cdd7" },
	{ "hooks.d", "10-home.sh", /* 3.4.1-4.1.2, master */
	  "8a23a5a394e121ba93103ffafa630885cf9988317b7c0016910ad555e1c7725d" },
	{ "hooks.d", "10-localtime.sh", /* 3.5.0-4.1.2, master */
	  "ab460cde3f3b54294cb9b447464077ae1e27829117434b0c9bc98e7660b5cdc5" },
	{ "hooks.d", "10-shadow.sh", /* 3.0.0-3.2.0 */
	  "c76932b410f4f407a2b79e4d1397e62e4020e431edab2007aff411624cb501b0" },
	{ "hooks.d", "10-shadow.sh", /* 3.3.0-3.4.0 */
	  "3cd7ed37f64831658c5f21c7da055e4695b9060c0ad07e6453ad1ca67d617843" },
	{ "hooks.d", "10-shadow.sh", /* 3.4.1-4.1.2, master */
	  "d82843f7ed80a97ead9d91ece9a45edc722dabfbc74a03a04754328c13586fcb" },
	{ "hooks.d", "98-nvidia.sh", /* 3.0.0 */
	  "a551248dfa35c0f060f5baed65355731eba68a9a187161a82d42fa236896cc04" },
	{ "hooks.d", "98-nvidia.sh", /* 3.0.1-3.1.1 */
	  "48b4ecb6aca37084793fa4be87f39c010efa7fd186a6fdfe39c5c7b686807ba5" },
	{ "hooks.d", "98-nvidia.sh", /* 3.2.0 */
	  "0505de76f2953edb37330092c458024f7d9dcc59cd1fad8a64c2d9a9427425f6" },
	{ "hooks.d", "98-nvidia.sh", /* 3.3.0-3.4.0 */
	  "0dd026c7c7899b8d6265d67d22d1f15b79b10380fcaf65fc38decd1f9eedc1ed" },
	{ "hooks.d", "98-nvidia.sh", /* 3.4.1-3.5.0 */
	  "d453e8d69e1dd3ee00f0302b7f3d2294d24d9d78e8a1d407c5bd6b8ed70072b9" },
	{ "hooks.d", "98-nvidia.sh", /* 4.0.0-4.1.2, master */
	  "91db82ae029858eed988b76aa28835a609801a1ff131e25e1bbc1e0402d8cd7d" },
	{ "hooks.d", "99-mellanox.sh", /* 3.0.0-3.0.2 */
	  "037bfe4f8dee82a65969c07b0894c04033ea70a47865bff3e1b73edd4475bb4a" },
	{ "hooks.d", "99-mellanox.sh", /* 3.1.0 */
	  "f4065e408c7bb38de7f343ac91b157a3237967c77c84621192a03a25b865310b" },
	{ "hooks.d", "99-mellanox.sh", /* 3.1.1-3.2.0 */
	  "b6930ef2d8565b6f36ab53c510443ca064020c6ceaeacd3c4d1452e0bbe2743d" },
	{ "hooks.d", "99-mellanox.sh", /* 3.3.0-3.4.0 */
	  "54301e66fd3467f59fb6655b716f9680a973dd20a0bf4b2aa67753a66ce5f335" },
	{ "hooks.d", "99-mellanox.sh", /* 3.4.1-3.5.0 */
	  "f36ef3b03ac26a73823eed7509a5e65d76e3c85147a60e615aa890eb421efdcc" },
	{ "hooks.d", "99-mellanox.sh", /* 4.0.0-4.1.2, master */
	  "43bd5509a3fd1e2c2d8cd427135a91bba4164ba97094eee0ea4ac5701ff9273f" },
	{ "mounts.d", "10-system.fstab", /* 3.0.0-4.1.2, master */
	  "5b94c2286afc8f1049c30fc5e10d389ee5bea79f8712eba088c1651bf1a271a4" },
	{ "mounts.d", "20-config.fstab", /* 3.0.0-3.4.1 */
	  "2df08c11e4fddd669304a808f509f799e99a8c5158fe15809f4ef0971293907a" },
	{ "mounts.d", "20-config.fstab", /* 3.5.0-4.1.2, master */
	  "5cfd51a57ff45ff5587809c3f66412238827cd979b7928a0a3912b9c4b250fe2" },
};

/* Settings that change nothing a container gets: where enroot keeps its
 * files, how it downloads, unpacks and squashes, how it mounts the image
 * (overlayfs or fuse-overlayfs: the same tree), and what ctrun sets for each
 * run itself (ENROOT_MOUNT_HOME, ENROOT_LOGIN_SHELL: the environment wins
 * over enroot.conf).  Every other ENROOT_ setting counts. */
static const char *const neutral[] = {
	"ENROOT_LIBRARY_PATH", "ENROOT_RUNTIME_PATH", "ENROOT_CACHE_PATH",
	"ENROOT_DATA_PATH", "ENROOT_TEMP_PATH", "ENROOT_GZIP_PROGRAM",
	"ENROOT_ZSTD_OPTIONS", "ENROOT_SQUASH_OPTIONS", "ENROOT_MAX_PROCESSORS",
	"ENROOT_MAX_CONNECTIONS", "ENROOT_CONNECT_TIMEOUT", "ENROOT_TRANSFER_TIMEOUT",
	"ENROOT_TRANSFER_RETRIES", "ENROOT_ALLOW_HTTP", "ENROOT_NATIVE_OVERLAYFS",
	"ENROOT_BUNDLE_ALL", "ENROOT_BUNDLE_CHECKSUM", "ENROOT_FORCE_OVERRIDE",
	"ENROOT_MOUNT_HOME", "ENROOT_LOGIN_SHELL", NULL,
};
/* Only in the environment: the directories read (enrootcfg.c follows
 * them), and what ctrun removes from enroot's environment for each run. */
static const char *const neutral_env[] = {
	"ENROOT_SYSCONF_PATH", "ENROOT_CONFIG_PATH", "ENROOT_REMAP_ROOT",
	"NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "ENROOT_VERSION", NULL,
};

static bool suffix(const char *s, const char *suf)
{
	size_t n = strlen(s), k = strlen(suf);

	return n > k && strcmp(s + n - k, suf) == 0;
}

bool enroot_cfg_read(const char *dir, const char *name)
{
	if (strcmp(dir, "hooks.d") == 0)
		return suffix(name, ".sh");
	if (strcmp(dir, "mounts.d") == 0)
		return suffix(name, ".fstab");
	return strcmp(dir, "environ.d") == 0 && suffix(name, ".env");
}

bool enroot_stock_digest(const char *dir, const char *name, const char *sha256)
{
	for (size_t i = 0; i < sizeof(stock) / sizeof(stock[0]); i++)
		if (strcmp(stock[i].dir, dir) == 0 && strcmp(stock[i].name, name) == 0 &&
		    strcmp(stock[i].sha256, sha256) == 0)
			return true;
	return false;
}

bool enroot_stock_file(const char *dir, const char *name, const char *data, size_t len)
{
	struct sha256_ctx h;
	uint8_t d[SHA256_DIGEST_SIZE];
	char hex[2 * SHA256_DIGEST_SIZE + 1];

	sha256_init(&h);
	sha256_update(&h, len, (const uint8_t *)data);
	sha256_digest(&h, sizeof(d), d);
	for (size_t i = 0; i < sizeof(d); i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
	return enroot_stock_digest(dir, name, hex);
}

static bool listed(const char *const *v, const char *key, size_t n)
{
	for (; *v != NULL; v++)
		if (strlen(*v) == n && strncmp(*v, key, n) == 0)
			return true;
	return false;
}

/* A name enroot reads as a setting (config::load's filter). */
static bool setting(const char *k, size_t n)
{
	size_t i = 0;

	if (n > 7 && strncmp(k, "ENROOT_", 7) == 0) {
		for (i = 7; i < n && ((k[i] >= 'A' && k[i] <= 'Z') || k[i] == '_'); i++)
			;
		return i == n;
	}
	return (n > 9 && strncmp(k, "MELLANOX_", 9) == 0) ||
	       (n > 7 && strncmp(k, "NVIDIA_", 7) == 0);
}

static bool named(const char *k, size_t n, const char *name)
{
	return n == strlen(name) && strncmp(k, name, n) == 0;
}

/* Off: empty, or what enroot's config::fini unsets as false
 * (^(no?|N[oO]?|[fF](alse)?|FALSE)$); a MELLANOX_VISIBLE_DEVICES of void
 * or none (99-mellanox.sh does nothing). */
static bool off(const char *k, size_t n, const char *v, size_t len)
{
	static const char *const no[] = { "n", "no", "N", "NO", "No", "f", "false",
					  "F", "False", "FALSE", NULL };

	if (len >= 2 && (v[0] == '"' || v[0] == '\'') && v[len - 1] == v[0]) {
		v++;
		len -= 2;
	}
	if (len == 0)
		return true;
	if (named(k, n, "MELLANOX_VISIBLE_DEVICES"))
		return (len == 4 && strncmp(v, "void", 4) == 0) || (len == 4 && strncmp(v, "none", 4) == 0);
	if (strncmp(k, "ENROOT_", 7) != 0)
		return false;
	return listed(no, v, len);
}

/* One setting: whether it changes a container; its name into key if so.
 * MELLANOX_* other than MELLANOX_VISIBLE_DEVICES only tune what that one
 * turns on. */
static bool adds(const char *k, size_t n, const char *v, size_t len, bool env, char *key,
		 size_t size)
{
	if (!setting(k, n) || listed(neutral, k, n) || (env && listed(neutral_env, k, n)))
		return false;
	if (strncmp(k, "MELLANOX_", 9) == 0 && !named(k, n, "MELLANOX_VISIBLE_DEVICES"))
		return false;
	if (off(k, n, v, len))
		return false;
	if (xsnprintf(key, size, "%.*s", (int)n, k) < 0 && size > 0)
		key[0] = '\0';
	return true;
}

bool enroot_conf_adds(const char *text, char *key, size_t size)
{
	for (const char *l = text; *l != '\0';) {
		const char *end = strchrnul(l, '\n'), *k, *v;
		size_t n;

		/* IFS=$' \t=' read -r key value: leading blanks skipped, the
		 * key up to a blank or '=', the value after the separators,
		 * trailing blanks dropped. */
		for (k = l; k < end && (*k == ' ' || *k == '\t'); k++)
			;
		n = strcspn(k, " \t=\n");
		for (v = k + n; v < end && (*v == ' ' || *v == '\t' || *v == '='); v++)
			;
		size_t len = (size_t)(end - v);

		while (len > 0 && (v[len - 1] == ' ' || v[len - 1] == '\t' || v[len - 1] == '\r'))
			len--;
		if (k + n <= end && adds(k, n, v, len, false, key, size))
			return true;
		l = *end == '\0' ? end : end + 1;
	}
	return false;
}

bool enroot_env_adds(char *const *envp, char *key, size_t size)
{
	for (; envp != NULL && *envp != NULL; envp++) {
		const char *eq = strchr(*envp, '=');

		if (eq != NULL &&
		    adds(*envp, (size_t)(eq - *envp), eq + 1, strlen(eq + 1), true, key, size))
			return true;
	}
	return false;
}

/* The quoted path of the script's line that starts (blanks aside) with
 * prefix and is `prefix "PATH"` and nothing else. */
static int quoted_after(const char *text, const char *prefix, char *out, size_t size)
{
	for (const char *l = text; *l != '\0';) {
		const char *end = strchrnul(l, '\n'), *p = l, *q;

		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if ((size_t)(end - p) > strlen(prefix) && strncmp(p, prefix, strlen(prefix)) == 0) {
			p += strlen(prefix);
			while (p < end && (*p == ' ' || *p == '\t'))
				p++;
			q = p < end && *p == '"' ? memchr(p + 1, '"', (size_t)(end - p - 1)) : NULL;
			if (q != NULL && q > p + 1 && memchr(p, '$', (size_t)(q - p)) == NULL &&
			    strspn(q + 1, " \t") == (size_t)(end - q - 1))
				return xsnprintf(out, size, "%.*s", (int)(q - p - 1), p + 1) < 0 ? -1 : 0;
		}
		l = *end == '\0' ? end : end + 1;
	}
	return -1;
}

int enroot_script_paths(const char *text, char *conf, size_t csize, char *sysconf, size_t ssize)
{
	if (quoted_after(text, "config::init", conf, csize) < 0 ||
	    quoted_after(text, "config::export ENROOT_SYSCONF_PATH", sysconf, ssize) < 0)
		return -1;
	return 0;
}
