// SPDX-License-Identifier: GPL-2.0-only
/*
 * Whether an accepted connection may stay: the connection caps. Anyone
 * who can reach the port can open connections that never log in, and
 * without a cap of their own they filled every slot (max_conns) from a
 * few addresses, so that no new client could log in. Connections not
 * authenticated have their own cap, max_unauth_conns, and when it (or
 * max_conns) is full a new connection takes the place of the oldest of
 * the address holding the most of them, its own if it holds as many as
 * any: an address that keeps opening connections pushes out its own
 * first, and a client's new connection, the only one from its address,
 * goes only when every address holds no more than one. Pushing out the
 * oldest of all was not enough: an attacker's connections, pushed out
 * by each other, soon left a client's the oldest.
 * Authenticated connections are never pushed out. The per-address cap
 * (addresses as netaddr_key() counts them) refuses outright.
 */
#include "server.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The accepted connections still open, as one new one from key sees them. */
struct census {
	uint64_t live, same, unauth;
};

static void take_census(struct server *srv, const uint8_t key[16], struct census *cs)
{
	memset(cs, 0, sizeof(*cs));
	for (struct conn *c = srv->conns; c; c = c->next) {
		if (c->kind != CONN_IN || c->dead)
			continue;
		cs->live++;
		cs->same += !memcmp(c->addr, key, sizeof(c->addr));
		cs->unauth += !conn_ready(c);
	}
}

static int by_addr_then_age(const void *a, const void *b)
{
	const struct conn *x = *(struct conn *const *)a;
	const struct conn *y = *(struct conn *const *)b;
	int d = memcmp(x->addr, y->addr, sizeof(x->addr));

	if (d)
		return d;
	return x->serial < y->serial ? -1 : x->serial > y->serial;
}

/* One address's connections not authenticated, oldest first. */
struct group {
	struct conn *oldest;
	size_t held;
	bool own;		/* the newcomer's address */
};

static bool gives_way_before(const struct group *g, const struct group *best)
{
	if (g->held != best->held)
		return g->held > best->held;
	if (g->own || best->own)
		return g->own;
	return g->oldest->serial < best->oldest->serial;
}

/* u: the n connections not authenticated; sorted here. */
static struct conn *pick_victim(struct conn **u, size_t n, const uint8_t key[16])
{
	struct group best = { 0 };

	qsort(u, n, sizeof(*u), by_addr_then_age);
	for (size_t i = 0, j; i < n; i = j) {
		struct group g = { .oldest = u[i] };

		for (j = i; j < n && !memcmp(u[j]->addr, u[i]->addr, sizeof(u[i]->addr)); j++)
			;
		g.held = j - i;
		g.own = !memcmp(u[i]->addr, key, sizeof(u[i]->addr));
		if (!best.oldest || gives_way_before(&g, &best))
			best = g;
	}
	return best.oldest;
}

/* NULL when every one is authenticated, or no memory to choose. */
static struct conn *victim_for(struct server *srv, const uint8_t key[16], uint64_t unauth)
{
	struct conn **u, *victim;
	size_t n = 0;

	if (!unauth)
		return NULL;
	u = malloc(unauth * sizeof(*u));
	if (!u)
		return NULL;
	for (struct conn *c = srv->conns; c && n < unauth; c = c->next)
		if (c->kind == CONN_IN && !c->dead && !conn_ready(c))
			u[n++] = c;
	victim = pick_victim(u, n, key);
	free(u);
	return victim;
}

/* Closed for a newer connection: logged now and then, not each time. */
static void push_out(struct server *srv, struct conn *c, const char *newcomer)
{
	int64_t now = server_now(srv);

	conn_kill(c, NULL);
	srv->pushed_out++;
	if (srv->push_logged_ms && now - srv->push_logged_ms < CAP_LOG_MS)
		return;
	log_warn(&srv->log, "connection %s: not authenticated, closed for a newer one from %s (%" PRIu64 " closed so; max_unauth_conns %" PRIu64 ", max_conns %" PRIu64 ")",
		 c->name, newcomer, srv->pushed_out, srv->cfg.max_unauth_conns,
		 srv->cfg.max_conns);
	srv->push_logged_ms = now;
	srv->pushed_out = 0;
}

bool admit_conn(struct server *srv, const uint8_t key[16], const char *name)
{
	const struct config *cfg = &srv->cfg;
	struct census cs;
	struct conn *victim;

	take_census(srv, key, &cs);
	if (cs.same >= cfg->max_conns_per_addr)
		return false;
	if (cs.live < cfg->max_conns && cs.unauth < cfg->max_unauth_conns)
		return true;
	/* Over a cap (lowered by a reload): one place would not be enough. */
	if (cs.live > cfg->max_conns || cs.unauth > cfg->max_unauth_conns)
		return false;
	victim = victim_for(srv, key, cs.unauth);
	if (!victim)
		return false;
	push_out(srv, victim, name);
	return true;
}
