/* SPDX-License-Identifier: GPL-2.0-only */
/* Literal socket addresses: "a.b.c.d:port" or "[v6]:port", no DNS. */
#ifndef NSWAPD_NETADDR_H
#define NSWAPD_NETADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

/* 0 on success; port 0 is accepted only if allow_port0. */
int netaddr_parse(const char *s, bool allow_port0,
		  struct sockaddr_storage *ss, socklen_t *len);
/* "a.b.c.d:port" or "[v6]:port" of a socket address. */
void netaddr_format(const struct sockaddr *sa, char *buf, size_t len);

#endif
