// SPDX-License-Identifier: GPL-2.0-only
/*
 * Giving pages up when capacity falls below what is stored, without
 * losing any. Oldest-stored pages go first, in batches of at most
 * N2L_MAX_PAGES pages of one connected client:
 *
 *   to a peer with room:  PEER_PUT to the peer, then MOVED to the client;
 *   otherwise:            RETURN (the pages themselves) to the client.
 *
 * Pages stay here, and GETs are served, until the client answers OK; then
 * only those still stored with the version given up are dropped. A
 * client that says no, or does not answer in time, is asked again after a
 * backoff. Pages of clients that are not connected cannot be given up.
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
	struct client *cl = store_client(&srv->store, b->client_id, false);

	if (cl) {
		for (uint32_t i = 0; i < b->n; i++) {
			struct entry *e = store_find(&srv->store, cl, b->kv[i].key, b->kv[i].vers);

			if (e && e->move_id == b->id)
				store_unmark_moving(&srv->store, e);
		}
		if (cl->inflight)
			cl->inflight--;
	}
	batch_unlink(srv, b);
	free(b);
	srv->mover_kick = true;
}

static void client_backoff(struct server *srv, uint64_t client_id)
{
	struct client *cl = store_client(&srv->store, client_id, false);

	if (!cl)
		return;
	cl->backoff_ms = cl->backoff_ms ? cl->backoff_ms * 2 : BACKOFF_MIN_MS;
	if (cl->backoff_ms > BACKOFF_MAX_MS)
		cl->backoff_ms = BACKOFF_MAX_MS;
	cl->retry_at_ms = server_now(srv) + cl->backoff_ms;
}

/* The client said OK: drop what is still stored with the version given up. */
static uint32_t batch_drop(struct server *srv, struct batch *b)
{
	struct client *cl = store_client(&srv->store, b->client_id, false);
	uint32_t dropped = 0;

	if (!cl)
		return 0;
	for (uint32_t i = 0; i < b->n; i++) {
		struct entry *e = store_find(&srv->store, cl, b->kv[i].key, b->kv[i].vers);

		if (e) {
			store_drop(&srv->store, e);
			dropped++;
		}
	}
	cl->backoff_ms = 0;
	return dropped;
}

static void put_kvs(uint8_t *p, const struct batch *b)
{
	for (uint32_t i = 0; i < b->n; i++) {
		struct n2l_kv kv = {
			.key = htole64(b->kv[i].key),
			.vers = htole32(b->kv[i].vers),
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
			log_info(&srv->log, "client %016" PRIx64 ": %u pages moved to peer %s (%" PRIu64 " pages held)",
				 b->client_id, dropped, b->addr, srv->store.used);
		} else {
			srv->returned_pages += dropped;
			log_info(&srv->log, "client %016" PRIx64 ": %u pages handed back (%" PRIu64 " pages held)",
				 b->client_id, dropped, srv->store.used);
		}
	} else {
		log_warn(&srv->log, "client %016" PRIx64 ": %s of %u pages %s: keeping them, retrying later",
			 b->client_id, what, b->n,
			 status == SREQ_LOST ? "got no answer" : frame_status_name((unsigned int)status));
		client_backoff(srv, b->client_id);
	}
	batch_end(srv, b);
}

/* The peer has the pages: tell the client, listing those still current. */
static void send_moved(struct server *srv, struct client *cl, struct batch *b)
{
	struct n2l_addr addr;
	uint32_t n = 0;
	uint8_t *p;

	for (uint32_t i = 0; i < b->n; i++) {
		struct entry *e = store_find(&srv->store, cl, b->kv[i].key, b->kv[i].vers);

		if (e && e->move_id == b->id)
			b->kv[n++] = b->kv[i];
	}
	b->n = n;
	if (!n) {
		batch_end(srv, b);
		return;
	}
	b->phase = BATCH_MOVED;
	if (!sreq_send(srv, cl->conn, N2L_OP_MOVED, n,
		       n * sizeof(struct n2l_kv) + sizeof(addr), client_answered, b, &p)) {
		batch_end(srv, b);
		return;
	}
	put_kvs(p, b);
	memset(&addr, 0, sizeof(addr));
	memcpy(addr.addr, b->addr, strnlen(b->addr, sizeof(addr.addr) - 1));
	memcpy(p + n * sizeof(struct n2l_kv), &addr, sizeof(addr));
}

static void peer_put_done(struct server *srv, struct sreq *r, int status,
			  const struct frame_hdr *h, const uint8_t *payload)
{
	struct batch *b = r->arg;
	struct peer *p = r->conn->peer;
	struct client *cl;

	switch (status) {
	case N2L_ST_OK:
		cl = store_client(&srv->store, b->client_id, false);
		if (!cl || !conn_usable(cl->conn)) {
			log_warn(&srv->log, "client %016" PRIx64 " left before MOVED: keeping %u pages (the peer's copies expire there)",
				 b->client_id, b->n);
			batch_end(srv, b);
			return;
		}
		send_moved(srv, cl, b);
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

/* The connected client whose oldest page not being given up is oldest. */
static struct client *pick_client(struct server *srv, int64_t now)
{
	struct client *best = NULL;
	uint64_t best_seq = UINT64_MAX;

	for (struct client *c = srv->store.clients; c; c = c->next) {
		struct entry *e;

		if (c->held == c->moving || !conn_usable(c->conn) || !c->conn->hello_done ||
		    now < c->retry_at_ms || c->inflight >= MAX_CLIENT_BATCHES)
			continue;
		for (e = c->head; e && e->move_id; e = e->cnext)
			;
		if (e && e->seq < best_seq) {
			best = c;
			best_seq = e->seq;
		}
	}
	return best;
}

/* A ready peer with the most room; *wait if one may be ready soon. */
static struct peer *pick_peer(struct server *srv, bool *wait)
{
	struct peer *best = NULL;

	*wait = false;
	for (unsigned int i = 0; i < srv->npeers; i++) {
		struct peer *p = srv->peers[i];

		if (p->state == PEER_CONNECTING || p->state == PEER_HELLO)
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
	unsigned int clients = 0;

	if (excess > 0) {
		for (struct client *c = srv->store.clients; c; c = c->next) {
			if (c->held > c->moving && !conn_usable(c->conn)) {
				stuck += c->held - c->moving;
				clients++;
			}
		}
	}
	if (stuck != srv->stuck_pages && stuck)
		log_warn(&srv->log, "cannot give up %" PRId64 " more pages: %" PRIu64 " pages of %u clients that are not connected stay here",
			 excess, stuck, clients);
	srv->stuck_pages = stuck;
}

static bool start_batch(struct server *srv, struct client *cl, struct peer *p, uint32_t n)
{
	struct batch *b = calloc(1, sizeof(*b));
	struct entry *e;
	uint8_t *payload, *kvp, *pages;
	uint32_t i = 0;
	size_t len;

	if (!b)
		return false;
	b->id = ++srv->next_batch_id;
	b->client_id = cl->id;
	b->n = n;
	if (p) {
		struct n2l_peer pe = { .client_id = htole64(cl->id) };

		b->phase = BATCH_PEER_PUT;
		snprintf(b->addr, sizeof(b->addr), "%s", p->addr);
		len = sizeof(pe) + (size_t)n * (sizeof(struct n2l_kv) + N2L_PAGE_SIZE);
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
		len = (size_t)n * (sizeof(struct n2l_kv) + N2L_PAGE_SIZE);
		if (!sreq_send(srv, cl->conn, N2L_OP_RETURN, n, (uint32_t)len,
			       client_answered, b, &payload)) {
			free(b);
			return false;
		}
		kvp = payload;
	}
	pages = kvp + (size_t)n * sizeof(struct n2l_kv);
	for (e = cl->head; e && i < n; e = e->cnext) {
		if (e->move_id)
			continue;
		b->kv[i].key = e->key;
		b->kv[i].vers = e->vers;
		memcpy(pages + (size_t)i * N2L_PAGE_SIZE, entry_page(e), N2L_PAGE_SIZE);
		store_mark_moving(&srv->store, e, b->id);
		i++;
	}
	put_kvs(kvp, b);
	b->next = srv->batches;
	if (srv->batches)
		srv->batches->prev = b;
	srv->batches = b;
	srv->nbatches++;
	cl->inflight++;
	log_debug(&srv->log, "client %016" PRIx64 ": giving up %u pages %s%s", cl->id, n,
		  p ? "to peer " : "back to the client", p ? p->addr : "");
	return true;
}

void mover_run(struct server *srv)
{
	int64_t now = server_now(srv);
	int64_t excess = mover_excess(srv);

	srv->mover_kick = false;
	if (excess > 0)
		peer_tick(srv, now, true);
	while (excess > 0 && srv->nbatches < MAX_BATCHES) {
		struct client *cl = pick_client(srv, now);
		uint64_t n = (uint64_t)excess;
		struct peer *p;
		bool wait;

		if (!cl)
			break;
		p = pick_peer(srv, &wait);
		if (!p && wait)
			break;		/* a peer is on its way; return nothing yet */
		if (n > N2L_MAX_PAGES)
			n = N2L_MAX_PAGES;
		if (n > cl->held - cl->moving)
			n = cl->held - cl->moving;
		if (p && n > p->free_est)
			n = p->free_est;
		if (!start_batch(srv, cl, p, (uint32_t)n))
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
