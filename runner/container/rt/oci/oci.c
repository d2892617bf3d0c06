/* oci.c - the OCI adapter: a bundle (config.json, written with json-c)
 * over the image's root file system, run by runc or crun.
 *
 * The bundle's rootfs is an overlay that ctrun mounts in a private mount
 * namespace just before exec'ing the runtime: the cached image below
 * (never modified: it is shared by every run on the node), a tmpfs above
 * that holds only the mount points ctrun creates.  The overlay is remounted
 * read-only inside the container (root.readonly; with --writable it stays
 * writable, the tmpfs taking the writes) and vanishes with the namespace,
 * so nothing is left to clean up even after kill -9.
 *
 * Rootless (the caller is not root): ctrun also enters a user namespace
 * mapping the caller to root before exec'ing the runtime, which therefore
 * runs as root of that namespace (as under rootless podman) and needs no
 * uid mappings in config.json (runc's nsexec wants to be root there, and an
 * unprivileged user can map only its own uid).  The container's process
 * starts as that root; unless --root, the agent (or, for a shell,
 * `/.ctrun/agent --as-user`) then enters a user namespace of its own
 * mapping the caller's uid and gid to that root, so workers run as the
 * caller inside too (plan.ident_nest), named in the /etc/passwd ctrun
 * binds (ident.c).  Either way files they write belong to the caller.
 *
 * The network, IPC and UTS namespaces are the host's (rendezvous, NCCL's
 * shared memory and host names work as outside) unless --unshare asks for
 * its own (then /dev/shm is a tmpfs of its own with IPC); the container
 * gets its own PID and mount namespaces.  /tmp, /dev/shm, /etc/hosts and
 * /etc/resolv.conf are the host's, as with enroot and apptainer. */
#include "oci.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drivers.h"
#include "util.h"

#define OCI_VERSION "1.0.2"
/* The agent in the container (agentspec.h's AGENT_BIN; rt/ does not see
 * runner/agent/), whose --as-user mode gives a shell the caller's identity. */
#define AGENT_AS_USER_BIN "/.ctrun/agent"
#define DEFAULT_PATH "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* What `docker run` grants by default. */
static const char *const caps[] = {
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD",
	"CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP",
	"CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE", NULL,
};

/* runc's defaults for `runc spec`. */
static const char *const masked[] = {
	"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
	"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/sys/firmware",
	"/proc/scsi", NULL,
};
static const char *const readonly[] = {
	"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger", NULL,
};

/* JSON carries Unicode text: a path or value that is not UTF-8 would reach
 * the runtime (a Go program) as U+FFFD, a different path.  Refuse it. */
static bool utf8_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p != '\0') {
		int n;
		unsigned cp;

		if (*p < 0x80) {
			p++;
			continue;
		}
		if ((*p & 0xe0) == 0xc0) {
			n = 1;
			cp = *p & 0x1f;
		} else if ((*p & 0xf0) == 0xe0) {
			n = 2;
			cp = *p & 0x0f;
		} else if ((*p & 0xf8) == 0xf0) {
			n = 3;
			cp = *p & 0x07;
		} else {
			return false;
		}
		for (int i = 1; i <= n; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (p[i] & 0x3f);
		}
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		p += n + 1;
	}
	return true;
}

struct jb {
	struct err *e;
	int failed;
};

static json_object *str(struct jb *b, const char *what, const char *s)
{
	json_object *o;

	if (b->failed)
		return NULL;
	if (!utf8_valid(s)) {
		err_set(b->e, EXIT_CTRUN, "oci: %s '%s' is not valid UTF-8, which config.json "
			"cannot carry", what, s);
		b->failed = 1;
		return NULL;
	}
	o = json_object_new_string(s);
	if (o == NULL) {
		err_sys(b->e, EXIT_CTRUN, "config.json");
		b->failed = 1;
	}
	return o;
}

/* Takes ownership of v (also on failure). */
static void add(struct jb *b, json_object *obj, const char *key, json_object *v)
{
	if (b->failed || v == NULL || obj == NULL) {
		json_object_put(v);
		if (!b->failed && (v == NULL || obj == NULL)) {
			err_sys(b->e, EXIT_CTRUN, "config.json");
			b->failed = 1;
		}
		return;
	}
	if (json_object_object_add(obj, key, v) < 0) {
		err_sys(b->e, EXIT_CTRUN, "config.json");
		b->failed = 1;
	}
}

static void push(struct jb *b, json_object *arr, json_object *v)
{
	if (b->failed || v == NULL || arr == NULL) {
		json_object_put(v);
		if (!b->failed && (v == NULL || arr == NULL)) {
			err_sys(b->e, EXIT_CTRUN, "config.json");
			b->failed = 1;
		}
		return;
	}
	if (json_object_array_add(arr, v) < 0) {
		json_object_put(v);
		err_sys(b->e, EXIT_CTRUN, "config.json");
		b->failed = 1;
	}
}

static json_object *strarr(struct jb *b, const char *what, const char *const *v)
{
	json_object *a = json_object_new_array();

	for (; v != NULL && *v != NULL; v++)
		push(b, a, str(b, what, *v));
	return a;
}

static json_object *mount(struct jb *b, const char *dst, const char *type, const char *src,
			  const char *const *opts)
{
	json_object *m = json_object_new_object();

	add(b, m, "destination", str(b, "mount destination", dst));
	add(b, m, "type", str(b, "mount type", type));
	add(b, m, "source", str(b, "mount source", src));
	add(b, m, "options", strarr(b, "mount option", opts));
	return m;
}

static json_object *process(struct jb *b, const struct ctr_spec *s, char *const *args)
{
	json_object *p = json_object_new_object(), *user = json_object_new_object();
	json_object *capo = json_object_new_object(), *env;
	bool has_path = false;

	add(b, p, "terminal", json_object_new_boolean(s->tty));
	/* Rootless: uid 0 is the caller, mapped by ctrun's user namespace. */
	add(b, user, "uid", json_object_new_int64(s->rootless ? 0 : (int64_t)s->uid));
	add(b, user, "gid", json_object_new_int64(s->rootless ? 0 : (int64_t)s->gid));
	add(b, p, "user", user);
	add(b, p, "args", strarr(b, "argument", (const char *const *)args));
	env = strarr(b, "environment variable", (const char *const *)s->env.v);
	for (size_t i = 0; i < s->env.n; i++)
		has_path |= strncmp(s->env.v[i], "PATH=", 5) == 0;
	if (!has_path)
		push(b, env, str(b, "environment variable", DEFAULT_PATH));
	add(b, p, "env", env);
	add(b, p, "cwd", str(b, "working directory", s->cwd != NULL ? s->cwd : "/"));
	add(b, capo, "bounding", strarr(b, "capability", caps));
	add(b, capo, "effective", strarr(b, "capability", caps));
	add(b, capo, "permitted", strarr(b, "capability", caps));
	add(b, p, "capabilities", capo);
	add(b, p, "noNewPrivileges", json_object_new_boolean(1));
	return p;
}

static json_object *mounts(struct jb *b, const struct ctr_spec *s)
{
	static const char *const proc_o[] = { "nosuid", "noexec", "nodev", NULL };
	static const char *const dev_o[] = { "nosuid", "strictatime", "mode=755", "size=65536k",
					     NULL };
	/* gid=5 (tty) only exists for real root: an unmapped gid fails the mount. */
	static const char *const pts_o[] = { "nosuid", "noexec", "newinstance", "ptmxmode=0666",
					     "mode=0620", "gid=5", NULL };
	static const char *const pts_rl[] = { "nosuid", "noexec", "newinstance", "ptmxmode=0666",
					      "mode=0620", NULL };
	static const char *const shm_o[] = { "rbind", "nosuid", "nodev", NULL };
	/* --unshare ipc: a /dev/shm of its own, as enroot mounts it then. */
	static const char *const shm_own[] = { "nosuid", "noexec", "nodev", "mode=1777", NULL };
	static const char *const sys_o[] = { "rbind", "nosuid", "noexec", "nodev", "ro", NULL };
	json_object *a = json_object_new_array();

	static const char *const hostproc_o[] = { "rbind", "nosuid", "noexec", "nodev", NULL };

	if (s->host_pid)
		push(b, a, mount(b, "/proc", "bind", "/proc", hostproc_o));
	else
		push(b, a, mount(b, "/proc", "proc", "proc", proc_o));
	push(b, a, mount(b, "/dev", "tmpfs", "tmpfs", dev_o));
	push(b, a, mount(b, "/dev/pts", "devpts", "devpts", s->rootless ? pts_rl : pts_o));
	if (s->unshare & CTR_UNSHARE_IPC)
		push(b, a, mount(b, "/dev/shm", "tmpfs", "shm", shm_own));
	else
		push(b, a, mount(b, "/dev/shm", "bind", "/dev/shm", shm_o));
	/* sysfs cannot be mounted anew without a network namespace of our own. */
	push(b, a, mount(b, "/sys", "bind", "/sys", sys_o));
	for (size_t i = 0; i < s->mounts.n; i++) {
		const struct ctr_mount *m = &s->mounts.v[i];

		const char *o[12];
		char data[128], *rest = data, *w;
		size_t n = 0;

		if (m->kind == CTR_MOUNT_TMPFS) {
			/* A fresh tmpfs (pyxis's tmpfs:), nosuid,nodev as the binds;
			 * its checked data words (mounts.c) as options. */
			o[n++] = "nosuid";
			o[n++] = "nodev";
			if (m->ro)
				o[n++] = "ro";
			if (xsnprintf(data, sizeof(data), "%s", m->data) < 0)
				data[0] = '\0'; /* cannot be: the data was made in 128 bytes */
			while ((w = strsep(&rest, ",")) != NULL && n + 1 < sizeof(o) / sizeof(*o))
				if (*w != '\0')
					o[n++] = w;
			o[n] = NULL;
			push(b, a, mount(b, m->dst, "tmpfs", "tmpfs", o));
			continue;
		}
		/* A host tree that others can write must not give a root run a
		 * setuid file or a device: nosuid,nodev unless the user asked. */
		o[n++] = "rbind";
		if (m->ro)
			o[n++] = "ro";
		if (!m->suid)
			o[n++] = "nosuid";
		if (!m->dev)
			o[n++] = "nodev";
		if (m->unbindable)
			o[n++] = "unbindable";
		o[n] = NULL;
		push(b, a, mount(b, m->dst, "bind", m->src, o));
	}
	return a;
}

static json_object *linux_(struct jb *b, const struct ctr_spec *s)
{
	const struct oci_own *own = s->own;
	json_object *l = json_object_new_object(), *ns = json_object_new_array();
	json_object *devs = json_object_new_array(), *res = json_object_new_object();
	json_object *rules = json_object_new_array();
	/* PID: the agent is the container's init, and its end ends everything
	 * (not for ctrun __hold: the host's, rt.h). */
	static const char *const kinds[] = { "pid", "mount", NULL };
	static const struct {
		unsigned bit;
		const char *type;
	} own_ns[] = { { CTR_UNSHARE_NET, "network" }, { CTR_UNSHARE_IPC, "ipc" },
		       { CTR_UNSHARE_UTS, "uts" } };

	for (const char *const *t = s->host_pid ? kinds + 1 : kinds; *t; t++) {
		json_object *n = json_object_new_object();

		add(b, n, "type", json_object_new_string(*t));
		push(b, ns, n);
	}
	/* --unshare (runc and crun bring the new network namespace's loopback up). */
	for (size_t i = 0; i < sizeof(own_ns) / sizeof(own_ns[0]); i++) {
		json_object *n;

		if (!(s->unshare & own_ns[i].bit))
			continue;
		n = json_object_new_object();
		add(b, n, "type", json_object_new_string(own_ns[i].type));
		push(b, ns, n);
	}
	add(b, l, "namespaces", ns);
	/* With ctrun-hook the hook creates the GPUs' nodes (exactly the
	 * container's); without it every GPU node is passed, as --nv does. */
	for (size_t i = 0; own->hook[0] == '\0' && i < own->devices.n; i++) {
		const struct ctr_device *d = &own->devices.v[i];
		json_object *o = json_object_new_object(), *r = json_object_new_object();
		char type[2] = { d->type, '\0' };

		add(b, o, "path", str(b, "device", d->path));
		add(b, o, "type", json_object_new_string(type));
		add(b, o, "major", json_object_new_int64(d->major));
		add(b, o, "minor", json_object_new_int64(d->minor));
		add(b, o, "fileMode", json_object_new_int64(d->mode));
		add(b, o, "uid", json_object_new_int64(0));
		add(b, o, "gid", json_object_new_int64(0));
		push(b, devs, o);
		/* Root runc applies a device cgroup: let the GPUs through it. */
		add(b, r, "allow", json_object_new_boolean(1));
		add(b, r, "type", json_object_new_string(type));
		add(b, r, "major", json_object_new_int64(d->major));
		add(b, r, "minor", json_object_new_int64(d->minor));
		add(b, r, "access", json_object_new_string("rwm"));
		push(b, rules, r);
	}
	add(b, l, "devices", devs);
	add(b, res, "devices", rules);
	add(b, l, "resources", res);
	add(b, l, "maskedPaths", strarr(b, "path", masked));
	add(b, l, "readonlyPaths", strarr(b, "path", readonly));
	return l;
}

static int gpu_pin(json_object *c, const struct ctr_spec *s, struct err *e)
{
	struct strv gpus = { 0 };
	char *ids = s->gpu_ids != NULL ? strdup(s->gpu_ids) : NULL, *save = NULL;
	int rv = -1;

	if (s->gpu_ids != NULL && ids == NULL)
		return err_sys(e, EXIT_CTRUN, "config.json");
	for (char *g = ids != NULL ? strtok_r(ids, ",", &save) : NULL; g != NULL;
	     g = strtok_r(NULL, ",", &save))
		if (strv_push(&gpus, g) < 0)
			goto out;
	rv = oci_gpu_config(c, &gpus, ((const struct oci_own *)s->own)->hook, s->imex, e);
out:
	if (rv < 0 && e->code == 0)
		err_sys(e, EXIT_CTRUN, "config.json");
	free(ids);
	strv_free(&gpus);
	return rv;
}

extern const struct ctr_driver ctr_driver_crun;

static bool crun_hook_writes(const struct ctr_spec *s)
{
	for (size_t i = 0; s->rt == &ctr_driver_crun && i < s->edits.nhooks; i++)
		if (s->edits.hooks[i].stage == CTR_HOOK_CREATE_CONTAINER)
			return true;
	return false;
}

/* config.json of a ctr_spec, as text. */
static char *config_json(const struct ctr_spec *s, char *const *args, struct err *e)
{
	struct jb b = { .e = e };
	json_object *c = json_object_new_object(), *root = json_object_new_object();
	json_object *ann = json_object_new_object();
	char *text = NULL;

	add(&b, c, "ociVersion", json_object_new_string(OCI_VERSION));
	add(&b, c, "process", process(&b, s, args));
	add(&b, root, "path", json_object_new_string("rootfs"));
	/* --writable: the overlay's tmpfs upper layer takes the writes.
	 * crun 1.8 makes the root read-only before its createContainer hooks
	 * run (runc after: crun#1924, fixed in crun 1.26), so a hook that
	 * writes into the root (NVIDIA's create-symlinks, update-ldcache)
	 * fails there: under crun with such a hook the root stays writable,
	 * its writes going to the run's tmpfs as with --writable. */
	add(&b, root, "readonly", json_object_new_boolean(!s->writable && !crun_hook_writes(s)));
	add(&b, c, "root", root);
	add(&b, c, "mounts", mounts(&b, s));
	add(&b, c, "annotations", ann);
	add(&b, c, "linux", linux_(&b, s));
	/* GPU set-up happens once per container, in its mount namespace before
	 * pivot_root (createContainer), by ctrun-hook when it is installed:
	 * gpu_pin adds the hook, its annotations, the renumbered
	 * CUDA_VISIBLE_DEVICES and the device cgroup rules. */
	if (!b.failed && s->gpus && ((const struct oci_own *)s->own)->hook[0] != '\0' &&
	    gpu_pin(c, s, e) < 0)
		b.failed = 1;
	/* What the container needs from the host (edits.h: CDI devices). */
	if (!b.failed && oci_edits_config(c, s, e) < 0)
		b.failed = 1;
	if (!b.failed) {
		const char *t = json_object_to_json_string_ext(c, JSON_C_TO_STRING_PRETTY |
								  JSON_C_TO_STRING_SPACED |
								  JSON_C_TO_STRING_NOSLASHESCAPE);

		text = t != NULL ? strdup(t) : NULL;
		if (text == NULL)
			err_sys(e, EXIT_CTRUN, "config.json");
	}
	json_object_put(c);
	return text;
}

int rt_oci_plan(const struct ctr_spec *s, struct ctr_plan *p, struct err *e)
{
	const struct oci_own *own = s->own;
	struct strv args = { 0 };
	char *json, path[4096], state[4096];
	int ret = 0;

	if (s->rundir == NULL || s->rootfs == NULL || s->id == NULL || own == NULL)
		return err_set(e, EXIT_CTRUN, "oci: incomplete container description");
	/* The runtime's state directory (--root), in the run directory. */
	if (xsnprintf(state, sizeof(state), "%s/state", s->rundir) < 0)
		return err_set(e, EXIT_CTRUN, "run directory path too long");
	/* runc runs exactly process.args: the agent runs the command through
	 * the image's entrypoint (the /etc/rc ctrun's unpacker or enroot's
	 * import wrote from Entrypoint and Cmd, else a SIF's runscript). */
	if (s->entrypoint && (strv_push(&p->agent_entry, "/etc/rc") < 0 ||
			      strv_push(&p->agent_entry, "/.singularity.d/runscript") < 0))
		return err_sys(e, EXIT_CTRUN, "oci plan");
	/* runc reads no /.singularity.d/env: the agent sources it, as
	 * apptainer's exec action does (agent/imageenv.h). */
	p->agent_image_scripts = true;
	/* Workers as the caller (rootless, no --root): the agent switches
	 * (spec record X); a shell has no agent, the agent's --as-user mode
	 * switches and execs it. */
	p->ident_nest = s->rootless && !s->as_root;
	if (p->ident_nest && !s->agent) {
		if (strv_push(&args, AGENT_AS_USER_BIN) < 0 || strv_push(&args, "--as-user") < 0 ||
		    strv_pushf(&args, "%u", (unsigned)s->uid) < 0 ||
		    strv_pushf(&args, "%u", (unsigned)s->gid) < 0 ||
		    strv_extend(&args, s->argv.v) < 0) {
			strv_free(&args);
			return err_sys(e, EXIT_CTRUN, "oci plan");
		}
	}
	json = config_json(s, args.v != NULL ? args.v : s->argv.v, e);
	strv_free(&args);
	if (json == NULL)
		return -1;
	if (snprintf(path, sizeof(path), "%s/config.json", s->rundir) >= (int)sizeof(path)) {
		free(json);
		return err_set(e, EXIT_CTRUN, "oci: run directory path too long");
	}
	/* config.json ends with a newline like `runc spec` writes it. */
	ret = strv_pushf(&p->argv, "%s", s->bin) < 0 ? -1 : 0;
	if (ret == 0) {
		size_t n = strlen(json);
		char *nl = realloc(json, n + 2);

		if (nl == NULL) {
			ret = -1;
		} else {
			json = nl;
			json[n] = '\n';
			json[n + 1] = '\0';
			ret = ctr_plan_file(p, path, json, n + 1, e);
		}
	}
	free(json);
	if (ret < 0)
		return e->code != 0 ? -1 : err_sys(e, EXIT_CTRUN, "oci plan");
	ret |= strv_push(&p->argv, "--root");
	ret |= strv_push(&p->argv, state);
	ret |= strv_push(&p->argv, "run");
	/* The step's PMI2 socket, descriptor 3 (rt.h pmi_fd): runc and crun
	 * close every other descriptor past stderr. */
	if (s->pmi_fd > 0) {
		ret |= strv_push(&p->argv, "--preserve-fds");
		ret |= strv_push(&p->argv, "1");
	}
	ret |= strv_push(&p->argv, "--bundle");
	ret |= strv_push(&p->argv, s->rundir);
	ret |= strv_push(&p->argv, s->id);
	/* ctrun-hook renumbers the container's GPUs 0..n-1 (gpu_pin.h). */
	p->gpus_renumbered = s->gpus && own->hook[0] != '\0';
	p->ovl = true;
	p->ovl_lower = strdup(s->holder ? s->rootfs_ns : s->rootfs);
	ret |= asprintf(&p->ovl_tmp, "%s/ovl", s->rundir) < 0 ? -1 : 0;
	ret |= asprintf(&p->ovl_merged, "%s/rootfs", s->rundir) < 0 ? -1 : 0;
	if (ret != 0 || p->ovl_lower == NULL)
		return err_sys(e, EXIT_CTRUN, "oci plan");
	return 0;
}

/* GPUs: ctrun-hook in config.json when it is next to ctrun (it makes
 * exactly the container's nodes); without it every GPU node of the node,
 * as --nv does. */
static int oci_gpus(struct ctr_spec *s, const struct ctr_ask *a, struct err *e)
{
	struct oci_own *own = s->own;
	bool present;

	(void)a;
	if (gpu_pin_nodes(&own->devices, &present, e) < 0)
		return -1;
	if (sibling_path("ctrun-hook", own->hook, sizeof(own->hook)) < 0)
		own->hook[0] = '\0';
	return 0;
}

static void oci_fini(void *p)
{
	struct oci_own *own = p;

	gpu_pin_nodes_free(&own->devices);
}

static const char *const rundir_dirs[] = { "rootfs", "ovl", NULL };

/* runc first, else crun: crun 1.8 refuses rootless on cgroup v1 hybrid
 * hosts, runc does not (the crun driver below works around it, and is
 * what auto takes for ctrun __hold, start_fast).  A directory or an archive is OCI's first choice
 * (unpacked or used as it is); a squashfs or SIF its last (mounted or
 * unpacked into the node cache). */
const struct ctr_driver ctr_driver_oci = {
	.name = "oci",
	.bins = (const char *const[]){ "runc", "crun", NULL },
	.rank = { [IMAGE_UNKNOWN] = 1, [IMAGE_SQUASHFS] = 4, [IMAGE_SIF] = 3,
		  [IMAGE_DOCKER_ARCHIVE] = 1, [IMAGE_OCI_ARCHIVE] = 1, [IMAGE_DIR] = 1 },
	/* ctrun __hold: crun's start is ~25 ms shorter than runc's. */
	.start_fast = "crun",
	.need = ROOT_TREE,
	.host_files = true,
	.image_env = true,
	.rundir_dirs = rundir_dirs,
	.default_cmd = DEFAULT_CMD_ROOT,
	.ctrun_home = true,
	.unshares = true,
	.ctrun_passwd = true,
	.edits = CTR_EDIT_NODES_MADE | CTR_EDIT_FS | CTR_EDIT_HOOKS | CTR_EDIT_GIDS |
		 CTR_EDIT_MOUNT_OPTS,
	.own_size = sizeof(struct oci_own),
	.fini = oci_fini,
	.gpus = oci_gpus,
	.plan = rt_oci_plan,
	.hookfile = &oci_hookfile,
};

/* crun 1.8 refuses a hybrid host whose cgroup2 holds a controller ("cgroups
 * in hybrid mode not supported"), where runc uses the v1 hierarchies: the
 * runtime's namespace hides that cgroup2 (overlay.c), so crun sees v1 too. */
static int crun_plan(const struct ctr_spec *s, struct ctr_plan *p, struct err *e)
{
	/* crun 1.8 takes "unbindable" in a bind's options and leaves the
	 * bind shared or private: refused rather than silently not done. */
	for (size_t i = 0; i < s->mounts.n; i++)
		if (s->mounts.v[i].unbindable)
			return err_set(e, EXIT_USAGE, "mount %s: crun does not make a bind "
				       "unbindable (it ignores the option): use --runtime oci (runc) "
				       "or enroot", s->mounts.v[i].src);
	if (rt_oci_plan(s, p, e) < 0)
		return -1;
	p->hide_cgroup2 = true;
	return 0;
}

/* The same driver, asked for by name: crun, whatever else is installed
 * (auto's oci looks for it already, after runc). */
const struct ctr_driver ctr_driver_crun = {
	.name = "crun",
	.bins = (const char *const[]){ "crun", NULL },
	.rank = { [IMAGE_UNKNOWN] = CTR_NAMED_ONLY, [IMAGE_SQUASHFS] = CTR_NAMED_ONLY,
		  [IMAGE_SIF] = CTR_NAMED_ONLY, [IMAGE_DOCKER_ARCHIVE] = CTR_NAMED_ONLY,
		  [IMAGE_OCI_ARCHIVE] = CTR_NAMED_ONLY, [IMAGE_DIR] = CTR_NAMED_ONLY },
	.need = ROOT_TREE,
	.host_files = true,
	.image_env = true,
	.rundir_dirs = rundir_dirs,
	.default_cmd = DEFAULT_CMD_ROOT,
	.ctrun_home = true,
	.unshares = true,
	.ctrun_passwd = true,
	.edits = CTR_EDIT_NODES_MADE | CTR_EDIT_FS | CTR_EDIT_HOOKS | CTR_EDIT_GIDS |
		 CTR_EDIT_MOUNT_OPTS,
	.own_size = sizeof(struct oci_own),
	.fini = oci_fini,
	.gpus = oci_gpus,
	.plan = crun_plan,
};
