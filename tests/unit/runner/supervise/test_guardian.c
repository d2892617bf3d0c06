/* Unit tests: the guardian, which kills the workers' process groups (and cancels the step) when ctrun itself dies, and forgets groups that are gone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define CTRTEST_SUPERVISE
#include "ctrtest.h"

/* A group the guardian was told is gone is not killed when ctrun dies
 * later: its id may belong to another process by then. */
static void test_guardian_forgets_groups_that_are_gone(void **state)
{
	struct guardian g;
	struct err e = { 0 };
	pid_t kept, killed;

	(void)state;
	kept = fork();
	if (kept == 0) {
		setpgid(0, 0);
		pause();
		_exit(0);
	}
	killed = fork();
	if (killed == 0) {
		setpgid(0, 0);
		pause();
		_exit(0);
	}
	setpgid(kept, kept);
	setpgid(killed, killed);
	assert_int_equal(guardian_start(&g, 4, NULL, &e), 0);
	guardian_add(&g, kept);
	guardian_add(&g, killed);
	guardian_forget(&g, kept);
	close(g.fd); /* ctrun "dies": EOF without the goodbye */
	assert_int_equal(waitpid(g.pid, NULL, 0), g.pid);
	assert_int_equal(waitpid(killed, NULL, 0), killed); /* SIGKILLed */
	assert_int_equal(kill(kept, 0), 0);
	kill(kept, SIGKILL);
	waitpid(kept, NULL, 0);
}

/* on_death runs when ctrun dies (node mode cancels its step with it), after
 * the groups are killed, and not when ctrun said goodbye. */
static void test_guardian_runs_on_death_only_when_ctrun_dies(void **state)
{
	char dir[] = "/tmp/ctrun-guardian-XXXXXX", died[PATH_MAX], bye[PATH_MAX];
	char *on_died[] = { "touch", died, NULL }, *on_bye[] = { "touch", bye, NULL };
	struct guardian g;
	struct err e = { 0 };
	pid_t worker;
	int status;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(died, sizeof(died), "%s/died", dir);
	snprintf(bye, sizeof(bye), "%s/bye", dir);
	worker = fork();
	if (worker == 0) {
		setpgid(0, 0);
		pause();
		_exit(0);
	}
	setpgid(worker, worker);
	assert_int_equal(guardian_start(&g, 2, on_died, &e), 0);
	guardian_add(&g, worker);
	close(g.fd); /* ctrun "dies" */
	assert_int_equal(waitpid(g.pid, &status, 0), g.pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0); /* touch's status */
	assert_int_equal(waitpid(worker, &status, 0), worker);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	assert_int_equal(access(died, F_OK), 0);

	assert_int_equal(guardian_start(&g, 2, on_bye, &e), 0);
	guardian_stop(&g);
	assert_int_equal(access(bye, F_OK), -1);
	unlink(died);
	rmdir(dir);
}

static void test_sigkill_of_ctrun_lets_the_guardian_kill_everything(void **state)
{
	const char *script = "sleep 30 & echo $! > $TDIR/gc$RANK; echo $$ > $TDIR/pid$RANK; wait";
	pid_t pids[4];
	long long t0;
	bool all_gone = false;

	(void)state;
	prepare(&rn, 2, script);
	start(&rn, 2);
	pids[0] = read_pid(&rn, "pid0");
	pids[1] = read_pid(&rn, "pid1");
	pids[2] = read_pid(&rn, "gc0");
	pids[3] = read_pid(&rn, "gc1");
	kill(rn.pid, SIGKILL);
	waitpid(rn.pid, NULL, 0);
	rn.pid = 0;
	close(rn.res);
	t0 = mono_ms();
	while (!all_gone && mono_ms() - t0 < HANG_GUARD_MS) {
		all_gone = true;
		for (int i = 0; i < 4; i++)
			all_gone = all_gone && gone(pids[i]);
		usleep(10000);
	}
	assert_true(all_gone);
}

/* The guardian keeps nothing of ctrun's: no stdout/stderr (a reader of
 * ctrun's output must see EOF when ctrun goes) and not its process group. */
static void test_guardian_holds_no_stdio_and_has_its_own_group(void **state)
{
	char path[PATH_MAX], link[PATH_MAX], *kids, *tok, *save = NULL;
	pid_t worker, guardian = 0;
	int fds = 0;

	(void)state;
	prepare(&rn, 1, "echo $$ > $TDIR/pid0; exec sleep 30");
	start(&rn, 1);
	worker = read_pid(&rn, "pid0");
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)rn.pid, (int)rn.pid);
	kids = read_file(path, NULL);
	assert_non_null(kids);
	for (tok = strtok_r(kids, " \n", &save); tok != NULL; tok = strtok_r(NULL, " \n", &save))
		if (atoi(tok) != worker)
			guardian = atoi(tok);
	free(kids);
	assert_true(guardian > 0);
	assert_int_equal(getpgid(guardian), guardian);
	for (int fd = 0; fd < 64; fd++) {
		ssize_t len;

		snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)guardian, fd);
		len = readlink(path, link, sizeof(link) - 1);
		if (len < 0)
			continue;
		link[len] = '\0';
		fds++;
		assert_null(strstr(link, rn.dir));
		assert_true(strcmp(link, "/dev/null") == 0 || strncmp(link, "pipe:", 5) == 0);
	}
	assert_int_equal(fds, 4); /* /dev/null as 0-2 and its pipe from ctrun */
	kill(rn.pid, SIGTERM);
	finish_result(&rn);
	reap_child(&rn);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_guardian_forgets_groups_that_are_gone),
		cmocka_unit_test(test_guardian_runs_on_death_only_when_ctrun_dies),
		cmocka_unit_test_teardown(test_sigkill_of_ctrun_lets_the_guardian_kill_everything, teardown),
		cmocka_unit_test_teardown(test_guardian_holds_no_stdio_and_has_its_own_group, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
