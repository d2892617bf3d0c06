/* Unit tests: a docker or OCI image config's Env becomes /etc/environment
 * in the unpacked root, as enroot's import does, read back byte for byte,
 * and no hostile link in the image leads the writer or reader outside. */
#define CTRTEST_ARCHIVE_FIXTURE
#include "ctrtest.h"
#include "imagerc.h"

/* A `docker save` archive with config JSON `cfg` (ctrtest.h's has "{}"). */
static void make_docker_archive_cfg(const char *path, const struct blob *layer, const char *cfg)
{
	const struct member m[] = {
		{ "0001/layer.tar", 'f', layer->data, layer->len },
		{ "cfg.json", 'f', cfg, 0 },
		{ "manifest.json", 'f', "[{\"Config\":\"cfg.json\",\"Layers\":[\"0001/layer.tar\"]}]", 0 },
	};
	struct blob outer = tar_blob(m, 3, 0);

	write_blob(path, outer);
	blob_free(&outer);
}

/* Unpacks one layer `m` with config `cfg` (docker archive) into f->dest. */
static int unpack_with_config(struct fx *f, const struct member *m, size_t n, const char *cfg,
			      struct err *e)
{
	struct blob l = tar_blob(m, n, 0);
	int r;

	make_docker_archive_cfg(f->image, &l, cfg);
	blob_free(&l);
	r = image_unpack(f->image, IMAGE_DOCKER_ARCHIVE, f->dest, e);
	return r;
}

/* What ctrun's runtime adapters will see: image_environ_read on the result. */
static const char *image_env(const struct fx *f, struct strv *env, const char *key)
{
	struct err e = { 0 };

	strv_free(env);
	assert_int_equal(image_environ_read(f->dest, env, &e), 0);
	return strv_getenv(env, key);
}

static void assert_file(const char *path, const char *want)
{
	size_t len = 0;
	char *got = read_file(path, &len);

	assert_non_null(got);
	assert_int_equal(len, strlen(want));
	assert_string_equal(got, want);
	free(got);
}

static const struct member etc_layer[] = {
	{ "etc/", 'd', NULL, 0 },
	{ "etc/environment", 'f', "PATH=/usr/bin:/bin\nCTRUN_IMAGE_ENV=layer\nOLD_ONLY=1\n", 0 },
	{ "bin/", 'd', NULL, 0 },
};

static const char env_cfg[] =
	"{\"config\":{\"Env\":[\"PATH=/usr/local/bin:/usr/bin:/bin:/custom\","
	"\"CTRUN_IMAGE_ENV=from-image\"],\"WorkingDir\":\"/workspace/proj\"}}";

static void test_config_env_becomes_etc_environment(void **state)
{
	struct fx *f = *state;
	struct err e = { 0 };
	struct strv env = { 0 };
	const struct member bare[] = { { "bin/", 'd', NULL, 0 } }; /* no /etc at all */
	struct stat st;

	assert_int_equal(unpack_with_config(f, bare, 1, env_cfg, &e), 0);
	assert_file(in(f, "etc/environment"),
		    "PATH=/usr/local/bin:/usr/bin:/bin:/custom\nCTRUN_IMAGE_ENV=from-image\n");
	assert_string_equal(image_env(f, &env, "CTRUN_IMAGE_ENV"), "from-image");
	assert_string_equal(image_env(f, &env, "PATH"), "/usr/local/bin:/usr/bin:/bin:/custom");
	/* enroot and docker create the WorkingDir */
	assert_int_equal(stat(in(f, "workspace/proj"), &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	strv_free(&env);
}

static void test_config_env_replaces_the_layers_environment(void **state)
{
	struct fx *f = *state;
	struct err e = { 0 };
	struct strv env = { 0 };

	/* enroot: the generated file is the top overlay layer, the layers' one is gone */
	assert_int_equal(unpack_with_config(f, etc_layer, 3, env_cfg, &e), 0);
	assert_string_equal(image_env(f, &env, "CTRUN_IMAGE_ENV"), "from-image");
	assert_null(image_env(f, &env, "OLD_ONLY"));
	strv_free(&env);
}

static void test_oci_config_env_is_written(void **state)
{
	struct fx *f = *state;
	struct err e = { 0 };
	struct strv env = { 0 };
	struct blob l = tar_blob(etc_layer, 3, 1), outer;
	const struct member m[] = {
		{ "oci-layout", 'f', "{\"imageLayoutVersion\":\"1.0.0\"}", 0 },
		{ "index.json", 'f', "{\"schemaVersion\":2,\"manifests\":[{\"digest\":\"sha256:aa\"}]}", 0 },
		{ "blobs/sha256/aa", 'f', "{\"schemaVersion\":2,\"config\":{\"digest\":\"sha256:cc\"},"
					 "\"layers\":[{\"digest\":\"sha256:01\"}]}", 0 },
		{ "blobs/sha256/cc", 'f', env_cfg, 0 },
		{ "blobs/sha256/01", 'f', l.data, l.len },
	};

	outer = tar_blob(m, 5, 0);
	write_blob(f->image, outer);
	blob_free(&outer);
	blob_free(&l);
	assert_int_equal(image_unpack(f->image, IMAGE_OCI_ARCHIVE, f->dest, &e), 0);
	assert_string_equal(image_env(f, &env, "CTRUN_IMAGE_ENV"), "from-image");
	assert_null(image_env(f, &env, "OLD_ONLY"));
	strv_free(&env);
}

static void test_config_env_through_hostile_etc_symlink_stays_inside(void **state)
{
	struct fx *f = *state;
	struct err e = { 0 };
	struct strv env = { 0 };
	char host[256], victim[256];
	struct member abs[1], file_link[2];
	const struct member up[] = { { "etc", 'l', "../../../../../../../../../..", 0 } };
	FILE *fp;
	struct stat st;

	/* /etc -> a host directory (absolute): lands in dest + that path */
	snprintf(host, sizeof(host), "%s/environment", f->outside);
	abs[0] = (struct member){ "etc", 'l', f->outside, 0 };
	assert_int_equal(unpack_with_config(f, abs, 1, env_cfg, &e), 0);
	assert_false(present(host));
	assert_string_equal(image_env(f, &env, "CTRUN_IMAGE_ENV"), "from-image");
	/* /etc -> ../../.. (climbing out): .. stops at the root */
	remove_tree(f->dest);
	assert_int_equal(mkdir(f->dest, 0755), 0);
	assert_int_equal(unpack_with_config(f, up, 1, env_cfg, &e), 0);
	assert_true(present(in(f, "environment")));
	assert_false(present(host));
	assert_string_equal(image_env(f, &env, "CTRUN_IMAGE_ENV"), "from-image");
	/* /etc/environment -> a host file: the link is replaced, the file untouched */
	snprintf(victim, sizeof(victim), "%s/victim", f->outside);
	fp = fopen(victim, "w");
	assert_non_null(fp);
	fputs("HOST=1\n", fp);
	fclose(fp);
	remove_tree(f->dest);
	assert_int_equal(mkdir(f->dest, 0755), 0);
	file_link[0] = (struct member){ "etc/", 'd', NULL, 0 };
	file_link[1] = (struct member){ "etc/environment", 'l', victim, 0 };
	assert_int_equal(unpack_with_config(f, file_link, 2, env_cfg, &e), 0);
	assert_file(victim, "HOST=1\n");
	assert_int_equal(lstat(in(f, "etc/environment"), &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_string_equal(image_env(f, &env, "CTRUN_IMAGE_ENV"), "from-image");
	strv_free(&env);
}

static void test_reader_does_not_follow_etc_out_of_the_image(void **state)
{
	struct fx *f = *state;
	struct strv env = { 0 };
	char path[256];
	FILE *fp;

	/* A rootfs (say a directory image) whose /etc leads to a host directory. */
	snprintf(path, sizeof(path), "%s/environment", f->outside);
	fp = fopen(path, "w");
	assert_non_null(fp);
	fputs("HOST_SECRET=1\n", fp);
	fclose(fp);
	assert_int_equal(symlink(f->outside, in(f, "etc")), 0);
	assert_null(image_env(f, &env, "HOST_SECRET"));
	strv_free(&env);
}

static void test_values_with_equals_blanks_and_quotes_read_back_exactly(void **state)
{
	struct fx *f = *state;
	struct err e = { 0 };
	struct strv env = { 0 };
	static const struct {
		const char *key, *json, *want;
	} v[] = {
		{ "EQ", "x=y=z", "x=y=z" },
		{ "SPACES", "two  words", "two  words" },
		{ "TRAILING", "blank ", "blank " },
		{ "TAB", "\\tlead and trail\\t", "\tlead and trail\t" },
		{ "CR", "dos\\r", "dos\r" },
		{ "SQ", "'single'", "'single'" },
		{ "DQ", "\\\"double\\\"", "\"double\"" },
		{ "MIXED", "'a\\\"", "'a\"" },
		{ "ONEQUOTE", "\\\"", "\"" },
		{ "EMPTY", "", "" },
		{ "HASH", "#not a comment", "#not a comment" },
		{ "DOLLAR", "${HOME} $x `id`", "${HOME} $x `id`" },
		{ "UTF8", "caf\\u00e9", "caf\xc3\xa9" },
	};
	char cfg[4096];
	size_t off;

	off = (size_t)snprintf(cfg, sizeof(cfg), "{\"config\":{\"Env\":[\"1BAD=x\",\"NOEQ\","
			       "\"my-var=1\"");
	for (size_t i = 0; i < sizeof(v) / sizeof(*v); i++)
		off += (size_t)snprintf(cfg + off, sizeof(cfg) - off, ",\"%s=%s\"", v[i].key, v[i].json);
	snprintf(cfg + off, sizeof(cfg) - off, "]}}");
	assert_int_equal(unpack_with_config(f, etc_layer, 3, cfg, &e), 0);
	for (size_t i = 0; i < sizeof(v) / sizeof(*v); i++) {
		const char *got = image_env(f, &env, v[i].key);

		assert_non_null(got);
		assert_string_equal(got, v[i].want);
	}
	/* names no reader accepts are left out, not written */
	assert_null(image_env(f, &env, "NOEQ"));
	assert_int_equal(env.n, sizeof(v) / sizeof(*v));
	strv_free(&env);
}

static void test_value_with_newline_or_nul_is_refused(void **state)
{
	struct fx *f = *state;
	struct err e = { 0 };

	assert_int_equal(unpack_with_config(f, etc_layer, 3,
					    "{\"config\":{\"Env\":[\"A=1\",\"SPLIT=a\\nb\"]}}", &e), -1);
	assert_non_null(strstr(e.msg, "config.Env[1] (SPLIT) holds a newline"));
	assert_int_equal(e.code, EXIT_CTRUN);
	remove_tree(f->dest);
	assert_int_equal(mkdir(f->dest, 0755), 0);
	memset(&e, 0, sizeof(e));
	assert_int_equal(unpack_with_config(f, etc_layer, 3,
					    "{\"config\":{\"Env\":[\"Z=a\\u0000b\"]}}", &e), -1);
	assert_non_null(strstr(e.msg, "NUL"));
}

static void test_config_without_env_leaves_an_empty_environment(void **state)
{
	struct fx *f = *state;
	struct err e = { 0 };
	struct strv env = { 0 };

	/* docker runs such an image with no variables of its own; enroot writes an empty file */
	assert_int_equal(unpack_with_config(f, etc_layer, 3, "{\"config\":{}}", &e), 0);
	assert_file(in(f, "etc/environment"), "");
	assert_null(image_env(f, &env, "OLD_ONLY"));
	strv_free(&env);
}

/* Runs `sh RC ARGS...` with a real /bin/sh and returns its first output line. */
static void run_rc(const char *rc, const char *arg, char *out, size_t size)
{
	char cmd[512];
	FILE *p;

	snprintf(cmd, sizeof(cmd), "/bin/sh %s %s", rc, arg != NULL ? arg : "");
	p = popen(cmd, "r");
	assert_non_null(p);
	out[0] = '\0';
	if (fgets(out, (int)size, p) == NULL)
		out[0] = '\0';
	out[strcspn(out, "\n")] = '\0';
	pclose(p);
}

/* Entrypoint and Cmd become /etc/rc as enroot's import writes it: with a
 * command, ENTRYPOINT COMMAND; without, ENTRYPOINT CMD; every word reaches
 * the program byte for byte through a real sh (a quote, a blank, a $). */
static void test_entrypoint_and_cmd_become_etc_rc(void **state)
{
	json_object *cfg = json_tokener_parse(
		"{\"config\": {\"Entrypoint\": [\"/bin/echo\", \"x  y\"], "
		"\"Cmd\": [\"it's $HOME\"]}}");
	struct imgconfig c;
	struct err e = { 0 };
	char *text = NULL, rc[256], out[256];
	size_t len = 0;
	FILE *f;

	(void)state;
	assert_int_equal(imgconfig_parse(cfg, "cfg", &c, &e), 0);
	assert_int_equal(imgconfig_rc(&c, &text, &len, &e), 0);
	snprintf(rc, sizeof(rc), "/tmp/ctrun-test-rc.%d", (int)getpid());
	f = fopen(rc, "w");
	assert_non_null(f);
	fwrite(text, 1, len, f);
	fclose(f);
	run_rc(rc, NULL, out, sizeof(out));
	assert_string_equal(out, "x  y it's $HOME");
	run_rc(rc, "a", out, sizeof(out));
	assert_string_equal(out, "x  y a");
	free(text);
	imgconfig_free(&c);
	json_object_put(cfg);
	/* Neither: a shell, as enroot. */
	cfg = json_tokener_parse("{\"config\": {\"Env\": [\"A=1\"]}}");
	assert_int_equal(imgconfig_parse(cfg, "cfg", &c, &e), 0);
	assert_int_equal(imgconfig_rc(&c, &text, &len, &e), 0);
	assert_non_null(strstr(text, "\texec /bin/sh\n"));
	free(text);
	imgconfig_free(&c);
	json_object_put(cfg);
	/* WorkingDir: the default command runs there (docker, enroot's rc), a
	 * given command stays where it was started. */
	cfg = json_tokener_parse("{\"config\": {\"Cmd\": [\"/bin/pwd\"], "
				 "\"Entrypoint\": [\"/bin/sh\", \"-c\", \"pwd\", \"x\"], "
				 "\"WorkingDir\": \"/tmp\"}}");
	assert_int_equal(imgconfig_parse(cfg, "cfg", &c, &e), 0);
	assert_int_equal(imgconfig_rc(&c, &text, &len, &e), 0);
	f = fopen(rc, "w");
	assert_non_null(f);
	fwrite(text, 1, len, f);
	fclose(f);
	run_rc(rc, NULL, out, sizeof(out));
	assert_string_equal(out, "/tmp");
	{
		char here[PATH_MAX];

		assert_non_null(getcwd(here, sizeof(here)));
		if (strcmp(here, "/tmp") != 0) {
			run_rc(rc, "a", out, sizeof(out));
			assert_string_equal(out, here);
		}
	}
	free(text);
	imgconfig_free(&c);
	json_object_put(cfg);
	/* No WorkingDir: "/", as docker. */
	cfg = json_tokener_parse("{\"config\": {\"Cmd\": [\"/bin/pwd\"]}}");
	assert_int_equal(imgconfig_parse(cfg, "cfg", &c, &e), 0);
	assert_int_equal(imgconfig_rc(&c, &text, &len, &e), 0);
	f = fopen(rc, "w");
	assert_non_null(f);
	fwrite(text, 1, len, f);
	fclose(f);
	run_rc(rc, NULL, out, sizeof(out));
	assert_string_equal(out, "/");
	free(text);
	imgconfig_free(&c);
	json_object_put(cfg);
	/* A non-string word is refused. */
	cfg = json_tokener_parse("{\"config\": {\"Cmd\": [\"ok\", 3]}}");
	assert_int_equal(imgconfig_parse(cfg, "cfg", &c, &e), -1);
	assert_non_null(strstr(e.msg, "config.Cmd[1]"));
	json_object_put(cfg);
	unlink(rc);
}

/* The working directory in ctrun's /etc/rc is read back as it was given
 * (core/imagerc.h: the SPANK plugin's containers start there, as pyxis's
 * start where enroot's rc cds), whatever bytes it holds; none: "/". */
static void test_etc_rc_workdir_reads_back(void **state)
{
	static const char *const dirs[] = { "/workspace", "/a b", "/it's", "/$HOME", "/x\"y",
					    "/l\nm", "/tab\there", "/-n", "/", NULL };
	char buf[PATH_MAX], json[512];

	(void)state;
	for (const char *const *d = dirs; *d != NULL; d++) {
		json_object *cfg = json_object_new_object(), *conf = json_object_new_object();
		struct imgconfig c;
		struct err e = { 0 };
		char *text = NULL;
		size_t len = 0;

		json_object_object_add(conf, "WorkingDir", json_object_new_string(*d));
		json_object_object_add(cfg, "config", conf);
		assert_int_equal(imgconfig_parse(cfg, "cfg", &c, &e), 0);
		assert_int_equal(imgconfig_rc(&c, &text, &len, &e), 0);
		assert_int_equal(imagerc_workdir(text, len, buf, sizeof(buf)), 1);
		assert_string_equal(buf, *d);
		free(text);
		imgconfig_free(&c);
		json_object_put(cfg);
	}
	snprintf(json, sizeof(json), "{\"config\": {\"Cmd\": [\"/bin/pwd\"]}}");
	{
		json_object *cfg = json_tokener_parse(json);
		struct imgconfig c;
		struct err e = { 0 };
		char *text = NULL;
		size_t len = 0;

		assert_int_equal(imgconfig_parse(cfg, "cfg", &c, &e), 0);
		assert_int_equal(imgconfig_rc(&c, &text, &len, &e), 0);
		assert_int_equal(imagerc_workdir(text, len, buf, sizeof(buf)), 1);
		assert_string_equal(buf, "/");
		free(text);
		imgconfig_free(&c);
		json_object_put(cfg);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_config_env_becomes_etc_environment, setup, teardown),
		cmocka_unit_test_setup_teardown(test_config_env_replaces_the_layers_environment, setup, teardown),
		cmocka_unit_test_setup_teardown(test_oci_config_env_is_written, setup, teardown),
		cmocka_unit_test_setup_teardown(test_config_env_through_hostile_etc_symlink_stays_inside, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reader_does_not_follow_etc_out_of_the_image, setup, teardown),
		cmocka_unit_test_setup_teardown(test_values_with_equals_blanks_and_quotes_read_back_exactly, setup, teardown),
		cmocka_unit_test_setup_teardown(test_value_with_newline_or_nul_is_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_config_without_env_leaves_an_empty_environment, setup, teardown),
		cmocka_unit_test(test_entrypoint_and_cmd_become_etc_rc),
		cmocka_unit_test(test_etc_rc_workdir_reads_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
