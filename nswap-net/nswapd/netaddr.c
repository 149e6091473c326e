// SPDX-License-Identifier: GPL-2.0-only
#include "netaddr.h"
#include "../n2l-proto.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

static int parse_port(const char *s, bool allow_port0, in_port_t *port)
{
	unsigned long v = 0;

	if (!*s || strlen(s) > 5)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (unsigned long)(*s - '0');
	}
	if (v > 65535 || (!v && !allow_port0))
		return -1;
	*port = htons((uint16_t)v);
	return 0;
}

int netaddr_parse(const char *s, bool allow_port0,
		  struct sockaddr_storage *ss, socklen_t *len)
{
	char host[N2L_ADDR_LEN];
	const char *colon;
	size_t hl;

	memset(ss, 0, sizeof(*ss));
	if (strlen(s) >= N2L_ADDR_LEN)
		return -1;
	if (s[0] == '[') {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
		const char *end = strstr(s, "]:");

		if (!end)
			return -1;
		hl = (size_t)(end - s - 1);
		memcpy(host, s + 1, hl);
		host[hl] = 0;
		s6->sin6_family = AF_INET6;
		if (inet_pton(AF_INET6, host, &s6->sin6_addr) != 1 ||
		    parse_port(end + 2, allow_port0, &s6->sin6_port))
			return -1;
		*len = sizeof(*s6);
		return 0;
	}
	colon = strrchr(s, ':');
	if (!colon)
		return -1;
	hl = (size_t)(colon - s);
	memcpy(host, s, hl);
	host[hl] = 0;
	{
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;

		s4->sin_family = AF_INET;
		if (inet_pton(AF_INET, host, &s4->sin_addr) != 1 ||
		    parse_port(colon + 1, allow_port0, &s4->sin_port))
			return -1;
		*len = sizeof(*s4);
	}
	return 0;
}

void netaddr_format(const struct sockaddr *sa, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN];

	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
		snprintf(buf, len, "[%s]:%u", host, ntohs(s6->sin6_port));
	} else if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
		snprintf(buf, len, "%s:%u", host, ntohs(s4->sin_port));
	} else {
		snprintf(buf, len, "?");
	}
}

void netaddr_key(const struct sockaddr_storage *ss, uint8_t key[16])
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };

	memset(key, 0, 16);
	if (ss->ss_family == AF_INET) {
		memcpy(key, v4mapped, sizeof(v4mapped));
		memcpy(key + 12, &((const struct sockaddr_in *)ss)->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)ss)->sin6_addr;

		memcpy(key, a->s6_addr, IN6_IS_ADDR_V4MAPPED(a) ? 16 : 8);
	}
}
