/* netinfo.h - the rendezvous address: names to reachable addresses, free ports. */
#ifndef CTRUN_NETINFO_H
#define CTRUN_NETINFO_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

/* Resolves `name` to a numeric address the other nodes can reach.  A name
 * that only resolves to loopback (Debian maps its own hostname to
 * 127.0.1.1) is replaced by this host's first non-loopback address when
 * `self` says this host is the master, and refused otherwise. */
int net_resolve_master(const char *name, bool self, char *out, size_t size, struct err *e);

/* A TCP port free on this host right now, as torchrun --standalone picks
 * one, but from 10000 up to the kernel's ephemeral range, so no outgoing
 * connection takes it before the workers bind it. */
int net_free_port(long *port, struct err *e);

/* True for 127.0.0.0/8 and ::1. */
bool net_is_loopback(const char *addr);

/* The interface this host uses to reach `addr` (a numeric address): the
 * one owning the source address the kernel picks for it ("eth0"; "lo"
 * for a loopback address).  For NCCL_SOCKET_IFNAME/GLOO_SOCKET_IFNAME. */
int net_route_ifname(const char *addr, char *ifname, size_t size, struct err *e);

#endif
