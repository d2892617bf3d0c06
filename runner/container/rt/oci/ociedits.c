/* ociedits.c - a container's edits from the host (edits.h) in an OCI
 * config.json, as the CDI library edits an OCI spec (pkg/cdi/
 * container-edits.go): device nodes and their device-cgroup rules,
 * mounts, hooks at their stages, additional groups.  Rootless, a node is
 * the host's bound (runc binds a node from its container path, wrong
 * where hostPath differs, so ctrun writes the bind itself). */
#include "oci.h"

#include <json.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

static json_object *sub(json_object *o, const char *k, json_type t)
{
	json_object *c;

	if (json_object_object_get_ex(o, k, &c) && json_object_is_type(c, t))
		return c;
	c = t == json_type_array ? json_object_new_array() : json_object_new_object();
	if (c != NULL && json_object_object_add(o, k, c) < 0)
		return NULL;
	return c;
}

static json_object *strarr(const struct strv *v)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; a != NULL && i < v->n; i++)
		if (json_object_array_add(a, json_object_new_string(v->v[i])) < 0) {
			json_object_put(a);
			return NULL;
		}
	return a;
}

static int add_mount(json_object *mounts, const char *src, const char *dst, const char *type,
		     json_object *opts)
{
	json_object *m = json_object_new_object();

	if (m == NULL || opts == NULL) {
		json_object_put(m);
		json_object_put(opts);
		return -1;
	}
	json_object_object_add(m, "destination", json_object_new_string(dst));
	json_object_object_add(m, "type", json_object_new_string(type));
	json_object_object_add(m, "source", json_object_new_string(src));
	json_object_object_add(m, "options", opts);
	return json_object_array_add(mounts, m);
}

static int node(json_object *devs, json_object *rules, const struct ctr_edit_node *n,
		const struct ctr_spec *s)
{
	json_object *o = json_object_new_object(), *r;
	char type[2] = { n->type, '\0' };
	/* The library's defaults: the host node's mode, the process's owner. */
	unsigned mode = n->mode_asked ? n->mode : n->host_same ? n->host_mode : 0666;
	long long uid = n->uid_asked ? (long long)n->uid : s->uid > 0 ? (long long)s->uid : 0;
	long long gid = n->gid_asked ? (long long)n->gid : s->gid > 0 ? (long long)s->gid : 0;

	if (o == NULL)
		return -1;
	json_object_object_add(o, "path", json_object_new_string(n->path));
	json_object_object_add(o, "type", json_object_new_string(type));
	json_object_object_add(o, "major", json_object_new_int64(n->major));
	json_object_object_add(o, "minor", json_object_new_int64(n->minor));
	json_object_object_add(o, "fileMode", json_object_new_int64(mode));
	json_object_object_add(o, "uid", json_object_new_int64(uid));
	json_object_object_add(o, "gid", json_object_new_int64(gid));
	if (json_object_array_add(devs, o) < 0) {
		json_object_put(o);
		return -1;
	}
	if (n->type == 'p')
		return 0;
	if ((r = json_object_new_object()) == NULL)
		return -1;
	json_object_object_add(r, "allow", json_object_new_boolean(1));
	json_object_object_add(r, "type", json_object_new_string(type));
	json_object_object_add(r, "major", json_object_new_int64(n->major));
	json_object_object_add(r, "minor", json_object_new_int64(n->minor));
	json_object_object_add(r, "access", json_object_new_string(n->access));
	return json_object_array_add(rules, r);
}

static int hook(json_object *hooks, const struct ctr_edit_hook *h)
{
	json_object *stage = sub(hooks, ctr_hook_stage_names[h->stage], json_type_array);
	json_object *o = json_object_new_object();

	if (stage == NULL || o == NULL) {
		json_object_put(o);
		return -1;
	}
	json_object_object_add(o, "path", json_object_new_string(h->path));
	if (h->args.n > 0)
		json_object_object_add(o, "args", strarr(&h->args));
	if (h->env.n > 0)
		json_object_object_add(o, "env", strarr(&h->env));
	if (h->timeout > 0)
		json_object_object_add(o, "timeout", json_object_new_int64(h->timeout));
	return json_object_array_add(stage, o);
}

static int nodes(json_object *config, json_object *mounts, const struct ctr_spec *s)
{
	const struct ctr_edits *d = &s->edits;
	json_object *lx = sub(config, "linux", json_type_object), *res, *devs, *rules;

	if (lx == NULL || (res = sub(lx, "resources", json_type_object)) == NULL ||
	    (devs = sub(lx, "devices", json_type_array)) == NULL ||
	    (rules = sub(res, "devices", json_type_array)) == NULL)
		return -1;
	/* The device cgroup starts from "deny all", as podman writes it: runc
	 * denies all first by itself, crun applies only the rules it is
	 * given, so without it a node's narrowed access holds nowhere there.
	 * The runtimes add their default nodes (null, zero, tty...) after. */
	if (ctr_edits_can(s) & CTR_EDIT_NODES_MADE) {
		json_object *deny = json_object_new_object(), *n = json_object_new_array();

		if (deny == NULL || n == NULL) {
			json_object_put(deny);
			json_object_put(n);
			return -1;
		}
		json_object_object_add(deny, "allow", json_object_new_boolean(0));
		json_object_object_add(deny, "access", json_object_new_string("rwm"));
		json_object_array_add(n, deny);
		for (size_t i = 0; i < json_object_array_length(rules); i++)
			json_object_array_add(n, json_object_get(json_object_array_get_idx(rules, i)));
		json_object_object_add(res, "devices", n);
		rules = n;
	}
	for (size_t i = 0; i < d->nnodes; i++) {
		const struct ctr_edit_node *n = &d->nodes[i];

		if (!(ctr_edits_can(s) & CTR_EDIT_NODES_MADE)) {
			json_object *o = json_object_new_array();

			json_object_array_add(o, json_object_new_string("bind"));
			json_object_array_add(o, json_object_new_string("nosuid"));
			if (add_mount(mounts, n->host, n->path, "bind", o) < 0)
				return -1;
		} else if (node(devs, rules, n, s) < 0) {
			return -1;
		}
	}
	return 0;
}

int oci_edits_config(json_object *config, const struct ctr_spec *s, struct err *e)
{
	const struct ctr_edits *d = &s->edits;
	json_object *mounts = sub(config, "mounts", json_type_array), *hooks = NULL, *proc, *user, *g;

	if (ctr_edits_empty(d))
		return 0;
	if (mounts == NULL || nodes(config, mounts, s) < 0)
		goto nomem;
	for (size_t i = 0; i < d->nmounts; i++)
		if (add_mount(mounts, d->mounts[i].src, d->mounts[i].dst, d->mounts[i].type,
			      strarr(&d->mounts[i].opts)) < 0)
			goto nomem;
	if (d->nhooks > 0 && (hooks = sub(config, "hooks", json_type_object)) == NULL)
		goto nomem;
	for (size_t i = 0; i < d->nhooks; i++)
		if (hook(hooks, &d->hooks[i]) < 0)
			goto nomem;
	if (d->ngids > 0) {
		if ((proc = sub(config, "process", json_type_object)) == NULL ||
		    (user = sub(proc, "user", json_type_object)) == NULL ||
		    (g = sub(user, "additionalGids", json_type_array)) == NULL)
			goto nomem;
		for (size_t i = 0; i < d->ngids; i++)
			if (json_object_array_add(g, json_object_new_int64(d->gids[i])) < 0)
				goto nomem;
	}
	return 0;
nomem:
	return err_set(e, EXIT_CTRUN, "cannot edit the OCI configuration (out of memory)");
}
