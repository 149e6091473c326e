// SPDX-License-Identifier: GPL-2.0-only
/* The server's life cycle: capacity, ticks, reloads, draining. */
#include "server.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t server_now(struct server *srv)
{
	return srv->clock();
}

int server_init(struct server *srv, const struct config *cfg, uint32_t chunk_pages,
		bool lock)
{
	memset(srv, 0, sizeof(*srv));
	log_init(&srv->log, cfg->log_level);
	srv->cfg = *cfg;
	srv->clock = mono_ms;
	srv->exit_code = -1;
	srv->epfd = -1;
	srv->sigfd = -1;
	srv->sig_ev.type = EV_SIGNAL;
	do {
		if (auth_random(&srv->epoch, sizeof(srv->epoch)))
			return -1;
	} while (!srv->epoch);
	if (store_init(&srv->store, &srv->log, chunk_pages, lock, cfg->require_mlock))
		return -1;
	srv->store.quota = cfg->client_quota_mb * 256;
	if (peer_set(srv, cfg)) {
		store_destroy(&srv->store);
		return -1;
	}
	srv->next_capacity_ms = server_now(srv);
	return 0;
}

void server_destroy(struct server *srv)
{
	sreq_abort_all(srv);
	mover_abort_all(srv);
	while (srv->conns) {
		struct conn *c = srv->conns;

		conn_kill(c, NULL);
		c->area = NULL;
		if (c->peer)
			c->peer->conn = NULL;
		conn_free(c);
	}
	peer_free_all(srv);
	store_destroy(&srv->store);
	psk_free(&srv->psk);
}

uint64_t server_free_for(struct server *srv, const struct conn *c)
{
	if (srv->draining)
		return 0;
	return store_area_free(&srv->store, c ? c->area : NULL);
}

uint32_t server_free_pages32(struct server *srv, const struct conn *c)
{
	uint64_t f = server_free_for(srv, c);

	return f > UINT32_MAX ? UINT32_MAX : (uint32_t)f;
}

void server_info(struct server *srv, const struct conn *c, struct n2l_info *info)
{
	memset(info, 0, sizeof(*info));
	info->epoch = htole64(srv->epoch);
	info->capacity_pages = htole64(srv->store.capacity);
	info->free_pages = htole64(server_free_for(srv, c));
	info->held_pages = htole64(c && c->area ? c->area->held : 0);
	info->state = htole32(srv->draining ? N2L_SERVER_DRAINING : N2L_SERVER_NORMAL);
}

/* Whether a connection's identity still has the key it authenticated with. */
static bool key_still_good(const struct psk_table *keys, const struct conn *c)
{
	const struct psk_entry *e;

	if (!keys->n)
		return !c->secure;
	if (!c->secure)
		return false;
	if (c->auth == CA_HELLO)
		return true;
	e = psk_find(keys, c->ap.identity);
	return e && auth_proof_equal(e->key, c->psk) &&
	       (c->ap.role != N2L_ROLE_PEER || e->peer);
}

void server_set_keys(struct server *srv, struct psk_table *keys)
{
	unsigned int closed = 0;

	for (struct conn *c = srv->conns; c; c = c->next) {
		if (c->kind != CONN_IN || c->dead || key_still_good(keys, c))
			continue;
		conn_kill(c, "its identity or key is no longer in the psk file");
		closed++;
	}
	psk_free(&srv->psk);
	srv->psk = *keys;
	memset(keys, 0, sizeof(*keys));
	if (closed)
		log_info(&srv->log, "keys reloaded: %u connections closed", closed);
}

void server_capacity_update(struct server *srv)
{
	struct store *st = &srv->store;
	uint64_t kb, old = st->capacity, target;

	if (srv->draining) {
		st->capacity = 0;
	} else {
		if (meminfo_avail_kb(srv->cfg.meminfo, &kb)) {
			if (!srv->meminfo_failed)
				log_warn(&srv->log, "cannot read MemAvailable from %s: capacity stays at %" PRIu64 " pages",
					 srv->cfg.meminfo, old);
			srv->meminfo_failed = true;
			return;
		}
		srv->meminfo_failed = false;
		srv->last_avail_kb = kb;
		target = capacity_target(st->used, kb, &srv->cfg);
		st->capacity = target;
	}
	if (st->capacity != old)
		log_debug(&srv->log, "capacity %" PRIu64 " pages (was %" PRIu64 "), %" PRIu64 " held",
			  st->capacity, old, st->used);
	if (st->capacity >= st->used)
		srv->shrinking = false;
	if (st->capacity < st->used) {
		if (!srv->shrinking)
			log_info(&srv->log, "capacity %" PRIu64 " pages is below the %" PRIu64 " pages held: giving %" PRIu64 " up",
				 st->capacity, st->used, st->used - st->capacity);
		srv->shrinking = true;
		srv->mover_kick = true;
	}
}

/*
 * Areas whose client is gone for longer than client_timeout_s lose their
 * pages. Unclaimed pages expire unclaimed_timeout_s after they came, much
 * sooner: a client claims the pages moved to it as soon as it has read
 * them back, and what it does not claim is junk that its peer pays for.
 * Areas with nothing left go.
 */
static void expire_areas(struct server *srv, int64_t now)
{
	int64_t ttl = (int64_t)srv->cfg.client_timeout_s * 1000;
	int64_t unclaimed_ttl = (int64_t)srv->cfg.unclaimed_timeout_s * 1000;
	uint64_t n = store_expire_unclaimed(&srv->store, now, unclaimed_ttl);
	struct area *a, *next;

	if (n)
		log_info(&srv->log, "%" PRIu64 " unclaimed pages expired", n);
	for (a = srv->store.areas; a; a = next) {
		next = a->next;
		if (a->nconns)
			continue;
		if (a->held > a->unclaimed && now - a->gone_since_ms >= ttl) {
			n = store_drop_claimed(&srv->store, a);
			log_info(&srv->log, "area %s: client gone for %" PRIu64 " s: dropping its %" PRIu64 " pages",
				 a->tag, srv->cfg.client_timeout_s, n);
		}
		store_area_maybe_remove(&srv->store, a);
	}
}

/* Connections that did not authenticate in time, or did not close in time. */
static void conn_deadlines(struct server *srv, int64_t now)
{
	for (struct conn *c = srv->conns; c; c = c->next) {
		if (c->dead)
			continue;
		if ((c->closing || c->connecting) && now >= c->deadline_ms)
			conn_kill(c, c->connecting ? "connect timed out" : "no close in time");
		else if (c->kind == CONN_IN && !conn_ready(c) && now >= c->auth_deadline_ms)
			conn_kill(c, "not authenticated in time");
		/* Idle connections give big buffers back (busy ones keep them). */
		buf_trim(&c->in, IN_MIN);
		buf_trim(&c->out, IN_MIN);
	}
}

void server_tick(struct server *srv)
{
	int64_t now = server_now(srv);

	if (now >= srv->next_capacity_ms) {
		server_capacity_update(srv);
		srv->next_capacity_ms = now + (int64_t)srv->cfg.interval_ms;
	}
	sreq_tick(srv, now);
	conn_deadlines(srv, now);
	expire_areas(srv, now);
	peer_tick(srv, now, mover_excess(srv) > 0);
	srv->mover_kick = true;		/* batches whose backoff ended */
	if (srv->draining && srv->exit_code < 0 && srv->store.used &&
	    now >= srv->drain_deadline_ms) {
		log_err(&srv->log, "drain timed out after %" PRIu64 " s: %" PRIu64 " pages lost",
			srv->cfg.drain_timeout_s, srv->store.used);
		srv->exit_code = 1;
	}
}

void server_drain(struct server *srv)
{
	if (srv->draining) {
		if (srv->store.used)
			log_err(&srv->log, "second signal: exiting now, %" PRIu64 " pages lost",
				srv->store.used);
		else
			log_info(&srv->log, "second signal: exiting now");
		srv->exit_code = srv->store.used ? 1 : 0;
		return;
	}
	srv->draining = true;
	srv->drain_deadline_ms = server_now(srv) + (int64_t)srv->cfg.drain_timeout_s * 1000;
	log_info(&srv->log, "draining: no new pages; %" PRIu64 " pages to give up in %" PRIu64 " s at most",
		 srv->store.used, srv->cfg.drain_timeout_s);
	server_capacity_update(srv);
	srv->mover_kick = true;
}

/* --prealloc: min_mb mapped and locked now, kept for good. */
int server_prealloc(struct server *srv)
{
	uint64_t pages = srv->cfg.min_mb * 256;

	if (!srv->cfg.prealloc) {
		srv->store.pool.floor_slots = 0;
		return 0;
	}
	if (pool_prealloc(&srv->store.pool, pages)) {
		log_err(&srv->log, "--prealloc: cannot map and lock %" PRIu64 " MB of page memory",
			srv->cfg.min_mb);
		return -1;
	}
	log_info(&srv->log, "%" PRIu64 " MB of page memory mapped and locked", srv->cfg.min_mb);
	return 0;
}

void server_reload(struct server *srv, const struct config *ncfg)
{
	struct config cfg = *ncfg;

	if (cfg.nlisten != srv->cfg.nlisten ||
	    memcmp(cfg.listen, srv->cfg.listen, sizeof(cfg.listen)))
		log_warn(&srv->log, "reload: listen addresses change only on restart");
	memcpy(cfg.listen, srv->cfg.listen, sizeof(cfg.listen));
	cfg.nlisten = srv->cfg.nlisten;
	if (peer_set(srv, &cfg)) {
		log_err(&srv->log, "reload: out of memory for peers; keeping the old configuration");
		return;
	}
	srv->cfg = cfg;
	srv->log.level = cfg.log_level;
	srv->store.pool.require_lock = cfg.require_mlock;
	srv->store.quota = cfg.client_quota_mb * 256;
	server_prealloc(srv);	/* a failure is logged; pages still get stored */
	log_info(&srv->log, "configuration reloaded: min %" PRIu64 " MB, max %" PRIu64 " MB, reserve %" PRIu64 " MB, %u peers, %zu identities",
		 cfg.min_mb, cfg.max_mb, cfg.reserve_mb, cfg.npeers, srv->psk.n);
	server_capacity_update(srv);
	srv->next_capacity_ms = server_now(srv) + (int64_t)cfg.interval_ms;
}

static void reap(struct server *srv)
{
	struct conn *c, *next;

	for (c = srv->conns; c; c = next) {
		next = c->next;
		if (!c->dead)
			continue;
		serve_conn_gone(c);
		peer_conn_gone(c);
		sreq_conn_lost(srv, c);
		next = c->next;
		if (c->dirty) {
			struct conn **pp = &srv->dirty;

			while (*pp != c)
				pp = &(*pp)->dirty_next;
			*pp = c->dirty_next;
		}
		conn_free(c);
	}
}

void server_after_events(struct server *srv)
{
	for (int round = 0; round < 4; round++) {
		reap(srv);
		if (srv->mover_kick)
			mover_run(srv);
		while (srv->dirty) {
			struct conn *c = srv->dirty;

			srv->dirty = c->dirty_next;
			c->dirty = false;
			loop_flush(c);
		}
		if (!srv->mover_kick)
			break;
	}
	reap(srv);
	if (srv->draining && !srv->store.used && srv->exit_code < 0) {
		log_info(&srv->log, "drained: every page given up (%" PRIu64 " moved to peers, %" PRIu64 " handed back)",
			 srv->moved_pages, srv->returned_pages);
		srv->exit_code = 0;
	}
}
