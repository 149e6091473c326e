// SPDX-License-Identifier: GPL-2.0-only
/*
 * Whether an accepted connection may stay: the connection caps. Anyone
 * who can reach the port can open connections that never log in, and
 * without a cap of their own they filled every slot (max_conns) from a
 * few addresses, so that no new client could log in. Connections not
 * authenticated have their own cap, max_unauth_conns, and when it (or
 * max_conns) is full a new connection takes the place of the oldest of
 * them, one from its own address if there is one: an address that keeps
 * opening connections pushes out its own first, and a client's new
 * connection, the youngest, lives until it has had time to log in.
 * Authenticated connections are never pushed out. The per-address cap
 * (addresses as netaddr_key() counts them) refuses outright.
 */
#include "server.h"

#include <inttypes.h>
#include <string.h>

/* The accepted connections still open, as one new one from key sees them. */
struct census {
	uint64_t live, same, unauth;
	struct conn *oldest;		/* not authenticated */
	struct conn *oldest_same;	/* not authenticated, from key */
};

static void older(struct conn **slot, struct conn *c)
{
	if (!*slot || c->serial < (*slot)->serial)
		*slot = c;
}

static void take_census(struct server *srv, const uint8_t key[16], struct census *cs)
{
	memset(cs, 0, sizeof(*cs));
	for (struct conn *c = srv->conns; c; c = c->next) {
		bool same;

		if (c->kind != CONN_IN || c->dead)
			continue;
		same = !memcmp(c->addr, key, sizeof(c->addr));
		cs->live++;
		cs->same += same;
		if (conn_ready(c))
			continue;
		cs->unauth++;
		older(&cs->oldest, c);
		if (same)
			older(&cs->oldest_same, c);
	}
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
	victim = cs.oldest_same ? cs.oldest_same : cs.oldest;
	if (!victim)
		return false;		/* every one authenticated */
	push_out(srv, victim, name);
	return true;
}
