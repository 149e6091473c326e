/* SPDX-License-Identifier: GPL-2.0-only */
/* Literal socket addresses: "a.b.c.d:port" or "[v6]:port", no DNS. */
#ifndef NSWAPD_NETADDR_H
#define NSWAPD_NETADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* 0 on success; port 0 is accepted only if allow_port0. */
int netaddr_parse(const char *s, bool allow_port0,
		  struct sockaddr_storage *ss, socklen_t *len);
/* "a.b.c.d:port" or "[v6]:port" of a socket address. */
void netaddr_format(const struct sockaddr *sa, char *buf, size_t len);
/*
 * What the per-address caps count by: an IPv4 address (also one mapped
 * into IPv6, as a listener on [::] sees them), as ::ffff:a.b.c.d; an IPv6
 * address by its /64 prefix, the rest zero, since one host may use every
 * address of its /64.
 */
void netaddr_key(const struct sockaddr_storage *ss, uint8_t key[16]);

#endif
