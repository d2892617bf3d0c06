/* Unit tests of registry credentials (registry/creds.c, netrc.c): enroot's netrc
 * .credentials with its $VAR passwords, containers' auth.json and docker's
 * config.json with their lookup rules, and creds_find's order of files,
 * USER@ restriction, bounds and permission warning.  Every variable the
 * code reads comes from the envp the test builds. */
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "creds.h"

/* base64("user:pass"), base64("hubuser:hubpass"), base64("nscreds:nspass") */
#define B64_USER_PASS "dXNlcjpwYXNz"
#define B64_HUB "aHVidXNlcjpodWJwYXNz"
#define B64_NS "bnNjcmVkczpuc3Bhc3M="

static char dir[] = "/tmp/ctrun-test-creds.XXXXXX";

static int setup(void **state)
{
	(void)state;
	strcpy(dir, "/tmp/ctrun-test-creds.XXXXXX");
	return mkdtemp(dir) != NULL ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[PATH_MAX];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

/* dir/rel with text, mode; the parent folders made. */
static void put(const char *rel, const char *text, mode_t mode)
{
	char path[PATH_MAX], cmd[PATH_MAX + 64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
	assert_int_equal(system(cmd), 0);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(chmod(path, mode), 0);
}

static struct cred netrc_ok(const char *text, const char *host, char *const *envp)
{
	struct cred c;
	struct err e = { 0 };

	if (creds_netrc(text, "creds", host, envp, &c, &e) != 1)
		fail_msg("%s: not found (%s)", host, e.msg);
	assert_true(c.found);
	return c;
}

static const char *netrc_bad(const char *text, const char *host, char *const *envp)
{
	static struct err e;
	struct cred c;

	memset(&e, 0, sizeof(e));
	assert_int_equal(creds_netrc(text, "creds", host, envp, &c, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	return e.msg;
}

static struct cred authjson(const char *text, const char *host, const char *repo, int want)
{
	struct cred c;
	struct err e = { 0 };
	int r = creds_authjson(text, strlen(text), "auth.json", host, repo, &c, &e);

	if (r != want)
		fail_msg("%s/%s: %d, not %d (%s)", host, repo, r, want, e.msg);
	return c;
}

static void test_netrc_enroot_nvcr_line(void **state)
{
	char *const env[] = { NULL };
	struct cred c = netrc_ok("machine nvcr.io login $oauthtoken password nvapi-KEY\n"
				 "machine authn.nvidia.com login $oauthtoken password nvapi-KEY\n",
				 "authn.nvidia.com", env);

	(void)state;
	assert_string_equal(c.user, "$oauthtoken"); /* nvcr.io's literal login */
	assert_string_equal(c.pass, "nvapi-KEY");
	assert_string_equal(c.source, "creds (machine authn.nvidia.com, line 2)");
}

static void test_netrc_expands_variable(void **state)
{
	char *const env[] = { "HOME=/h", "NGC_API_KEY=nvapi-from-env", NULL };
	struct cred a = netrc_ok("machine nvcr.io login $oauthtoken password $NGC_API_KEY\n",
				 "nvcr.io", env),
		    b = netrc_ok("machine nvcr.io login $oauthtoken password ${NGC_API_KEY}\n",
				 "nvcr.io", env);

	(void)state;
	assert_string_equal(a.user, "$oauthtoken");
	assert_string_equal(a.pass, "nvapi-from-env");
	assert_string_equal(b.pass, "nvapi-from-env");
}

static void test_netrc_login_variable_only_where_set(void **state)
{
	char *const env[] = { "REG_USER=alice", "REG_PASS=secret", NULL };
	struct cred c = netrc_ok("machine reg.io login ${REG_USER} password $REG_PASS", "reg.io", env);

	(void)state;
	assert_string_equal(c.user, "alice");
	assert_string_equal(c.pass, "secret");
}

static void test_netrc_unset_password_variable_named(void **state)
{
	char *const env[] = { "HOME=/h", NULL };

	(void)state;
	assert_string_equal(netrc_bad("\nmachine nvcr.io login $oauthtoken password $NGC_API_KEY\n",
				      "nvcr.io", env),
			    "creds line 2: the password of nvcr.io is $NGC_API_KEY, which is not set");
}

static void test_netrc_password_command_refused(void **state)
{
	char *const env[] = { NULL };
	static const char text[] =
		"machine 12345.dkr.ecr.eu-west-2.amazonaws.com login AWS password $(aws ecr "
		"get-login-password --region eu-west-2)\n"
		"machine nvcr.io login $oauthtoken password plain\n";
	struct cred c;

	(void)state;
	assert_non_null(strstr(netrc_bad(text, "12345.dkr.ecr.eu-west-2.amazonaws.com", env),
			       "runs a command, which ctrun does not do"));
	/* The command's words are not read as keywords: the next line still parses. */
	c = netrc_ok(text, "nvcr.io", env);
	assert_string_equal(c.pass, "plain");
}

static void test_netrc_matches_host_without_port(void **state)
{
	char *const env[] = { NULL };
	struct cred c = netrc_ok("machine reg.local login u password p\n", "reg.local:5000", env);

	(void)state;
	assert_string_equal(c.user, "u");
	c = netrc_ok("machine reg.local:5000 login v password q\n", "reg.local:5000", env);
	assert_string_equal(c.user, "v");
}

static void test_netrc_docker_hub_names_are_one_host(void **state)
{
	char *const env[] = { NULL };
	/* enroot's documented Docker Hub line, and the token realm's host. */
	static const char text[] = "machine registry-1.docker.io login hub password p1\n"
				   "machine auth.docker.io login hub password p2\n";
	struct cred c;
	struct err e = { 0 };

	(void)state;
	c = netrc_ok(text, "docker.io", env);
	assert_string_equal(c.pass, "p1");
	c = netrc_ok(text, "auth.docker.io", env);
	assert_string_equal(c.pass, "p2");
	assert_int_equal(creds_netrc(text, "creds", "ghcr.io", env, &c, &e), 0);
	assert_false(c.found);
}

static void test_netrc_default_entry_not_used(void **state)
{
	char *const env[] = { NULL };
	struct cred c;
	struct err e = { 0 };

	(void)state;
	assert_int_equal(creds_netrc("default login anonymous password x\n", "creds", "reg.io", env,
				     &c, &e), 0);
}

static void test_netrc_multiline_comments_quotes_and_macdef(void **state)
{
	char *const env[] = { NULL };
	static const char text[] = "# enroot credentials\n"
				   "macdef init\n"
				   "cd /pub\n"
				   "machine reg.io login wrong password wrong\n"
				   "\n"
				   "machine other.io login o password o # trailing comment\n"
				   "machine REG.io\n"
				   "\tlogin \"me\"\n"
				   "\tpassword \"with space \\\" and #hash\"\n";
	struct cred c = netrc_ok(text, "reg.io", env);

	(void)state;
	assert_string_equal(c.user, "me");
	assert_string_equal(c.pass, "with space \" and #hash");
	assert_string_equal(c.source, "creds (machine REG.io, line 7)");
}

static void test_netrc_malformed_names_line(void **state)
{
	char *const env[] = { NULL };

	(void)state;
	assert_non_null(strstr(netrc_bad("machine a.io login u password p\nmachine b.io lgin u\n",
					 "b.io", env), "creds line 2: unexpected word lgin"));
	assert_non_null(strstr(netrc_bad("login u password p\n", "a.io", env),
			       "creds line 1: login before any machine"));
	assert_non_null(strstr(netrc_bad("machine a.io login u password", "a.io", env),
			       "password without its value"));
	assert_non_null(strstr(netrc_bad("machine a.io login u\nmachine b.io", "a.io", env),
			       "creds line 1: no password for machine a.io"));
	assert_non_null(strstr(netrc_bad("machine a.io login \"u", "a.io", env), "closing"));
}

static void test_authjson_longest_prefix_wins(void **state)
{
	static const char text[] =
		"{\"auths\": {\"quay.io\": {\"auth\": \"" B64_USER_PASS "\"},"
		" \"quay.io/ns\": {\"auth\": \"" B64_NS "\"},"
		" \"quay.io/ns/app/extra\": {\"auth\": \"" B64_HUB "\"},"
		" \"quay.io/nsx\": {\"auth\": \"" B64_HUB "\"}}}";
	struct cred c;

	(void)state;
	c = authjson(text, "quay.io", "ns/app", 1);
	assert_string_equal(c.user, "nscreds");
	assert_string_equal(c.pass, "nspass");
	assert_string_equal(c.source, "auth.json (entry quay.io/ns)");
	c = authjson(text, "quay.io", "other/app", 1);
	assert_string_equal(c.user, "user");
	c = authjson(text, "QUAY.IO", "nsx/app", 1); /* hosts match in any case */
	assert_string_equal(c.user, "hubuser");
	c = authjson(text, "quay.io", "", 1); /* no repo: the host's own key */
	assert_string_equal(c.user, "user");
	authjson(text, "ghcr.io", "ns/app", 0);
}

static void test_authjson_docker_hub_v1_url_key(void **state)
{
	static const char docker[] =
		"{\"auths\": {\"https://index.docker.io/v1/\": {\"auth\": \"" B64_HUB "\"}},"
		" \"credsStore\": \"desktop\"}";
	static const char both[] =
		"{\"auths\": {\"https://index.docker.io/v1/\": {\"auth\": \"" B64_HUB "\"},"
		" \"docker.io\": {\"auth\": \"" B64_USER_PASS "\"}}}";
	struct cred c;

	(void)state;
	c = authjson(docker, "docker.io", "library/ubuntu", 1);
	assert_string_equal(c.user, "hubuser");
	assert_string_equal(c.pass, "hubpass");
	c = authjson(docker, "registry-1.docker.io", "library/ubuntu", 1);
	assert_string_equal(c.user, "hubuser");
	/* The key spelled as the host is the better match. */
	c = authjson(both, "docker.io", "library/ubuntu", 1);
	assert_string_equal(c.user, "user");
	/* A URL key names a host only, never a namespace. */
	authjson("{\"auths\": {\"https://reg.io/v2/team\": {\"auth\": \"" B64_NS "\"}}}", "reg.io",
		 "other/app", 1);
}

static void test_authjson_username_password_fields(void **state)
{
	struct cred c = authjson("{\"auths\": {\"reg.io:5000\": {\"username\": \"u\","
				 " \"password\": \"p\"}}}", "reg.io:5000", "a/b", 1);

	(void)state;
	assert_string_equal(c.user, "u");
	assert_string_equal(c.pass, "p");
	/* reg.io without the port is another registry for auth.json. */
	authjson("{\"auths\": {\"reg.io\": {\"username\": \"u\", \"password\": \"p\"}}}",
		 "reg.io:5000", "a/b", 0);
}

static void test_authjson_helper_marker_is_no_entry(void **state)
{
	(void)state;
	authjson("{\"auths\": {\"ghcr.io\": {}}, \"credsStore\": \"secretservice\"}", "ghcr.io", "a",
		 0);
	authjson("{\"auths\": {\"acr.io\": {\"identitytoken\": \"x\"}}}", "acr.io", "a", 0);
	/* A marker for the namespace does not hide the host's entry. */
	authjson("{\"auths\": {\"ghcr.io\": {\"auth\": \"" B64_USER_PASS "\"}, \"ghcr.io/a\": {}}}",
		 "ghcr.io", "a/b", 1);
	authjson("", "ghcr.io", "a", 0);
	authjson("{}", "ghcr.io", "a", 0);
}

static void test_authjson_malformed_refused(void **state)
{
	static const char *const texts[] = {
		"{\"auths\": {\"ghcr.io\": {\"auth\": \"not base64!\"}}}",
		"{\"auths\": {\"ghcr.io\": {\"auth\": \"bm9jb2xvbg==\"}}}", /* "nocolon" */
		"{\"auths\": {\"ghcr.io\": \"x\"}}",
		"{\"auths\": []}",
		"{\"auths\": {\"ghcr.io\": {\"username\": 5, \"password\": \"p\"}}}",
		"{\"auths\": {",
		"[]",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(texts) / sizeof(*texts); i++) {
		struct cred c;
		struct err e = { 0 };

		assert_int_equal(creds_authjson(texts[i], strlen(texts[i]), "auth.json", "ghcr.io", "a/b",
						&c, &e), -1);
		assert_int_equal(e.code, EXIT_USAGE);
		assert_non_null(strstr(e.msg, "auth.json"));
	}
}

static void test_authjson_read_by_length(void **state)
{
	static const char text[] = "{\"auths\": {\"ghcr.io\": {\"auth\": \"" B64_USER_PASS "\"}}}";
	char *buf = malloc(sizeof(text) - 1);
	struct cred c;
	struct err e = { 0 };

	(void)state;
	memcpy(buf, text, sizeof(text) - 1); /* no NUL */
	assert_int_equal(creds_authjson(buf, sizeof(text) - 1, "auth.json", "ghcr.io", "a", &c, &e), 1);
	assert_string_equal(c.pass, "pass");
	free(buf);
}

/* creds_find with HOME and the other variables under dir. */
static int find(const char *host, const char *repo, const char *user, char **extra, bool quiet,
		struct cred *c, struct err *e)
{
	char home[PATH_MAX + 8], *env[16] = { home };
	size_t n = 1;

	snprintf(home, sizeof(home), "HOME=%s/home", dir);
	for (; extra != NULL && *extra != NULL; extra++)
		env[n++] = *extra;
	env[n] = NULL;
	return creds_find(host, repo, user, env, quiet, c, e);
}

/* The header's order, last first: each file put in place wins over the
 * ones before it. */
static void test_find_order_first_file_wins(void **state)
{
	static const char *const files[][2] = {
		{ "home/.config/enroot/.credentials", "machine nvcr.io login $oauthtoken password $NGC_API_KEY\n" },
		{ "home/.docker/config.json", "{\"auths\":{\"nvcr.io\":{\"username\":\"d\",\"password\":\"docker\"}}}" },
		{ "home/.config/containers/auth.json", "{\"auths\":{\"nvcr.io\":{\"username\":\"c\",\"password\":\"config\"}}}" },
		{ "run/containers/auth.json", "{\"auths\":{\"nvcr.io\":{\"username\":\"r\",\"password\":\"runtime\"}}}" },
		{ "regauth.json", "{\"auths\":{\"nvcr.io\":{\"username\":\"a\",\"password\":\"regauth\"}}}" },
	};
	static const char *const want[] = { "k", "docker", "config", "runtime", "regauth" };
	char regauth[PATH_MAX + 32], runtime[PATH_MAX + 32];
	char *env[] = { regauth, runtime, "NGC_API_KEY=k", NULL };
	struct cred c;
	struct err e = { 0 };

	(void)state;
	snprintf(regauth, sizeof(regauth), "REGISTRY_AUTH_FILE=%s/regauth.json", dir);
	snprintf(runtime, sizeof(runtime), "XDG_RUNTIME_DIR=%s/run", dir);
	for (size_t i = 0; i < sizeof(files) / sizeof(*files); i++) {
		put(files[i][0], files[i][1], 0600);
		assert_int_equal(find("nvcr.io", "nvidia/cuda", "", env, true, &c, &e), 1);
		assert_string_equal(c.pass, want[i]);
		assert_non_null(strstr(c.source, files[i][0]));
	}
	/* A file without the host's entry passes to the next. */
	assert_int_equal(find("ghcr.io", "a/b", "", env, true, &c, &e), 0);
	assert_false(c.found);
}

static void test_find_xdg_config_and_docker_config_dirs(void **state)
{
	char xdg[PATH_MAX + 32], docker[PATH_MAX + 32], *env[] = { xdg, docker, NULL };
	struct cred c;
	struct err e = { 0 };

	(void)state;
	snprintf(xdg, sizeof(xdg), "XDG_CONFIG_HOME=%s/xdg", dir);
	snprintf(docker, sizeof(docker), "DOCKER_CONFIG=%s/dockercfg", dir);
	put("dockercfg/config.json", "{\"auths\":{\"a.io\":{\"auth\":\"" B64_USER_PASS "\"}}}", 0600);
	put("xdg/enroot/.credentials", "machine b.io login x password y\n", 0600);
	assert_int_equal(find("a.io", "r", "", env, true, &c, &e), 1);
	assert_string_equal(c.user, "user");
	assert_int_equal(find("b.io", "r", "", env, true, &c, &e), 1);
	assert_string_equal(c.user, "x");
}

static void test_find_user_restricts_login(void **state)
{
	char enroot[PATH_MAX + 32], *env[] = { enroot, NULL };
	struct cred c;
	struct err e = { 0 };

	(void)state;
	snprintf(enroot, sizeof(enroot), "ENROOT_CONFIG_PATH=%s/enroot", dir);
	put("enroot/.credentials", "machine nvcr.io login $oauthtoken password team-key\n"
				   "machine nvcr.io login alice password alice-key\n", 0600);
	put("home/.docker/config.json", "{\"auths\":{\"nvcr.io\":{\"username\":\"bob\","
					"\"password\":\"bob-key\"}}}", 0600);
	assert_int_equal(find("nvcr.io", "x/y", "alice", env, true, &c, &e), 1);
	assert_string_equal(c.pass, "alice-key");
	assert_int_equal(find("nvcr.io", "x/y", "$oauthtoken", env, true, &c, &e), 1);
	assert_string_equal(c.pass, "team-key");
	assert_int_equal(find("nvcr.io", "x/y", "", env, true, &c, &e), 1);
	assert_string_equal(c.pass, "bob-key");
	assert_int_equal(find("nvcr.io", "x/y", "carol", env, true, &c, &e), 0);
}

/* What creds_find writes on stderr. */
static char *find_stderr(const char *host, bool quiet, int *r)
{
	char path[PATH_MAX], *out = calloc(1, 4096);
	struct cred c;
	struct err e = { 0 };
	int saved = dup(2), fd;

	snprintf(path, sizeof(path), "%s/stderr", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0 && saved >= 0);
	dup2(fd, 2);
	*r = find(host, "a", "", NULL, quiet, &c, &e);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	assert_true(pread(fd, out, 4095, 0) >= 0);
	close(fd);
	return out;
}

static void test_find_warns_once_when_readable_by_others(void **state)
{
	char want[2 * PATH_MAX];
	char *out;
	int r;

	(void)state;
	put("home/.docker/config.json", "{\"auths\":{\"a.io\":{\"auth\":\"" B64_USER_PASS "\"}}}", 0644);
	out = find_stderr("b.io", true, &r);
	assert_int_equal(r, 0);
	assert_string_equal(out, ""); /* quiet */
	free(out);
	out = find_stderr("a.io", false, &r);
	assert_int_equal(r, 1);
	snprintf(want, sizeof(want), "ctrun: warning: %s/home/.docker/config.json is readable by "
		 "others (chmod 600 %s/home/.docker/config.json)\n", dir, dir);
	assert_string_equal(out, want);
	free(out);
	out = find_stderr("a.io", false, &r); /* once */
	assert_string_equal(out, "");
	free(out);
}

static void test_find_refuses_non_regular_file(void **state)
{
	char path[PATH_MAX];
	struct cred c;
	struct err e = { 0 };

	(void)state;
	snprintf(path, sizeof(path), "%s/home/.docker/config.json", dir);
	put("home/.docker/x", "", 0600);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(find("a.io", "r", "", NULL, true, &c, &e), -1);
	assert_non_null(strstr(e.msg, "config.json is not a regular file"));
	unlink(path);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(find("a.io", "r", "", NULL, true, &c, &e), -1);
	assert_non_null(strstr(e.msg, "config.json is not a regular file"));
}

static void test_find_refuses_file_over_1mib(void **state)
{
	char *big = malloc((1 << 20) + 2);
	struct cred c;
	struct err e = { 0 };

	(void)state;
	memset(big, ' ', (1 << 20) + 1);
	big[(1 << 20) + 1] = '\0';
	put("home/.config/containers/auth.json", big, 0600);
	assert_int_equal(find("a.io", "r", "", NULL, true, &c, &e), -1);
	assert_non_null(strstr(e.msg, "auth.json is larger than 1 MiB"));
	big[1 << 20] = '\0'; /* exactly 1 MiB of blanks: an empty configuration */
	put("home/.config/containers/auth.json", big, 0600);
	assert_int_equal(find("a.io", "r", "", NULL, true, &c, &e), 0);
	free(big);
}

static void test_find_malformed_file_named(void **state)
{
	struct cred c;
	struct err e = { 0 };

	(void)state;
	put("home/.docker/config.json", "{\"auths\": ", 0600);
	assert_int_equal(find("a.io", "r", "", NULL, true, &c, &e), -1);
	assert_int_equal(e.code, EXIT_USAGE);
	assert_non_null(strstr(e.msg, "/home/.docker/config.json is not valid JSON"));
}

static void test_find_no_files_is_none(void **state)
{
	struct cred c;
	struct err e = { 0 };
	char *const env[] = { NULL };

	(void)state;
	assert_int_equal(find("a.io", "r", NULL, NULL, false, &c, &e), 0);
	/* No HOME at all: nothing to look at. */
	assert_int_equal(creds_find("a.io", "r", "", env, false, &c, &e), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_netrc_enroot_nvcr_line),
		cmocka_unit_test(test_netrc_expands_variable),
		cmocka_unit_test(test_netrc_login_variable_only_where_set),
		cmocka_unit_test(test_netrc_unset_password_variable_named),
		cmocka_unit_test(test_netrc_password_command_refused),
		cmocka_unit_test(test_netrc_matches_host_without_port),
		cmocka_unit_test(test_netrc_docker_hub_names_are_one_host),
		cmocka_unit_test(test_netrc_default_entry_not_used),
		cmocka_unit_test(test_netrc_multiline_comments_quotes_and_macdef),
		cmocka_unit_test(test_netrc_malformed_names_line),
		cmocka_unit_test(test_authjson_longest_prefix_wins),
		cmocka_unit_test(test_authjson_docker_hub_v1_url_key),
		cmocka_unit_test(test_authjson_username_password_fields),
		cmocka_unit_test(test_authjson_helper_marker_is_no_entry),
		cmocka_unit_test(test_authjson_malformed_refused),
		cmocka_unit_test(test_authjson_read_by_length),
		cmocka_unit_test_setup_teardown(test_find_order_first_file_wins, setup, teardown),
		cmocka_unit_test_setup_teardown(test_find_xdg_config_and_docker_config_dirs, setup, teardown),
		cmocka_unit_test_setup_teardown(test_find_user_restricts_login, setup, teardown),
		cmocka_unit_test_setup_teardown(test_find_warns_once_when_readable_by_others, setup, teardown),
		cmocka_unit_test_setup_teardown(test_find_refuses_non_regular_file, setup, teardown),
		cmocka_unit_test_setup_teardown(test_find_refuses_file_over_1mib, setup, teardown),
		cmocka_unit_test_setup_teardown(test_find_malformed_file_named, setup, teardown),
		cmocka_unit_test_setup_teardown(test_find_no_files_is_none, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
