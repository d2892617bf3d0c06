/* Unit tests: the agent's spec round-trips any bytes (newlines, quotes,
 * '=' in values), refuses truncated or malformed input, and layers each
 * worker's environment as documented (host < image < contract). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agentspec.h"

static void build(struct agent_spec *s)
{
	struct agent_worker *w;

	memset(s, 0, sizeof(*s));
	s->host = strdup("n1");
	s->prefix = true;
	s->grace_ms = 3000;
	s->cwd = strdup("/home/u/my proj");
	s->events = strdup(AGENT_EVENTS);
	s->control = strdup(AGENT_CONTROL);
	assert_int_equal(strv_push(&s->inherit, "HOME=/home/u"), 0);
	assert_int_equal(strv_push(&s->inherit, "MULTI=line1\nline2=\"x\""), 0);
	w = agentspec_add_worker(s, 4, 0, (char *[]){ "python3", "train.py", "", "a\nb", NULL });
	assert_non_null(w);
	assert_int_equal(strv_push(&w->env, "RANK=4"), 0);
	CPU_ZERO(&w->cpus);
	CPU_SET(0, &w->cpus);
	CPU_SET(1, &w->cpus);
	CPU_SET(5, &w->cpus);
	w->has_cpus = true;
	w = agentspec_add_worker(s, 5, 1, (char *[]){ "python3", NULL });
	assert_non_null(w);
	assert_int_equal(strv_push(&w->env, "RANK=5"), 0);
}

static void test_round_trip(void **state)
{
	struct agent_spec s, t;
	struct err e = { 0 };
	char *buf;
	size_t len;

	(void)state;
	build(&s);
	assert_int_equal(agentspec_format(&s, &buf, &len, &e), 0);
	assert_int_equal(agentspec_parse(buf, len, &t, &e), 0);
	assert_string_equal(t.host, "n1");
	assert_true(t.prefix);
	assert_false(t.quiet);
	assert_int_equal(t.grace_ms, 3000);
	assert_null(t.log_dir);
	assert_string_equal(t.cwd, "/home/u/my proj");
	assert_string_equal(t.events, "/.ctrun/events");
	assert_int_equal(t.inherit.n, 2);
	assert_string_equal(t.inherit.v[1], "MULTI=line1\nline2=\"x\"");
	assert_int_equal(t.n, 2);
	assert_int_equal(t.w[0].rank, 4);
	assert_int_equal(t.w[1].local_rank, 1);
	assert_int_equal(t.w[0].argv.n, 4);
	assert_string_equal(t.w[0].argv.v[2], "");
	assert_string_equal(t.w[0].argv.v[3], "a\nb");
	assert_true(t.w[0].has_cpus);
	assert_true(CPU_ISSET(5, &t.w[0].cpus));
	assert_false(CPU_ISSET(2, &t.w[0].cpus));
	assert_false(t.w[1].has_cpus);
	assert_string_equal(t.w[1].env.v[0], "RANK=5");
	assert_false(t.as_user);
	assert_false(t.pmi_fd3);
	assert_null(t.heartbeat_base);
	free(buf);
	agentspec_free(&t);
	/* --hang-timeout: where the agent makes the heartbeat files (h). */
	s.heartbeat_base = strdup("/tmp");
	assert_int_equal(agentspec_format(&s, &buf, &len, &e), 0);
	assert_non_null(memmem(buf, len, "h4:/tmp\n", 8));
	assert_int_equal(agentspec_parse(buf, len, &t, &e), 0);
	assert_string_equal(t.heartbeat_base, "/tmp");
	free(buf);
	agentspec_free(&t);
	/* The workers' identity (X): the agent switches to it first; the
	 * step's PMI2 socket at descriptor 3 (B). */
	s.as_user = true;
	s.pmi_fd3 = true;
	s.uid = 1003;
	s.gid = 4294967294L;
	assert_int_equal(agentspec_format(&s, &buf, &len, &e), 0);
	assert_non_null(memmem(buf, len, "X15:1003 4294967294\n", 20));
	assert_int_equal(agentspec_parse(buf, len, &t, &e), 0);
	assert_true(t.as_user);
	assert_true(t.pmi_fd3);
	assert_non_null(memmem(buf, len, "B1:1\n", 5));
	assert_int_equal(t.uid, 1003);
	assert_int_equal(t.gid, 4294967294L);
	free(buf);
	agentspec_free(&s);
	agentspec_free(&t);
}

static void test_truncated_or_malformed_is_refused(void **state)
{
	struct agent_spec s, t;
	struct err e = { 0 };
	char *buf;
	size_t len;
	static const char *const bad[] = {
		"",
		"V1:2\nZ0:\n",         /* wrong version */
		"H2:n1\nV1:1\nZ0:\n",  /* version not first */
		"V1:1\nA6:python\nZ0:\n", /* argv outside a worker */
		"V1:1\nW1:0\nZ0:\n",   /* worker without argv */
		"V1:1\nH9:n1\nZ0:\n",  /* length past the end */
		"V1:1\nI3:abc\nZ0:\n", /* not K=V */
		"V1:1\nq1:x\nZ0:\n",   /* unknown tag */
		"V1:1\nh3:tmp\nZ0:\n", /* heartbeat base not absolute */
		"V1:1\nX1:x\nZ0:\n",   /* identity: not "UID GID" */
		"V1:1\nX4:1003\nZ0:\n",
		"V1:1\nX9:-1 100\nZ0:\n",
		"V1:1\nX14:4294967295 100\nZ0:\n", /* (uid_t)-1 means "unchanged" */
		"V1:1\nZ0:\ntrailing", /* bytes after the end */
	};

	(void)state;
	build(&s);
	assert_int_equal(agentspec_format(&s, &buf, &len, &e), 0);
	/* Every proper prefix is incomplete; each in a buffer of its exact size,
	 * so reading past the end is a fault under ASan or valgrind. */
	for (size_t n = 0; n < len; n++) {
		char *prefix = malloc(n > 0 ? n : 1);

		memcpy(prefix, buf, n);
		assert_int_equal(agentspec_parse(prefix, n, &t, &e), -1);
		free(prefix);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		if (agentspec_parse(bad[i], strlen(bad[i]), &t, &e) != -1)
			fail_msg("accepted %s", bad[i]);
	assert_non_null(strstr(e.msg, "malformed"));
	free(buf);
	agentspec_free(&s);
}

static void test_environment_layers(void **state)
{
	struct agent_spec s;
	struct strv env = { 0 };
	struct err e = { 0 };
	char *container[] = { "PATH=/usr/bin", "HOME=/root", "IMAGE=1", NULL };

	(void)state;
	build(&s);
	assert_int_equal(strv_push(&s.w[0].env, "IMAGE=contract"), 0);
	assert_int_equal(agentspec_worker_env(&s, 0, container, &env, &e), 0);
	assert_string_equal(strv_getenv(&env, "PATH"), "/usr/bin");
	assert_string_equal(strv_getenv(&env, "HOME"), "/root");   /* image over host */
	assert_string_equal(strv_getenv(&env, "IMAGE"), "contract"); /* contract over image */
	assert_string_equal(strv_getenv(&env, "RANK"), "4");
	assert_string_equal(strv_getenv(&env, "MULTI"), "line1\nline2=\"x\"");
	strv_free(&env);
	agentspec_free(&s);
}

/* The runtime's layer (O) over the image's, library directories (J)
 * appended to LD_LIBRARY_PATH once, the worker's layer over both; and the
 * apptainer records (N, Y) survive a round trip. */
static void test_runtime_layer_and_library_dirs(void **state)
{
	struct agent_spec s, t;
	struct strv env = { 0 };
	struct err e = { 0 };
	char *container[] = { "CUDA_VISIBLE_DEVICES=2,3", "LD_LIBRARY_PATH=/opt/lib", NULL };
	char *bare[] = { "PATH=/bin", NULL };
	char *buf;
	size_t len;

	(void)state;
	build(&s);
	assert_int_equal(strv_push(&s.over, "CUDA_VISIBLE_DEVICES=0,1"), 0);
	assert_int_equal(strv_push(&s.libdirs, "/.singularity.d/libs"), 0);
	assert_int_equal(strv_push(&s.entry, "/.singularity.d/runscript"), 0);
	s.complete_env = true;
	assert_int_equal(agentspec_format(&s, &buf, &len, &e), 0);
	assert_int_equal(agentspec_parse(buf, len, &t, &e), 0);
	assert_string_equal(t.over.v[0], "CUDA_VISIBLE_DEVICES=0,1");
	assert_string_equal(t.libdirs.v[0], "/.singularity.d/libs");
	assert_string_equal(t.entry.v[0], "/.singularity.d/runscript");
	assert_true(t.complete_env);
	assert_int_equal(agentspec_worker_env(&t, 0, container, &env, &e), 0);
	assert_string_equal(strv_getenv(&env, "CUDA_VISIBLE_DEVICES"), "0,1");
	assert_string_equal(strv_getenv(&env, "LD_LIBRARY_PATH"), "/opt/lib:/.singularity.d/libs");
	strv_free(&env);
	/* No LD_LIBRARY_PATH in the image: the directory alone; the worker's
	 * own CUDA_VISIBLE_DEVICES (--gpu-isolation) over the runtime's. */
	assert_int_equal(strv_push(&t.w[0].env, "CUDA_VISIBLE_DEVICES=1"), 0);
	assert_int_equal(agentspec_worker_env(&t, 0, bare, &env, &e), 0);
	assert_string_equal(strv_getenv(&env, "LD_LIBRARY_PATH"), "/.singularity.d/libs");
	assert_string_equal(strv_getenv(&env, "CUDA_VISIBLE_DEVICES"), "1");
	strv_free(&env);
	/* Already there: not added twice. */
	char *again[] = { "LD_LIBRARY_PATH=/.singularity.d/libs:/x", NULL };
	assert_int_equal(agentspec_worker_env(&t, 0, again, &env, &e), 0);
	assert_string_equal(strv_getenv(&env, "LD_LIBRARY_PATH"), "/.singularity.d/libs:/x");
	strv_free(&env);
	free(buf);
	agentspec_free(&s);
	agentspec_free(&t);
	/* A relative library directory or entrypoint is malformed. */
	assert_int_equal(agentspec_parse("V1:1\nJ3:lib\nZ0:\n", 16, &t, &e), -1);
	assert_int_equal(agentspec_parse("V1:1\nY2:rc\nZ0:\n", 15, &t, &e), -1);
	assert_int_equal(agentspec_parse("V1:1\nN1:1\nZ0:\n", 14, &t, &e), 0);
	assert_true(t.complete_env);
	assert_false(t.image_scripts);
	agentspec_free(&t);
	/* M: source the image's /.singularity.d/env scripts (imageenv.h). */
	assert_int_equal(agentspec_parse("V1:1\nM1:1\nZ0:\n", 14, &t, &e), 0);
	assert_true(t.image_scripts);
	assert_false(t.complete_env);
	agentspec_free(&t);
	assert_int_equal(agentspec_parse("V1:1\nM1:2\nZ0:\n", 14, &t, &e), -1);
	/* F: the candidates are the image's default command, 0|1 only. */
	assert_int_equal(agentspec_parse("V1:1\nF1:1\nZ0:\n", 14, &t, &e), 0);
	assert_true(t.entry_default);
	assert_false(t.image_scripts);
	agentspec_free(&t);
	assert_int_equal(agentspec_parse("V1:1\nF1:x\nZ0:\n", 14, &t, &e), -1);
	assert_int_equal(agentspec_parse("V1:1\nF2:11\nZ0:\n", 15, &t, &e), -1);
	build(&s);
	s.image_scripts = true;
	assert_int_equal(agentspec_format(&s, &buf, &len, &e), 0);
	assert_int_equal(agentspec_parse(buf, len, &t, &e), 0);
	assert_true(t.image_scripts);
	assert_false(t.entry_default);
	free(buf);
	agentspec_free(&s);
	agentspec_free(&t);
	build(&s);
	assert_int_equal(strv_push(&s.entry, "/etc/rc"), 0);
	s.entry_default = true;
	assert_int_equal(agentspec_format(&s, &buf, &len, &e), 0);
	assert_int_equal(agentspec_parse(buf, len, &t, &e), 0);
	assert_true(t.entry_default);
	assert_string_equal(t.entry.v[0], "/etc/rc");
	free(buf);
	agentspec_free(&s);
	agentspec_free(&t);
}

/* --env KEY (T): the host's value over the image's, under the runtime's
 * layer (so --nv's library directory is still appended) and under the
 * worker's --env KEY=VALUE; both new records survive a round trip. */
static void test_host_value_layer(void **state)
{
	struct agent_spec s, t;
	struct strv env = { 0 };
	struct err e = { 0 };
	char *container[] = { "CUDA_VERSION=12.9", "LD_LIBRARY_PATH=/img/lib", "LANG=C", NULL };
	char *buf;
	size_t len;

	(void)state;
	build(&s);
	assert_int_equal(strv_push(&s.inherit, "CUDA_VERSION=11.0"), 0);
	assert_int_equal(strv_push(&s.host_over, "CUDA_VERSION=11.0"), 0);
	assert_int_equal(strv_push(&s.host_over, "LD_LIBRARY_PATH=/host/lib"), 0);
	assert_int_equal(strv_push(&s.host_over, "LANG=de_DE.UTF-8"), 0);
	assert_int_equal(strv_push(&s.host_drop, "SECRET=1"), 0);
	assert_int_equal(strv_push(&s.libdirs, "/.singularity.d/libs"), 0);
	assert_int_equal(strv_push(&s.w[0].env, "LANG=C.UTF-8"), 0); /* --env LANG=C.UTF-8 */
	assert_int_equal(agentspec_format(&s, &buf, &len, &e), 0);
	assert_int_equal(agentspec_parse(buf, len, &t, &e), 0);
	assert_int_equal(t.host_over.n, 3);
	assert_string_equal(t.host_drop.v[0], "SECRET=1");
	assert_int_equal(agentspec_worker_env(&t, 0, container, &env, &e), 0);
	assert_string_equal(strv_getenv(&env, "CUDA_VERSION"), "11.0");
	assert_string_equal(strv_getenv(&env, "LD_LIBRARY_PATH"), "/host/lib:/.singularity.d/libs");
	assert_string_equal(strv_getenv(&env, "LANG"), "C.UTF-8");
	strv_free(&env);
	/* Without T the image's value wins over the host's (I), as before. */
	strv_free(&t.host_over);
	assert_int_equal(agentspec_worker_env(&t, 0, container, &env, &e), 0);
	assert_string_equal(strv_getenv(&env, "CUDA_VERSION"), "12.9");
	strv_free(&env);
	free(buf);
	agentspec_free(&s);
	agentspec_free(&t);
	assert_int_equal(agentspec_parse("V1:1\nT2:=x\nZ0:\n", 15, &t, &e), -1);
	assert_int_equal(agentspec_parse("V1:1\nD1:x\nZ0:\n", 14, &t, &e), -1);
}

/* --clean-env under enroot/ch-run (D): what the runtime carried in of the
 * host's goes, unless changed by the image or named in its
 * /etc/environment; a PATH is left. */
static void test_clean_env_drops_what_the_runtime_carried_in(void **state)
{
	struct agent_spec s;
	struct strv own = { 0 };
	char *image[] = { "LANG=C.UTF-8", NULL };

	(void)state;
	memset(&s, 0, sizeof(s));
	assert_int_equal(strv_push(&s.host_drop, "SECRET=1"), 0);
	assert_int_equal(strv_push(&s.host_drop, "PATH=/host/bin"), 0);
	assert_int_equal(strv_push(&s.host_drop, "LANG=C.UTF-8"), 0);
	assert_int_equal(strv_push(&s.host_drop, "EDITOR=vi"), 0);
	assert_int_equal(strv_push(&own, "SECRET=1"), 0);
	assert_int_equal(strv_push(&own, "PATH=/host/bin"), 0);
	assert_int_equal(strv_push(&own, "LANG=C.UTF-8"), 0);  /* the image sets it too */
	assert_int_equal(strv_push(&own, "EDITOR=nano"), 0);   /* changed in the container */
	assert_int_equal(strv_push(&own, "SLURM_JOB_ID=5"), 0);
	assert_int_equal(agentspec_drop_host(&s, &own, image), 0);
	assert_null(strv_getenv(&own, "SECRET"));
	assert_string_equal(strv_getenv(&own, "PATH"), AGENT_DEFAULT_PATH);
	assert_string_equal(strv_getenv(&own, "LANG"), "C.UTF-8");
	assert_string_equal(strv_getenv(&own, "EDITOR"), "nano");
	assert_string_equal(strv_getenv(&own, "SLURM_JOB_ID"), "5");
	assert_int_equal(own.n, 4);
	assert_null(own.v[own.n]);
	strv_free(&own);
	/* No D records: nothing changes, no PATH added. */
	strv_free(&s.host_drop);
	assert_int_equal(strv_push(&own, "SECRET=1"), 0);
	assert_int_equal(agentspec_drop_host(&s, &own, NULL), 0);
	assert_int_equal(own.n, 1);
	strv_free(&own);
}

static void test_inheritable(void **state)
{
	(void)state;
	assert_true(agentspec_inheritable("SLURM_JOB_ID=5"));
	assert_true(agentspec_inheritable("HOME=/home/u"));
	assert_true(agentspec_inheritable("PATHX=1"));
	assert_false(agentspec_inheritable("PATH=/usr/bin"));
	assert_false(agentspec_inheritable("LD_LIBRARY_PATH=/usr/local/cuda/lib64"));
	assert_false(agentspec_inheritable("ENROOT_DATA_PATH=/x"));
	assert_false(agentspec_inheritable("APPTAINERENV_FOO=1"));
	assert_false(agentspec_inheritable("SINGULARITY_BIND=/x"));
	assert_false(agentspec_inheritable("noequals"));
	assert_false(agentspec_inheritable("CTRUN_JOB_SECRET=00")); /* ctrun's, not the workers' */
	assert_true(agentspec_inheritable("CTRUN_RDZV_KEY=00")); /* check/bench in an image */
}

static void test_cpulist(void **state)
{
	cpu_set_t set;
	char buf[64];

	(void)state;
	assert_int_equal(cpulist_parse("0-3,8,10-11", &set), 0);
	assert_int_equal(CPU_COUNT(&set), 7);
	assert_int_equal(cpulist_format(&set, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "0-3,8,10-11");
	assert_int_equal(cpulist_parse("3-1", &set), -1);
	assert_int_equal(cpulist_parse("1,", &set), -1);
	assert_int_equal(cpulist_parse("a", &set), -1);
	assert_int_equal(cpulist_parse("99999", &set), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_truncated_or_malformed_is_refused),
		cmocka_unit_test(test_environment_layers),
		cmocka_unit_test(test_runtime_layer_and_library_dirs),
		cmocka_unit_test(test_host_value_layer),
		cmocka_unit_test(test_clean_env_drops_what_the_runtime_carried_in),
		cmocka_unit_test(test_inheritable),
		cmocka_unit_test(test_cpulist),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
