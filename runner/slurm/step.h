/* step.h - acting on this job's Slurm steps from inside the job, with
 * Slurm's own commands (scancel, squeue), each given at most 5 s. */
#ifndef CTRUN_STEP_H
#define CTRUN_STEP_H

#include <stddef.h>
#include <sys/types.h>

#include "strv.h"
#include "topology.h"

/* scancel --signal=SIG JOB.STEP: the step's tasks get sig.  0 when
 * scancel said so, -1 otherwise. */
int step_signal(const char *job_id, const char *step_id, int sig);

/* Starts scancel --signal=SIG JOB.STEP (sig 0: scancel JOB.STEP, the step
 * cancelled, its tasks killed) and returns its pid (0 if it could not
 * start) without waiting: where a node of the step no longer answers,
 * scancel waits for it as long as Slurm's MessageTimeout.  The caller reaps it. */
pid_t step_scancel_start(const char *job_id, const char *step_id, int sig);

/* The numbered steps of a job that Slurm lists as running ("0", "3"; not
 * the batch or extern step), appended to out.  -1 when squeue failed. */
int job_steps(const char *job_id, struct strv *out);

/* The ids of uid's jobs that Slurm lists in a state other than an ended
 * one (squeue --states=all: pending, running, suspended, completing ...),
 * appended to out.  A job Slurm no longer lists, or lists as completed,
 * cancelled, failed, timed out ..., is over.  -1 when squeue failed or
 * answered what squeue_live_jobs_parse refuses: then nothing is known. */
int user_live_jobs(uid_t uid, struct strv *out);
/* The parser of that answer, lines "JOBID STATE" (%A %T): the ids whose
 * state is not an ended one, appended to out; -1 on any other line. */
int squeue_live_jobs_parse(const char *text, struct strv *out);

/* The job's state as Slurm lists it (squeue %T: RUNNING, COMPLETING,
 * CANCELLED, PREEMPTED, TIMEOUT ...) into state.  -1 when Slurm does not
 * list the job (it ended long enough ago) or squeue did not answer. */
int job_state(const char *job_id, char *state, size_t size);
/* The parser of that answer: its one word, else -1. */
int squeue_job_state_parse(const char *text, char *state, size_t size);

/* Fail-fast across nodes: starts `scancel --signal=URG JOB.STEP` for this
 * step and returns its pid (0 if it could not start) without waiting: the
 * caller goes on with its workers and reaps it (step_helper_finish at the
 * end at the latest). */
pid_t step_cancel_start(const struct topo *t);

/* The same scancel as an argv that lives as long as the struct: what
 * ctrun's guardian runs when ctrun itself is killed (supervise.h
 * on_death), so the other nodes stop as they would on any failure. */
struct step_cancel {
	char step[160], signal_opt[32];
	char *argv[5];
};
int step_cancel_argv(const struct topo *t, struct step_cancel *c);

/* step_cancel_start for a supervisor's on_first_failure callback (arg: the topo). */
pid_t step_cancel_cb(void *topo);

/* Keeps a helper step_scancel_start started, to reap it later. */
void step_helper_keep(pid_t pid);
/* Reaps the helpers kept that have ended; with wait_ms, waits that long
 * for the others (then kills them). */
void step_helpers_reap(long wait_ms);

/* Waits for a helper step_cancel_start started, at most 5 s (then kills
 * it); nothing when it was reaped already (pid 0). */
void step_helper_finish(pid_t pid);

#endif
