// SPDX-License-Identifier: GPL-2.0-only
/*
 * Giving pages up when capacity falls below what is stored, without
 * losing any. Unclaimed pages (a peer's second copies) are simply dropped
 * first. Then the oldest claimed pages go, in batches of at most
 * N2L_MAX_PAGES pages of one area whose client is connected:
 *
 *   to a peer with room:  PEER_PUT to the peer, then MOVED to the client;
 *   otherwise:            RETURN (the pages themselves) to the client.
 *
 * Pages stay here, and GETs are served, until the client answers OK; then
 * only those still stored with the version given up, and not stored again
 * since, are dropped. A client that says no, or does not answer in time,
 * is asked again after a backoff; one that refuses a MOVED to a peer
 * (FULL: it does not trust or cannot reach it) gets its pages by RETURN
 * instead for a while. Pages of clients that are not connected cannot be
 * given up.
 */
#include "server.h"

#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

int64_t mover_excess(struct server *srv)
{
	const struct store *st = &srv->store;

	return (int64_t)st->used - (int64_t)st->capacity - (int64_t)st->moving;
}

static void batch_unlink(struct server *srv, struct batch *b)
{
	if (b->prev)
		b->prev->next = b->next;
	else
		srv->batches = b->next;
	if (b->next)
		b->next->prev = b->prev;
	srv->nbatches--;
}

/* The batch is over: unmark what it still marks. */
static void batch_end(struct server *srv, struct batch *b)
{
	struct area *a = b->area;

	for (uint32_t i = 0; i < b->n; i++) {
		struct entry *e = store_find(&srv->store, a, b->kv[i].key, b->kv[i].vers);

		if (e && e->move_id == b->id)
			store_unmark_moving(&srv->store, e);
	}
	a->inflight--;
	batch_unlink(srv, b);
	free(b);
	if (!a->nconns)
		store_area_maybe_remove(&srv->store, a);
	srv->mover_kick = true;
}

static void area_backoff(struct server *srv, struct area *a)
{
	a->backoff_ms = a->backoff_ms ? a->backoff_ms * 2 : BACKOFF_MIN_MS;
	if (a->backoff_ms > BACKOFF_MAX_MS)
		a->backoff_ms = BACKOFF_MAX_MS;
	a->retry_at_ms = server_now(srv) + a->backoff_ms;
}

/* MOVED to this peer refused: hand the area's pages back instead, a while. */
static void area_refused_peer(struct server *srv, struct area *a, const char *addr)
{
	if (strcmp(a->refused_peer, addr))
		a->refused_backoff_ms = 0;
	a->refused_backoff_ms = a->refused_backoff_ms ? a->refused_backoff_ms * 2 : REFUSED_MIN_MS;
	if (a->refused_backoff_ms > REFUSED_MAX_MS)
		a->refused_backoff_ms = REFUSED_MAX_MS;
	snprintf(a->refused_peer, sizeof(a->refused_peer), "%s", addr);
	a->refused_until_ms = server_now(srv) + a->refused_backoff_ms;
}

/*
 * The client said OK: drop what is still stored with the version given
 * up, unless it was stored again since (a PUT unmarks it): the same key
 * and version PUT again is a new copy, a repair's made from another
 * server's, which the client's OK, decided before, does not cover.
 */
static uint32_t batch_drop(struct server *srv, struct batch *b)
{
	uint32_t dropped = 0;

	for (uint32_t i = 0; i < b->n; i++) {
		struct entry *e = store_find(&srv->store, b->area, b->kv[i].key, b->kv[i].vers);

		if (e && e->move_id == b->id) {
			store_drop(&srv->store, e);
			dropped++;
		}
	}
	b->area->backoff_ms = 0;
	return dropped;
}

static void put_kvs(uint8_t *p, const struct batch *b)
{
	for (uint32_t i = 0; i < b->n; i++) {
		struct n2l_kv kv = {
			.key = htole64(b->kv[i].key),
			.vers = htole64(b->kv[i].vers),
		};

		memcpy(p + (size_t)i * sizeof(kv), &kv, sizeof(kv));
	}
}

static void client_answered(struct server *srv, struct sreq *r, int status,
			    const struct frame_hdr *h, const uint8_t *payload)
{
	struct batch *b = r->arg;
	const char *what = b->phase == BATCH_MOVED ? "MOVED" : "RETURN";

	if (status == N2L_ST_OK) {
		uint32_t dropped = batch_drop(srv, b);

		if (b->phase == BATCH_MOVED) {
			srv->moved_pages += dropped;
			b->area->refused_backoff_ms = 0;
			log_info(&srv->log, "area %s: %u pages moved to peer %s (%" PRIu64 " pages held)",
				 b->area->tag, dropped, b->addr, srv->store.used);
		} else {
			srv->returned_pages += dropped;
			log_info(&srv->log, "area %s: %u pages handed back (%" PRIu64 " pages held)",
				 b->area->tag, dropped, srv->store.used);
		}
	} else if (b->phase == BATCH_MOVED && status == N2L_ST_FULL) {
		area_refused_peer(srv, b->area, b->addr);
		log_warn(&srv->log, "area %s: MOVED of %u pages to peer %s refused: handing pages back instead for %u s",
			 b->area->tag, b->n, b->addr, b->area->refused_backoff_ms / 1000);
	} else {
		log_warn(&srv->log, "area %s: %s of %u pages %s: keeping them, retrying later",
			 b->area->tag, what, b->n,
			 status == SREQ_LOST ? "got no answer" : frame_status_name((unsigned int)status));
		area_backoff(srv, b->area);
	}
	batch_end(srv, b);
}

/*
 * The peer has the pages: tell the client, naming every one. A page
 * dropped here meanwhile (the client overwrote it) left a copy on the
 * peer that only the client can tell is junk, and it invalidates it
 * there; left out, that copy would stay on the peer, unclaimed, until it
 * expired.
 */
static void send_moved(struct server *srv, struct area *a, struct batch *b)
{
	struct n2l_addr addr;
	uint8_t *p;

	b->phase = BATCH_MOVED;
	if (!sreq_send(srv, a->conn, N2L_OP_MOVED, b->n,
		       b->n * sizeof(struct n2l_kv) + sizeof(addr), client_answered, b, &p)) {
		batch_end(srv, b);
		return;
	}
	put_kvs(p, b);
	memset(&addr, 0, sizeof(addr));
	memcpy(addr.addr, b->addr, strnlen(b->addr, sizeof(addr.addr) - 1));
	memcpy(p + b->n * sizeof(struct n2l_kv), &addr, sizeof(addr));
}

static void peer_put_done(struct server *srv, struct sreq *r, int status,
			  const struct frame_hdr *h, const uint8_t *payload)
{
	struct batch *b = r->arg;
	struct peer *p = r->conn->peer;
	struct area *a = b->area;

	switch (status) {
	case N2L_ST_OK:
		if (!conn_usable(a->conn)) {
			log_warn(&srv->log, "area %s: client left before MOVED: keeping %u pages (the peer's copies expire there)",
				 a->tag, b->n);
			batch_end(srv, b);
			return;
		}
		send_moved(srv, a, b);
		return;
	case N2L_ST_FULL:
		if (p && p->free_est >= b->n)
			p->free_est = b->n - 1;
		log_info(&srv->log, "peer %s: FULL for %u pages", b->addr, b->n);
		break;
	case N2L_ST_DRAINING:
		if (p) {
			p->draining = true;
			p->free_est = 0;
		}
		log_info(&srv->log, "peer %s: draining, takes no pages", b->addr);
		break;
	case SREQ_LOST:
		log_warn(&srv->log, "peer %s: lost with PEER_PUT of %u pages in flight", b->addr, b->n);
		break;
	default:
		log_warn(&srv->log, "peer %s: PEER_PUT refused: %s", b->addr,
			 frame_status_name((unsigned int)status));
		conn_kill(r->conn, "PEER_PUT refused");
		break;
	}
	batch_end(srv, b);
}

static uint64_t claimable(const struct area *a)
{
	return a->held - a->unclaimed - a->moving;
}

/* The area (client connected) whose oldest claimed page not moving is oldest. */
static struct area *pick_area(struct server *srv, int64_t now)
{
	struct area *best = NULL;
	uint64_t best_seq = UINT64_MAX;

	for (struct area *a = srv->store.areas; a; a = a->next) {
		struct entry *e;

		if (!claimable(a) || !conn_usable(a->conn) || !conn_ready(a->conn) ||
		    now < a->retry_at_ms || a->inflight >= MAX_CLIENT_BATCHES)
			continue;
		for (e = a->head; e && (e->move_id || !e->claimed); e = e->anext)
			;
		if (e && e->seq < best_seq) {
			best = a;
			best_seq = e->seq;
		}
	}
	return best;
}

/* A ready peer with the most room, not one the area refused lately; *wait
 * if one may be ready soon. */
static struct peer *pick_peer(struct server *srv, const struct area *a, int64_t now,
			      bool *wait)
{
	struct peer *best = NULL;

	*wait = false;
	for (unsigned int i = 0; i < srv->npeers; i++) {
		struct peer *p = srv->peers[i];

		if (now < a->refused_until_ms && !strcmp(a->refused_peer, p->addr))
			continue;
		if (p->state == PEER_CONNECTING || p->state == PEER_HELLO || p->state == PEER_AUTH)
			*wait = true;
		if (p->state == PEER_READY && conn_usable(p->conn) && !p->draining && p->free_est &&
		    (!best || p->free_est > best->free_est))
			best = p;
	}
	return best;
}

static void log_stuck(struct server *srv, int64_t excess)
{
	uint64_t stuck = 0;
	unsigned int areas = 0;

	if (excess > 0) {
		for (struct area *a = srv->store.areas; a; a = a->next) {
			if (claimable(a) && !conn_usable(a->conn)) {
				stuck += claimable(a);
				areas++;
			}
		}
	}
	if (stuck != srv->stuck_pages && stuck)
		log_warn(&srv->log, "cannot give up %" PRId64 " more pages: %" PRIu64 " pages of %u clients that are not connected stay here",
			 excess, stuck, areas);
	srv->stuck_pages = stuck;
}

/* The n oldest claimed pages of the area not moving yet, into the batch. */
static void batch_fill(struct server *srv, struct area *a, struct batch *b,
		       uint8_t *kvp)
{
	uint8_t *pages = kvp + N2L_KV_BYTES(b->n);
	uint8_t *seals = pages + (size_t)b->n * N2L_PAGE_SIZE;
	uint32_t i = 0;

	for (struct entry *e = a->head; e && i < b->n; e = e->anext) {
		if (e->move_id || !e->claimed)
			continue;
		b->kv[i].key = e->key;
		b->kv[i].vers = e->vers;
		memcpy(pages + (size_t)i * N2L_PAGE_SIZE, entry_page(e), N2L_PAGE_SIZE);
		memcpy(seals + (size_t)i * N2L_SEAL_LEN, e->seal, N2L_SEAL_LEN);
		store_mark_moving(&srv->store, e, b->id);
		i++;
	}
	put_kvs(kvp, b);
}

static bool start_batch(struct server *srv, struct area *a, struct peer *p, uint32_t n)
{
	struct batch *b = calloc(1, sizeof(*b));
	uint8_t *payload, *kvp;
	size_t len;

	if (!b)
		return false;
	b->id = ++srv->next_batch_id;
	b->area = a;
	b->n = n;
	if (p) {
		struct n2l_peer pe = { .device = htole64(a->device) };

		memcpy(pe.identity, a->identity, N2L_ID_LEN);
		b->phase = BATCH_PEER_PUT;
		snprintf(b->addr, sizeof(b->addr), "%s", p->addr);
		len = sizeof(pe) + N2L_KV_BYTES(n) + N2L_PAGE_BYTES(n);
		if (!sreq_send(srv, p->conn, N2L_OP_PEER_PUT, n, (uint32_t)len,
			       peer_put_done, b, &payload)) {
			free(b);
			return false;
		}
		memcpy(payload, &pe, sizeof(pe));
		kvp = payload + sizeof(pe);
		p->free_est -= n;
	} else {
		b->phase = BATCH_RETURN;
		len = N2L_KV_BYTES(n) + N2L_PAGE_BYTES(n);
		if (!sreq_send(srv, a->conn, N2L_OP_RETURN, n, (uint32_t)len,
			       client_answered, b, &payload)) {
			free(b);
			return false;
		}
		kvp = payload;
	}
	batch_fill(srv, a, b, kvp);
	b->next = srv->batches;
	if (srv->batches)
		srv->batches->prev = b;
	srv->batches = b;
	srv->nbatches++;
	a->inflight++;
	log_debug(&srv->log, "area %s: giving up %u pages %s%s", a->tag, n,
		  p ? "to peer " : "back to the client", p ? p->addr : "");
	return true;
}

/* Unclaimed pages are second copies: the first to go. */
static int64_t drop_unclaimed(struct server *srv, int64_t excess)
{
	uint64_t n;

	if (excess <= 0 || !srv->store.unclaimed)
		return excess;
	n = store_drop_unclaimed(&srv->store, (uint64_t)excess);
	log_info(&srv->log, "%" PRIu64 " unclaimed pages dropped to shrink", n);
	return excess - (int64_t)n;
}

void mover_run(struct server *srv)
{
	int64_t now = server_now(srv);
	int64_t excess = drop_unclaimed(srv, mover_excess(srv));

	srv->mover_kick = false;
	if (excess > 0)
		peer_tick(srv, now, true);
	while (excess > 0 && srv->nbatches < MAX_BATCHES) {
		struct area *a = pick_area(srv, now);
		uint64_t n = (uint64_t)excess;
		struct peer *p;
		bool wait;

		if (!a)
			break;
		p = pick_peer(srv, a, now, &wait);
		if (!p && wait)
			break;		/* a peer is on its way; return nothing yet */
		if (n > N2L_MAX_PAGES)
			n = N2L_MAX_PAGES;
		if (n > claimable(a))
			n = claimable(a);
		if (p && n > p->free_est)
			n = p->free_est;
		if (!start_batch(srv, a, p, (uint32_t)n))
			break;		/* could not send: try again later */
		excess -= (int64_t)n;
	}
	log_stuck(srv, mover_excess(srv));
}

void mover_abort_all(struct server *srv)
{
	while (srv->batches)
		batch_end(srv, srv->batches);
}
