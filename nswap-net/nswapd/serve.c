// SPDX-License-Identifier: GPL-2.0-only
/*
 * Requests from clients (and from peer servers) on accepted connections,
 * once authenticated. A client only ever reaches its own area: the one
 * of its authenticated identity and the device of its HELLO.
 */
#include "server.h"

#include <inttypes.h>
#include <string.h>

void serve_reply_info(struct conn *c, const struct frame_hdr *h)
{
	struct n2l_info info;
	uint8_t *p;

	server_info(c->srv, c, &info);
	p = conn_reply(c, h, N2L_ST_OK, sizeof(info));
	if (p)
		memcpy(p, &info, sizeof(info));
}

static void serve_put(struct conn *c, const struct frame_hdr *h, const uint8_t *payload)
{
	struct server *srv = c->srv;
	int rc;

	if (srv->draining) {
		conn_reply(c, h, N2L_ST_DRAINING, 0);
		return;
	}
	rc = store_put(&srv->store, c->area, h->key, h->count, h->vers, payload,
		       payload + (size_t)h->count * N2L_PAGE_SIZE);
	if (rc == STORE_NOMEM && !srv->nomem_logged)
		log_warn(&srv->log, "no memory for %u more pages: replying FULL until there is", h->count);
	srv->nomem_logged = rc == STORE_NOMEM;
	conn_reply(c, h, rc ? N2L_ST_FULL : N2L_ST_OK, 0);
}

static void serve_get(struct conn *c, const struct frame_hdr *h)
{
	uint32_t len = (uint32_t)N2L_PAGE_BYTES(h->count);
	uint8_t *p = conn_reply(c, h, N2L_ST_OK, len);

	if (!p)
		return;
	if (!store_get(&c->srv->store, c->area, h->key, h->count, h->vers, p,
		       p + (size_t)h->count * N2L_PAGE_SIZE)) {
		conn_unqueue(c, len);
		conn_reply(c, h, N2L_ST_STALE, 0);
	}
}

static void serve_retain(struct conn *c, const struct frame_hdr *h, const uint8_t *payload)
{
	uint8_t *p = conn_reply(c, h, N2L_ST_OK, (h->count + 7) / 8);

	if (p)
		store_retain(&c->srv->store, c->area, payload, h->count, p);
}

/*
 * A client reconciles every new connection, and has one at a time: the
 * area's other connections are abandoned ones. What they still carry
 * (PUTs buffered when the client gave up on them) would be stored with
 * this generation's mark and outlive its RETAIN_END, pages the client
 * knows nothing of. They close now, unread.
 */
static void close_abandoned(struct conn *c)
{
	for (struct conn *o = c->srv->conns; o; o = o->next)
		if (o != c && o->area == c->area && !o->dead)
			conn_kill(o, "abandoned: its client reconciles on a newer connection");
}

static void serve_retain_begin(struct conn *c, const struct frame_hdr *h)
{
	close_abandoned(c);
	store_retain_begin(&c->srv->store, c->area, h->key);
	conn_reply(c, h, N2L_ST_OK, 0);
}

static void serve_retain_end(struct conn *c, const struct frame_hdr *h)
{
	struct server *srv = c->srv;
	struct area *a = c->area;
	struct n2l_retained r;
	bool current = a->reconciling && a->gen == h->key;
	uint64_t dropped = store_retain_end(&srv->store, a, h->key);
	uint8_t *p;

	if (current)
		log_info(&srv->log, "connection %s: area %s reconciled: %" PRIu64 " pages dropped, %" PRIu64 " held",
			 c->name, a->tag, dropped, a->held);
	else
		log_info(&srv->log, "connection %s: area %s: RETAIN_END of a generation that is not current: nothing dropped",
			 c->name, a->tag);
	r.dropped = htole64(dropped);
	r.held = htole64(a->held);
	p = conn_reply(c, h, N2L_ST_OK, sizeof(r));
	if (p)
		memcpy(p, &r, sizeof(r));
}

/* Whose pages a PEER_PUT names: an identity we know (with keys), a device. */
static struct area *peer_put_area(struct conn *c, const struct n2l_peer *pe)
{
	struct server *srv = c->srv;
	uint64_t device = le64toh(pe->device);

	if (srv->psk.n && (!psk_identity_valid(pe->identity) || !psk_find(&srv->psk, pe->identity)))
		return NULL;
	return store_area(&srv->store, pe->identity, device, true);
}

static void serve_peer_put(struct conn *c, const struct frame_hdr *h, const uint8_t *payload)
{
	struct server *srv = c->srv;
	const uint8_t *kvs = payload + sizeof(struct n2l_peer);
	const uint8_t *pages = kvs + N2L_KV_BYTES(h->count);
	struct n2l_peer pe;
	struct area *a;
	int rc;

	if (srv->draining) {
		conn_reply(c, h, N2L_ST_DRAINING, 0);
		return;
	}
	memcpy(&pe, payload, sizeof(pe));
	a = peer_put_area(c, &pe);
	if (!a) {
		log_warn(&srv->log, "connection %s: PEER_PUT for an identity we do not know: FULL", c->name);
		conn_reply(c, h, N2L_ST_FULL, 0);
		return;
	}
	/* c->ap.identity: the peer's, zero without keys */
	rc = store_peer_put(&srv->store, a, c->ap.identity, kvs, h->count, pages,
			    pages + (size_t)h->count * N2L_PAGE_SIZE, server_now(srv));
	if (!a->nconns && a->held == a->unclaimed)
		a->gone_since_ms = server_now(srv);
	if (rc) {
		store_area_maybe_remove(&srv->store, a);
		conn_reply(c, h, N2L_ST_FULL, 0);
		return;
	}
	log_info(&srv->log, "connection %s: peer stored %u pages of area %s here (unclaimed)",
		 c->name, h->count, a->tag);
	conn_reply(c, h, N2L_ST_OK, 0);
}

static void serve_client(struct conn *c, const struct frame_hdr *h, const uint8_t *payload)
{
	struct server *srv = c->srv;

	switch (h->opcode) {
	case N2L_OP_PUT:
		serve_put(c, h, payload);
		break;
	case N2L_OP_GET:
		serve_get(c, h);
		break;
	case N2L_OP_INVAL:
		store_inval(&srv->store, c->area, payload, h->count);
		conn_reply(c, h, N2L_ST_OK, 0);
		break;
	case N2L_OP_FREE_ALL: {
		uint64_t n = store_free_all(&srv->store, c->area);

		log_info(&srv->log, "connection %s: area %s FREE_ALL: %" PRIu64 " pages dropped",
			 c->name, c->area->tag, n);
		conn_reply(c, h, N2L_ST_OK, 0);
		break;
	}
	case N2L_OP_RETAIN_BEGIN:
		serve_retain_begin(c, h);
		break;
	case N2L_OP_RETAIN:
		serve_retain(c, h, payload);
		break;
	case N2L_OP_RETAIN_END:
		serve_retain_end(c, h);
		break;
	default:
		conn_close_after(c, N2L_ST_INVALID, h, "an unexpected request");
		break;
	}
}

void serve_frame(struct conn *c, const struct frame_hdr *h, const uint8_t *payload)
{
	struct server *srv = c->srv;
	bool reply = h->flags & N2L_F_REPLY;
	bool client = c->role == N2L_ROLE_CLIENT;

	if (c->kind == CONN_PEER) {
		peer_frame(c, h, payload);
		return;
	}
	if (!conn_ready(c)) {		/* conn_process let only these through */
		if (c->auth == CA_HELLO)
			hello_serve(c, h, payload);
		else
			hello_auth(c, h, payload);
		return;
	}
	if (reply) {
		if (sreq_complete(srv, c, h, payload) < 0)
			conn_close_after(c, N2L_ST_INVALID, h, "a reply to no request of ours");
		return;
	}
	log_debug(&srv->log, "connection %s: %s id %" PRIu64 " key %" PRIu64 " count %u vers %" PRIu64,
		  c->name, frame_op_name(h->opcode), h->id, h->key, h->count, h->vers);
	switch (h->opcode) {
	case N2L_OP_HELLO:
	case N2L_OP_AUTH:
		conn_close_after(c, N2L_ST_INVALID, h, "a second HELLO or AUTH");
		return;
	case N2L_OP_MOVED:
	case N2L_OP_RETURN:
		conn_close_after(c, N2L_ST_INVALID, h, "a request only servers send");
		return;
	case N2L_OP_PEER_PUT:
		if (client)
			conn_close_after(c, N2L_ST_INVALID, h, "PEER_PUT from a client");
		else
			serve_peer_put(c, h, payload);
		return;
	case N2L_OP_STATUS:
		serve_reply_info(c, h);
		return;
	}
	if (!client) {
		conn_close_after(c, N2L_ST_INVALID, h, "a client request from a peer server");
		return;
	}
	serve_client(c, h, payload);
}

/* An accepted connection is gone: its area keeps its pages for a while. */
void serve_conn_gone(struct conn *c)
{
	struct server *srv = c->srv;
	struct area *a = c->area;

	if (!a)
		return;
	c->area = NULL;
	a->nconns--;
	if (a->conn == c) {
		a->conn = NULL;
		for (struct conn *o = srv->conns; o; o = o->next)
			if (o != c && o->area == a && !o->dead)
				a->conn = o;
	}
	if (a->nconns)
		return;
	a->gone_since_ms = server_now(srv);
	if (!a->held) {
		log_info(&srv->log, "area %s: client disconnected", a->tag);
		store_area_maybe_remove(&srv->store, a);
		return;
	}
	log_info(&srv->log, "area %s: client disconnected: keeping its %" PRIu64 " pages for %" PRIu64 " s",
		 a->tag, a->held, srv->cfg.client_timeout_s);
}
