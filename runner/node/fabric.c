/* fabric.c - the node's RDMA devices, ports and device nodes (see fabric.h). */
#include "fabric.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "util.h"

/* A small sysfs file's first line, without its newline; "" when absent. */
static void read_line(const char *path, char *buf, size_t size)
{
	char *text = read_file(path, NULL);

	buf[0] = '\0';
	if (text == NULL)
		return;
	text[strcspn(text, "\n")] = '\0';
	snprintf(buf, size, "%s", text);
	free(text);
}

static bool safe_name(const char *n)
{
	return n[0] != '.' && strlen(n) < 32 && strchr(n, '/') == NULL;
}

static int cmp_names(const void *a, const void *b)
{
	return strverscmp(*(char *const *)a, *(char *const *)b);
}

/* The entries of a directory, sorted as `ls -v` does (mlx5_10 after
 * mlx5_9); none when it is absent. */
static void entries(const char *dir, struct strv *out)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	while (d != NULL && (de = readdir(d)) != NULL && out->n < 256)
		if (safe_name(de->d_name))
			strv_push(out, de->d_name);
	if (d != NULL)
		closedir(d);
	if (out->n > 1)
		qsort(out->v, out->n, sizeof(*out->v), cmp_names);
}

static void scan_port(const char *sysfs, const char *dev, const char *port, struct fabric_info *f)
{
	struct fabric_port *p;
	char path[4096], state[32], link[32];
	const char *colon;
	long n;

	if (f->nports == FABRIC_PORTS_MAX || parse_long(port, 0, 255, &n) < 0)
		return;
	p = &f->ports[f->nports];
	memset(p, 0, sizeof(*p));
	snprintf(p->dev, sizeof(p->dev), "%s", dev);
	p->port = (unsigned)n;
	/* "4: ACTIVE": the name after the number. */
	snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/%s/state", sysfs, dev, port);
	read_line(path, state, sizeof(state));
	colon = strchr(state, ':');
	snprintf(p->state, sizeof(p->state), "%s", colon != NULL ? colon + 1 + strspn(colon + 1, " ")
								 : state[0] != '\0' ? state : "?");
	p->active = strcmp(p->state, "ACTIVE") == 0;
	snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/%s/link_layer", sysfs, dev, port);
	read_line(path, link, sizeof(link));
	snprintf(p->link, sizeof(p->link), "%s", strcmp(link, "InfiniBand") == 0 ? "IB"
						 : strcmp(link, "Ethernet") == 0 ? "RoCE"
						 : link[0] != '\0' ? link : "?");
	snprintf(path, sizeof(path), "%s/class/infiniband/%s/ports/%s/rate", sysfs, dev, port);
	read_line(path, p->rate, sizeof(p->rate));
	f->nports++;
}

/* A node of class/CLASS/NAME: its numbers from sysfs's dev file, and
 * whether devdir has it as that character device. */
static void add_node(const char *devdir, const char *rel, const char *ibdev, const char *devfile,
		     struct fabric_info *f)
{
	struct fabric_node *nd;
	char numbers[32], path[4096];
	unsigned maj = 0, min = 0;
	struct stat st;

	if (f->nnodes == FABRIC_NODES_MAX)
		return;
	nd = &f->nodes[f->nnodes];
	memset(nd, 0, sizeof(*nd));
	if (snprintf(nd->path, sizeof(nd->path), "/dev/%s", rel) >= (int)sizeof(nd->path))
		return;
	snprintf(nd->ibdev, sizeof(nd->ibdev), "%s", ibdev);
	if (devfile != NULL) {
		read_line(devfile, numbers, sizeof(numbers));
		if (sscanf(numbers, "%u:%u", &maj, &min) != 2)
			maj = min = 0;
	}
	snprintf(path, sizeof(path), "%s/%s", devdir, rel);
	if (lstat(path, &st) == 0 && S_ISCHR(st.st_mode)) {
		/* Without sysfs's numbers (rdma_cm, gdrdrv) the node's own. */
		if (devfile == NULL || maj == 0) {
			maj = major(st.st_rdev);
			min = minor(st.st_rdev);
		}
		nd->present = major(st.st_rdev) == maj && minor(st.st_rdev) == min;
	}
	nd->major = maj;
	nd->minor = min;
	f->nnodes++;
}

/* class/infiniband_verbs/uverbsK and class/infiniband_mad/umadK. */
static void scan_class(const char *sysfs, const char *devdir, const char *class, const char *prefix,
		       struct fabric_info *f)
{
	struct strv names = { 0 };
	char dir[4096], path[4096], ibdev[64], rel[64];

	snprintf(dir, sizeof(dir), "%s/class/%s", sysfs, class);
	entries(dir, &names);
	for (size_t i = 0; i < names.n; i++) {
		if (strncmp(names.v[i], prefix, strlen(prefix)) != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s/ibdev", dir, names.v[i]);
		read_line(path, ibdev, sizeof(ibdev));
		if (ibdev[0] == '\0' || !safe_name(ibdev))
			continue;
		snprintf(path, sizeof(path), "%s/%s/dev", dir, names.v[i]);
		snprintf(rel, sizeof(rel), "infiniband/%s", names.v[i]);
		add_node(devdir, rel, ibdev, path, f);
	}
	strv_free(&names);
}

void fabric_scan(const char *sysfs, const char *devdir, struct fabric_info *f)
{
	struct strv devs = { 0 };
	char dir[4096], path[4096];
	struct stat st;

	memset(f, 0, sizeof(*f));
	snprintf(dir, sizeof(dir), "%s/class/infiniband", sysfs);
	entries(dir, &devs);
	for (size_t i = 0; i < devs.n; i++) {
		struct strv ports = { 0 };

		snprintf(path, sizeof(path), "%s/%s/ports", dir, devs.v[i]);
		entries(path, &ports);
		for (size_t k = 0; k < ports.n; k++)
			scan_port(sysfs, devs.v[i], ports.v[k], f);
		strv_free(&ports);
	}
	strv_free(&devs);
	if (f->nports > 0) {
		scan_class(sysfs, devdir, "infiniband_verbs", "uverbs", f);
		scan_class(sysfs, devdir, "infiniband_mad", "umad", f);
		snprintf(path, sizeof(path), "%s/infiniband/rdma_cm", devdir);
		if (lstat(path, &st) == 0)
			add_node(devdir, "infiniband/rdma_cm", "", NULL, f);
	}
	snprintf(path, sizeof(path), "%s/gdrdrv", devdir);
	if (lstat(path, &st) == 0)
		add_node(devdir, "gdrdrv", "", NULL, f);
}

int fabric_container_nodes(const struct fabric_info *f, struct strv *out)
{
	for (size_t i = 0; i < f->nnodes; i++)
		if (f->nodes[i].present && strv_find(out, f->nodes[i].path) < 0 &&
		    strv_push(out, f->nodes[i].path) < 0)
			return -1;
	return 0;
}

void fabric_ports_line(const struct fabric_info *f, char *buf, size_t size)
{
	size_t off = 0;

	snprintf(buf, size, "none");
	for (size_t i = 0; i < f->nports && off < size; i++) {
		const struct fabric_port *p = &f->ports[i];
		int w = snprintf(buf + off, size - off, "%s%s:%u %s %s%s%s", i ? ", " : "", p->dev,
				 p->port, p->state, p->link, p->rate[0] ? " " : "", p->rate);

		if (w < 0)
			break;
		off += (size_t)w;
	}
}
