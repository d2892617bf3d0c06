/* workerenv.c - torchrun's environment contract, one worker at a time. */
#include "workerenv.h"

#include "envctl.h"
#include "jobkey.h"
#include "watchproto.h"

#include <stdlib.h>
#include <string.h>

static int set_long(struct strv *s, const char *key, long v)
{
	return strv_pushf(s, "%s=%ld", key, v);
}

static bool base_has(char *const *base, const char *key)
{
	size_t len = strlen(key);

	for (char *const *p = base; p != NULL && *p != NULL; p++)
		if (strncmp(*p, key, len) == 0 && (*p)[len] == '=')
			return true;
	return false;
}

int workerenv_vars(const struct topo *t, const struct options *o, char *const *base,
		   long restart, long i, struct strv *out, struct err *e)
{
	long rank = t->rank_base + i, local = t->local_rank_base + i;
	int ret = 0;

	ret |= set_long(out, "RANK", rank);
	ret |= set_long(out, "LOCAL_RANK", local);
	ret |= set_long(out, "WORLD_SIZE", t->world_size);
	ret |= set_long(out, "LOCAL_WORLD_SIZE", t->local_world_size);
	ret |= set_long(out, "GROUP_RANK", t->node_rank);
	ret |= set_long(out, "GROUP_WORLD_SIZE", t->nnodes);
	ret |= strv_push(out, "ROLE_NAME=default");
	ret |= set_long(out, "ROLE_RANK", rank);
	ret |= set_long(out, "ROLE_WORLD_SIZE", t->world_size);
	ret |= set_long(out, "NODE_RANK", t->node_rank);
	ret |= set_long(out, "NNODES", t->nnodes);
	ret |= strv_pushf(out, "MASTER_ADDR=%s", t->master_addr);
	ret |= set_long(out, "MASTER_PORT", t->master_port);
	ret |= set_long(out, "TORCHELASTIC_RESTART_COUNT", restart);
	ret |= set_long(out, "TORCHELASTIC_MAX_RESTARTS", o->max_restarts);
	ret |= strv_pushf(out, "TORCHELASTIC_RUN_ID=%s", t->job_id);
	if (t->local_world_size > 1 && !base_has(base, "OMP_NUM_THREADS"))
		ret |= strv_push(out, "OMP_NUM_THREADS=1");
	if (!base_has(base, "TORCH_NCCL_ASYNC_ERROR_HANDLING"))
		ret |= strv_push(out, "TORCH_NCCL_ASYNC_ERROR_HANDLING=1");
	/* Task mode in an image: a container, so a PID and a user namespace,
	 * per task, and every task is the same PID in its own.  Open MPI's
	 * shared-memory transport (vader) tells the segment a rank made from a
	 * neighbour's by the maker's PID, so each rank takes its neighbour's
	 * segment for its own and crashes in its first collective (SIGSEGV;
	 * its CMA copies fail across user namespaces too): a node's ranks talk
	 * over the network instead, unless the user chose the transports. */
	if (o->image != NULL && t->mode == MODE_TASK && t->ntasks_on_node > 1 &&
	    !base_has(base, "OMPI_MCA_btl"))
		ret |= strv_push(out, "OMPI_MCA_btl=^vader");
	/* NCCL's bootstrap and gloo otherwise guess an interface, and a guess
	 * of docker0 or a management network hangs the job: use the one that
	 * routes to MASTER_ADDR unless the user chose. */
	if (t->ifname[0] != '\0' && !base_has(base, "NCCL_SOCKET_IFNAME"))
		ret |= strv_pushf(out, "NCCL_SOCKET_IFNAME=%s", t->ifname);
	if (t->ifname[0] != '\0' && !base_has(base, "GLOO_SOCKET_IFNAME"))
		ret |= strv_pushf(out, "GLOO_SOCKET_IFNAME=%s", t->ifname);
	/* Default: every worker sees the node's GPUs and picks one by
	 * LOCAL_RANK, which keeps NCCL's P2P/NVLink paths; isolation trades
	 * that for a worker that cannot touch its neighbours' GPUs. */
	if (o->gpu_isolation && t->gpus.n > 0) {
		size_t g = t->gpus.n == 1 ? 0 : (size_t)local % t->gpus.n;

		ret |= strv_pushf(out, "CUDA_VISIBLE_DEVICES=%s", t->gpus.v[g]);
	}
	if (ret != 0)
		return err_sys(e, EXIT_CTRUN, "worker environment");
	/* --env KEY: the host's value, under every --env KEY=VALUE.  In a
	 * container it sits under the runtime's layer instead (the agent's
	 * spec record T, agentspec.h), so only here without one. */
	for (size_t k = 0; k < o->env.n && o->image == NULL; k++) {
		const char *v = strchr(o->env.v[k], '=') == NULL ? envp_get(base, o->env.v[k])
								  : NULL;

		if (v != NULL && strv_setenv(out, o->env.v[k], v, 1) < 0)
			return err_sys(e, EXIT_CTRUN, "worker environment");
	}
	for (size_t k = 0; k < o->env.n; k++) {
		const char *kv = o->env.v[k];
		const char *eq = strchr(kv, '=');
		char *key;
		int rc;

		if (eq == NULL)
			continue;
		key = strndup(kv, (size_t)(eq - kv));
		if (key == NULL)
			return err_sys(e, EXIT_CTRUN, "worker environment");
		rc = strv_setenv(out, key, eq + 1, 1);
		free(key);
		if (rc < 0)
			return err_sys(e, EXIT_CTRUN, "worker environment");
	}
	strv_sort(out);
	return 0;
}

int workerenv_base(const struct options *o, char *const *envp, struct strv *out)
{
	for (char *const *p = envp; p != NULL && *p != NULL; p++)
		if ((!o->clean_env || envctl_clean_keep(*p)) && strv_push(out, *p) < 0)
			return -1;
	if (!o->clean_env)
		return 0;
	/* Nothing of the host's but what was asked: --env KEY puts one back. */
	for (size_t k = 0; k < o->env.n; k++) {
		const char *v = strchr(o->env.v[k], '=') == NULL ? envp_get(envp, o->env.v[k])
								  : NULL;

		if (v != NULL && strv_setenv(out, o->env.v[k], v, 1) < 0)
			return -1;
	}
	if (strv_getenv(out, "PATH") == NULL &&
	    strv_setenv(out, "PATH", ENVCTL_DEFAULT_PATH, 1) < 0)
		return -1;
	return 0;
}

int workerenv_build(const struct topo *t, const struct options *o, char *const *base,
		    long restart, long i, struct strv *out, struct err *e)
{
	struct strv vars = { 0 };
	int rv = -1;

	if (workerenv_base(o, base, out) < 0) {
		err_sys(e, EXIT_CTRUN, "worker environment");
		goto out;
	}
	/* The job's secret is ctrun's (jobkey.h), not the workers', and so is
	 * the batch ctrun's watch (in a container no CTRUN_ variable passes). */
	strv_unsetenv(out, JOBKEY_SECRET_ENV);
	strv_unsetenv(out, WATCH_ENV);
	strv_unsetenv(out, TOPO_BATCH_NODES_ENV);
	if (workerenv_vars(t, o, out->v, restart, i, &vars, e) < 0)
		goto out;
	for (size_t k = 0; k < vars.n; k++) {
		char *eq = strchr(vars.v[k], '=');

		*eq = '\0';
		if (strv_setenv(out, vars.v[k], eq + 1, 1) < 0) {
			err_sys(e, EXIT_CTRUN, "worker environment");
			goto out;
		}
		*eq = '=';
	}
	rv = 0;
out:
	strv_free(&vars);
	return rv;
}
