// SPDX-License-Identifier: GPL-2.0-only
/* Requests from clients (and from peer servers) on accepted connections. */
#include "server.h"

#include <inttypes.h>
#include <string.h>

static bool token_equal(const uint8_t *a, const uint8_t *b)
{
	volatile uint8_t diff = 0;

	for (int i = 0; i < N2L_TOKEN_LEN; i++)
		diff |= a[i] ^ b[i];
	return diff == 0;
}

static void reply_info(struct conn *c, const struct frame_hdr *h)
{
	struct n2l_info info;
	uint8_t *p;

	server_info(c->srv, c->client, &info);
	p = conn_reply(c, h, N2L_ST_OK, sizeof(info));
	if (p)
		memcpy(p, &info, sizeof(info));
}

static void serve_hello(struct conn *c, const struct frame_hdr *h, const uint8_t *payload)
{
	struct server *srv = c->srv;
	struct n2l_hello hello;
	uint32_t role;

	memcpy(&hello, payload, sizeof(hello));
	role = le32toh(hello.role);
	c->hello_id = le64toh(hello.client_id);
	if (role != N2L_ROLE_CLIENT && role != N2L_ROLE_PEER) {
		conn_close_after(c, N2L_ST_INVALID, h, "HELLO with an unknown role");
		return;
	}
	if (srv->cfg.have_token && !token_equal(hello.token, srv->cfg.token)) {
		conn_close_after(c, N2L_ST_AUTH, h, "HELLO with a wrong token");
		return;
	}
	c->role = role;
	if (role == N2L_ROLE_CLIENT) {
		struct client *cl = store_client(&srv->store, c->hello_id, true);

		if (!cl) {
			conn_kill(c, "out of memory for a client");
			return;
		}
		c->client = cl;
		cl->nconns++;
		cl->conn = c;
		cl->retry_at_ms = 0;
		cl->backoff_ms = 0;
		cl->stuck_logged = false;
		log_info(&srv->log, "connection %s: client %016" PRIx64 " hello (%" PRIu64 " pages held here)",
			 c->name, cl->id, cl->held);
		srv->mover_kick = true;
	} else {
		log_info(&srv->log, "connection %s: peer server %016" PRIx64 " hello",
			 c->name, c->hello_id);
	}
	c->hello_done = true;
	reply_info(c, h);
}

static void serve_put(struct conn *c, const struct frame_hdr *h, const uint8_t *payload)
{
	struct server *srv = c->srv;
	int rc;

	if (srv->draining) {
		conn_reply(c, h, N2L_ST_DRAINING, 0);
		return;
	}
	rc = store_put(&srv->store, c->client, h->key, h->count, h->vers, payload);
	if (rc == STORE_NOMEM && !srv->nomem_logged)
		log_warn(&srv->log, "no memory for %u more pages: replying FULL until there is", h->count);
	srv->nomem_logged = rc == STORE_NOMEM;
	conn_reply(c, h, rc ? N2L_ST_FULL : N2L_ST_OK, 0);
}

static void serve_get(struct conn *c, const struct frame_hdr *h)
{
	uint32_t len = h->count * N2L_PAGE_SIZE;
	uint8_t *p = conn_reply(c, h, N2L_ST_OK, len);

	if (!p)
		return;
	if (!store_get(&c->srv->store, c->client, h->key, h->count, h->vers, p)) {
		conn_unqueue(c, len);
		conn_reply(c, h, N2L_ST_STALE, 0);
	}
}

static void serve_peer_put(struct conn *c, const struct frame_hdr *h, const uint8_t *payload)
{
	struct server *srv = c->srv;
	struct n2l_peer pe;
	struct client *cl;
	bool fresh;
	int rc;

	if (srv->draining) {
		conn_reply(c, h, N2L_ST_DRAINING, 0);
		return;
	}
	memcpy(&pe, payload, sizeof(pe));
	fresh = !store_client(&srv->store, le64toh(pe.client_id), false);
	cl = store_client(&srv->store, le64toh(pe.client_id), true);
	if (!cl) {
		conn_reply(c, h, N2L_ST_FULL, 0);
		return;
	}
	rc = store_put_versions(&srv->store, cl, payload + sizeof(pe), h->count,
				payload + sizeof(pe) + (size_t)h->count * sizeof(struct n2l_kv));
	if (!cl->nconns)	/* its timeout runs from the last pages it got */
		cl->gone_since_ms = server_now(srv);
	if (rc) {
		if (fresh)
			store_client_remove(&srv->store, cl);
		conn_reply(c, h, N2L_ST_FULL, 0);
		return;
	}
	log_info(&srv->log, "connection %s: peer stored %u pages of client %016" PRIx64 " here",
		 c->name, h->count, cl->id);
	conn_reply(c, h, N2L_ST_OK, 0);
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
	if (!c->hello_done) {
		if (reply || h->opcode != N2L_OP_HELLO)
			conn_close_after(c, N2L_ST_NOHELLO, h, "request before HELLO");
		else
			serve_hello(c, h, payload);
		return;
	}
	if (reply) {
		if (sreq_complete(srv, c, h, payload) < 0)
			conn_close_after(c, N2L_ST_INVALID, h, "a reply to no request of ours");
		return;
	}
	log_debug(&srv->log, "connection %s: %s id %" PRIu64 " key %" PRIu64 " count %u vers %u",
		  c->name, frame_op_name(h->opcode), h->id, h->key, h->count, h->vers);
	switch (h->opcode) {
	case N2L_OP_HELLO:
		conn_close_after(c, N2L_ST_INVALID, h, "a second HELLO");
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
		reply_info(c, h);
		return;
	}
	if (!client) {
		conn_close_after(c, N2L_ST_INVALID, h, "a client request from a peer server");
		return;
	}
	switch (h->opcode) {
	case N2L_OP_PUT:
		serve_put(c, h, payload);
		break;
	case N2L_OP_GET:
		serve_get(c, h);
		break;
	case N2L_OP_INVAL:
		store_inval(&srv->store, c->client, payload, h->count);
		conn_reply(c, h, N2L_ST_OK, 0);
		break;
	case N2L_OP_FREE_ALL: {
		uint64_t n = store_free_all(&srv->store, c->client);

		log_info(&srv->log, "connection %s: client %016" PRIx64 " FREE_ALL: %" PRIu64 " pages dropped",
			 c->name, c->client->id, n);
		conn_reply(c, h, N2L_ST_OK, 0);
		break;
	}
	}
}

/* An accepted connection is gone: its client keeps its pages for a while. */
void serve_conn_gone(struct conn *c)
{
	struct server *srv = c->srv;
	struct client *cl = c->client;

	if (!cl)
		return;
	c->client = NULL;
	cl->nconns--;
	if (cl->conn == c) {
		cl->conn = NULL;
		for (struct conn *o = srv->conns; o; o = o->next)
			if (o != c && o->client == cl && !o->dead)
				cl->conn = o;
	}
	if (cl->nconns)
		return;
	cl->gone_since_ms = server_now(srv);
	if (!cl->held) {
		log_info(&srv->log, "client %016" PRIx64 " disconnected", cl->id);
		store_client_remove(&srv->store, cl);
		return;
	}
	log_info(&srv->log, "client %016" PRIx64 " disconnected: keeping its %" PRIu64 " pages for %" PRIu64 " s",
		 cl->id, cl->held, srv->cfg.client_timeout_s);
}
