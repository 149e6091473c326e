// SPDX-License-Identifier: GPL-2.0-only
/*
 * The connection caps: addresses as they are counted, the per-address
 * and total caps, and connections not authenticated giving their place
 * to newer ones, their own address's first.
 */
#include <stdlib.h>
#include <string.h>

#include "netaddr.h"
#include "server.h"
#include "unit.h"

static struct server *mksrv_caps(uint64_t total, uint64_t per_addr, uint64_t unauth)
{
	struct server *srv = malloc(sizeof(*srv));
	char *argv[] = { "nswapd", "--log-level", "error", "--insecure", NULL };
	struct config cfg;
	char err[256];

	config_load(&cfg, 4, argv, err, sizeof(err));
	cfg.max_conns = total;
	cfg.max_conns_per_addr = per_addr;
	cfg.max_unauth_conns = unauth;
	server_init(srv, &cfg, 16, false);
	return srv;
}

static void key_of(const char *addr, uint8_t key[16])
{
	struct sockaddr_storage ss;
	socklen_t len;

	if (netaddr_parse(addr, false, &ss, &len))
		abort();
	netaddr_key(&ss, key);
}

/* A connection from addr ("a.b.c.d:port"), if the caps let it in. */
static struct conn *arrive(struct server *srv, const char *addr)
{
	uint8_t key[16];
	struct conn *c;

	key_of(addr, key);
	if (!admit_conn(srv, key, addr))
		return NULL;
	c = conn_new(srv, -1, CONN_IN, addr);
	memcpy(c->addr, key, sizeof(key));
	return c;
}

static void logged_in(struct conn *c)
{
	c->auth = CA_READY;
}

TEST(admit_counts_ipv4_and_ipv6_by_64)
{
	uint8_t a[16], b[16];

	key_of("127.0.0.2:1", a);
	key_of("[::ffff:127.0.0.2]:2", b);	/* IPv4 on a [::] listener */
	CHECK(!memcmp(a, b, 16));
	key_of("127.0.0.3:1", b);
	CHECK(memcmp(a, b, 16));
	key_of("[::ffff:127.0.0.3]:1", a);
	CHECK(!memcmp(a, b, 16));
	key_of("[2001:db8:1:2::1]:1", a);
	key_of("[2001:db8:1:2:ffff:ffff:ffff:fffe]:9", b);
	CHECK(!memcmp(a, b, 16));
	key_of("[2001:db8:1:3::1]:1", b);
	CHECK(memcmp(a, b, 16));
	key_of("[::]:1", a);			/* ::/64 is not every IPv4 */
	key_of("[::ffff:0.0.0.0]:1", b);
	CHECK(memcmp(a, b, 16));
}

TEST(admit_per_address_cap_refuses)
{
	struct server *srv = mksrv_caps(100, 2, 100);

	CHECK(arrive(srv, "10.0.0.1:1") && arrive(srv, "10.0.0.1:2"));
	CHECK(!arrive(srv, "10.0.0.1:3"));
	CHECK(!arrive(srv, "[::ffff:10.0.0.1]:4"));
	CHECK(arrive(srv, "[2001:db8::1]:1") && arrive(srv, "[2001:db8::2]:1"));
	CHECK(!arrive(srv, "[2001:db8::3]:1"));		/* the same /64 */
	CHECK(arrive(srv, "[2001:db8:0:1::3]:1"));
	server_destroy(srv);
	free(srv);
}

TEST(admit_unauthenticated_give_way_own_address_first)
{
	struct server *srv = mksrv_caps(100, 10, 4);
	struct conn *a1 = arrive(srv, "10.0.0.1:1"), *a2 = arrive(srv, "10.0.0.1:2");
	struct conn *b1 = arrive(srv, "10.0.0.2:1"), *b2 = arrive(srv, "10.0.0.2:2");
	struct conn *b3, *c1, *r, *d;

	CHECK(a1 && a2 && b1 && b2);
	/* full: B's newcomer takes the place of B's oldest, not A's */
	b3 = arrive(srv, "10.0.0.2:3");
	CHECK(b3 && b1->dead && !a1->dead && !a2->dead && !b2->dead);
	/* C has none: the oldest of all goes */
	c1 = arrive(srv, "10.0.0.3:1");
	CHECK(c1 && a1->dead && !a2->dead);
	/* an authenticated connection leaves the cap and is never pushed out */
	logged_in(a2);
	r = arrive(srv, "10.0.0.1:3");
	CHECK(r && !a2->dead && !b2->dead);
	d = arrive(srv, "10.0.0.4:1");
	CHECK(d && b2->dead && !a2->dead && !r->dead);
	CHECK_EQ(srv->pushed_out, 2);	/* the first was logged, the next two wait */
	server_destroy(srv);
	free(srv);
}

TEST(admit_total_cap)
{
	struct server *srv = mksrv_caps(3, 10, 10);
	struct conn *a = arrive(srv, "10.0.0.1:1"), *b = arrive(srv, "10.0.0.2:1");
	struct conn *c = arrive(srv, "10.0.0.3:1"), *d;

	CHECK(a && b && c);
	logged_in(a);
	logged_in(c);
	/* full: the one not authenticated gives way */
	d = arrive(srv, "10.0.0.4:1");
	CHECK(d && b->dead && !a->dead && !c->dead);
	logged_in(d);
	/* full of authenticated connections: refused */
	CHECK(!arrive(srv, "10.0.0.5:1"));
	CHECK(!a->dead && !c->dead && !d->dead);
	/* over a cap lowered by a reload: refused, nobody pushed out */
	srv->cfg.max_conns = 2;
	d->auth = CA_HELLO;
	CHECK(!arrive(srv, "10.0.0.5:1") && !d->dead);
	server_destroy(srv);
	free(srv);
}

/*
 * CI's attack (17 addresses churning 140000 connections in seconds)
 * logged 3 clients in of 27: an address whose connections had all been
 * pushed out pushed out the oldest of all, and a client's connection,
 * one among attackers' dozens, soon became the oldest. The address
 * holding the most gives way now, so a client's one connection goes only
 * when every address holds no more than one.
 */
TEST(admit_the_address_holding_most_gives_way)
{
	struct server *srv = mksrv_caps(100, 10, 4);
	struct conn *client = arrive(srv, "10.0.0.9:1");
	struct conn *a1 = arrive(srv, "10.0.0.1:1"), *a2 = arrive(srv, "10.0.0.1:2");
	struct conn *b1 = arrive(srv, "10.0.0.2:1");
	struct conn *c1, *c2, *d1;

	CHECK(client && a1 && a2 && b1);
	c1 = arrive(srv, "10.0.0.3:1");
	CHECK(c1 && a1->dead && !client->dead && !a2->dead && !b1->dead);
	/* one each: the newcomer's own address holds as many as any */
	c2 = arrive(srv, "10.0.0.3:2");
	CHECK(c2 && c1->dead && !client->dead);
	/* one each and none from the newcomer's: now the oldest of all */
	d1 = arrive(srv, "10.0.0.4:1");
	CHECK(d1 && client->dead && !a2->dead && !b1->dead && !c2->dead);
	server_destroy(srv);
	free(srv);
}
