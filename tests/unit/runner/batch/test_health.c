/* Unit tests: the nodes' health check (health.h, nodehealth.h): each
 * node's line and srun's own failure lines are read as they are written,
 * a GPU the job has whose device file is gone makes the node unhealthy,
 * and the site's command decides by its exit status, its first line
 * saying why. */
#include "ctrtest.h"

#include "health.h"
#include "nodehealth.h"

static void test_a_nodes_line(void **state)
{
	char host[64], why[256];
	long step = -1;

	(void)state;
	assert_int_equal(health_parse_line("ctrun-health: n1 12 ok", host, sizeof(host), &step,
					   why, sizeof(why)), 1);
	assert_string_equal(host, "n1");
	assert_int_equal(step, 12);
	assert_int_equal(health_parse_line("ctrun-health: n3 12 bad: GPU 2 of the job: "
					   "/dev/nvidia2 is missing", host, sizeof(host), &step,
					   why, sizeof(why)), 0);
	assert_string_equal(host, "n3");
	assert_string_equal(why, "GPU 2 of the job: /dev/nvidia2 is missing");
	/* Anything else is no answer. */
	assert_int_equal(health_parse_line("ctrun-health: n1 12 fine", host, sizeof(host), &step,
					   why, sizeof(why)), -1);
	assert_int_equal(health_parse_line("ctrun-health: n1 x ok", host, sizeof(host), &step,
					   why, sizeof(why)), -1);
	assert_int_equal(health_parse_line("ctrun-health: n1 12 bad: ", host, sizeof(host), &step,
					   why, sizeof(why)), -1);
	assert_int_equal(health_parse_line("[rank0]: ctrun-health: n1 1 ok", host, sizeof(host),
					   &step, why, sizeof(why)), -1);
}

/* As Slurm 22.05 and 26.05 write it when a node's slurmd is gone. */
static void test_srun_names_the_node_it_could_not_start_on(void **state)
{
	char host[64], why[256];

	(void)state;
	assert_int_equal(health_srun_failure("srun: error: Task launch for StepId=1.2 failed on "
					     "node cngn2: Communication connection failure",
					     host, sizeof(host), why, sizeof(why)), 0);
	assert_string_equal(host, "cngn2");
	assert_string_equal(why, "srun could not start there: Communication connection failure");
	assert_int_equal(health_srun_failure("srun: error: Application launch failed: "
					     "Communication connection failure", host,
					     sizeof(host), why, sizeof(why)), -1);
}

static void test_a_gpu_of_the_job_without_its_device_file(void **state)
{
	struct tmpdir *td = *state;
	const char *dir = td->dir;
	char link[PATH_MAX], why[256] = "";
	char *two[] = { "0", "1", NULL }, *uuid[] = { "GPU-0b1c", NULL };

	/* nvidia0 a character device (a link to /dev/null), nvidia1 a file. */
	snprintf(link, sizeof(link), "%s/nvidia0", dir);
	assert_int_equal(symlink("/dev/null", link), 0);
	snprintf(link, sizeof(link), "%s/nvidia1", dir);
	fclose(fopen(link, "w"));
	assert_int_equal(nodehealth_gpu_files(dir, two, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "GPU 1 of the job"));
	assert_non_null(strstr(why, "is no character device"));
	unlink(link);
	assert_int_equal(nodehealth_gpu_files(dir, two, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "nvidia1 is missing"));
	two[1] = NULL;
	assert_int_equal(nodehealth_gpu_files(dir, two, why, sizeof(why)), 0);
	/* A UUID names no file: the CUDA check's to judge. */
	assert_int_equal(nodehealth_gpu_files(dir, uuid, why, sizeof(why)), 0);
}

/* The site's command: exit 0 is healthy; otherwise its first line says why. */
static void test_the_sites_command_decides(void **state)
{
	struct options o;
	struct topo t = { .host = "n1" };
	char *env[] = { NULL }, why[400] = "";

	(void)state;
	options_init(&o);
	o.health_check = strdup("true");
	assert_int_equal(nodehealth_check(&o, &t, env, why, sizeof(why)), 0);
	free(o.health_check);
	o.health_check = strdup("sh -c 'echo");
	/* No shell: the words as they are ('echo is sh's unterminated quote). */
	assert_int_equal(nodehealth_check(&o, &t, env, why, sizeof(why)), -1);
	free(o.health_check);
	o.health_check = strdup("ls /nonexistent-ctrun-health");
	assert_int_equal(nodehealth_check(&o, &t, env, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "[run] health_check 'ls /nonexistent-ctrun-health' exited "
				    "with status 2: ls: cannot access"));
	free(o.health_check);
	o.health_check = strdup("/nonexistent/check");
	assert_int_equal(nodehealth_check(&o, &t, env, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "status 127: cannot run /nonexistent/check"));
	free(o.health_check);
	o.health_check = strdup("sleep 30");
	o.health_timeout = 2;
	assert_int_equal(nodehealth_check(&o, &t, env, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "did not end within 2 s"));
	options_free(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_a_nodes_line),
		cmocka_unit_test(test_srun_names_the_node_it_could_not_start_on),
		cmocka_unit_test_setup_teardown(test_a_gpu_of_the_job_without_its_device_file,
						tmpdir_setup, tmpdir_teardown),
		cmocka_unit_test(test_the_sites_command_decides),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
