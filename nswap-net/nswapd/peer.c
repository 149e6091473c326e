// SPDX-License-Identifier: GPL-2.0-only
/*
 * Peer servers, as we see them: we connect as a client with role PEER,
 * say HELLO (same token), ask STATUS, and then send PEER_PUT. Every reply
 * tells how much the peer can still take. A peer that fails is retried
 * with a backoff.
 */
#include "server.h"
#include "netaddr.h"

#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static void peer_backoff(struct server *srv, struct peer *p)
{
	p->backoff_ms = p->backoff_ms ? p->backoff_ms * 2 : PEER_BACKOFF_MIN_MS;
	if (p->backoff_ms > PEER_BACKOFF_MAX_MS)
		p->backoff_ms = PEER_BACKOFF_MAX_MS;
	p->retry_at_ms = server_now(srv) + p->backoff_ms;
}

static void status_done(struct server *srv, struct sreq *r, int status,
			const struct frame_hdr *h, const uint8_t *payload)
{
	struct peer *p = r->conn->peer;
	struct n2l_info info;

	if (!p)
		return;
	p->status_pending = false;
	if (status != N2L_ST_OK) {
		if (status != SREQ_LOST)
			conn_kill(r->conn, "peer refused STATUS");
		return;
	}
	memcpy(&info, payload, sizeof(info));
	p->free_est = le64toh(info.free_pages);
	p->draining = le32toh(info.state) == N2L_SERVER_DRAINING;
	p->status_at_ms = server_now(srv);
	if (p->state != PEER_READY)
		log_info(&srv->log, "peer %s: ready, %" PRIu64 " pages free of %" PRIu64 "%s",
			 p->addr, p->free_est, le64toh(info.capacity_pages),
			 p->draining ? " (draining)" : "");
	p->state = PEER_READY;
	p->backoff_ms = 0;
	srv->mover_kick = true;
}

static void send_status(struct server *srv, struct peer *p)
{
	uint8_t *payload;

	if (sreq_send(srv, p->conn, N2L_OP_STATUS, 0, 0, status_done, NULL, &payload))
		p->status_pending = true;
	else
		conn_kill(p->conn, "cannot send STATUS");
}

static void hello_done(struct server *srv, struct sreq *r, int status,
		       const struct frame_hdr *h, const uint8_t *payload)
{
	struct peer *p = r->conn->peer;

	if (!p || status == SREQ_LOST)
		return;
	if (status != N2L_ST_OK) {
		log_err(&srv->log, "peer %s: HELLO refused: %s", p->addr, frame_status_name(status));
		conn_kill(r->conn, "HELLO refused");
		return;
	}
	send_status(srv, p);
}

void peer_connected(struct conn *c)
{
	struct server *srv = c->srv;
	struct peer *p = c->peer;
	struct n2l_hello hello;
	uint8_t *payload;

	c->connecting = false;
	if (!p) {
		conn_kill(c, NULL);
		return;
	}
	memset(&hello, 0, sizeof(hello));
	hello.client_id = htole64(srv->self_id);
	hello.role = htole32(N2L_ROLE_PEER);
	if (srv->cfg.have_token)
		memcpy(hello.token, srv->cfg.token, N2L_TOKEN_LEN);
	if (!sreq_send(srv, c, N2L_OP_HELLO, 0, sizeof(hello), hello_done, NULL, &payload)) {
		conn_kill(c, "cannot send HELLO");
		return;
	}
	memcpy(payload, &hello, sizeof(hello));
	p->state = PEER_HELLO;
	loop_conn_events(c);
}

/* Frames on a connection we opened: only replies to our requests. */
void peer_frame(struct conn *c, const struct frame_hdr *h, const uint8_t *payload)
{
	struct peer *p = c->peer;

	if (!(h->flags & N2L_F_REPLY)) {
		conn_kill(c, "peer sent a request on our connection");
		return;
	}
	if (p)
		p->free_est = h->free_pages;
	if (sreq_complete(c->srv, c, h, payload) < 0)
		conn_kill(c, "peer sent a reply to no request of ours");
}

void peer_conn_gone(struct conn *c)
{
	struct peer *p = c->peer;

	if (!p)
		return;
	c->peer = NULL;
	p->conn = NULL;
	if (p->state != PEER_READY)
		log_warn(&c->srv->log, "peer %s: cannot connect or HELLO failed; retrying later", p->addr);
	p->state = PEER_IDLE;
	p->status_pending = false;
	peer_backoff(c->srv, p);
}

/* Connect to peers when we need room; refresh what ready ones can take. */
void peer_tick(struct server *srv, int64_t now, bool need_room)
{
	if (!need_room)
		return;
	for (unsigned int i = 0; i < srv->npeers; i++) {
		struct peer *p = srv->peers[i];

		if (p->state == PEER_IDLE && now >= p->retry_at_ms) {
			if (loop_connect(srv, p))
				peer_backoff(srv, p);
		} else if (p->state == PEER_READY && !p->status_pending &&
			   now - p->status_at_ms >= (int64_t)srv->cfg.interval_ms) {
			send_status(srv, p);
		}
	}
}

static void peer_remove(struct server *srv, struct peer *p)
{
	if (p->conn) {
		p->conn->peer = NULL;
		conn_kill(p->conn, "peer removed from the configuration");
	}
	free(p);
}

static struct peer **find_peer(struct server *srv, const char *addr)
{
	for (unsigned int j = 0; j < srv->npeers; j++)
		if (srv->peers[j] && !strcmp(srv->peers[j]->addr, addr))
			return &srv->peers[j];
	return NULL;
}

/* The configured peers: keep those still listed, add new, drop the rest. */
int peer_set(struct server *srv, const struct config *cfg)
{
	struct peer *np[CFG_MAX_PEERS] = { 0 };
	struct peer **old;

	for (unsigned int i = 0; i < cfg->npeers; i++) {
		if (find_peer(srv, cfg->peers[i]))
			continue;
		np[i] = calloc(1, sizeof(*np[i]));
		if (!np[i] || netaddr_parse(cfg->peers[i], false, &np[i]->sa, &np[i]->salen)) {
			for (unsigned int k = 0; k <= i; k++)
				free(np[k]);
			return -1;
		}
		snprintf(np[i]->addr, sizeof(np[i]->addr), "%s", cfg->peers[i]);
	}
	for (unsigned int i = 0; i < cfg->npeers; i++) {
		old = np[i] ? NULL : find_peer(srv, cfg->peers[i]);
		if (old) {
			np[i] = *old;
			*old = NULL;
		}
	}
	for (unsigned int j = 0; j < srv->npeers; j++)
		if (srv->peers[j])
			peer_remove(srv, srv->peers[j]);
	memcpy(srv->peers, np, sizeof(np));
	srv->npeers = cfg->npeers;
	return 0;
}

void peer_free_all(struct server *srv)
{
	for (unsigned int j = 0; j < srv->npeers; j++)
		if (srv->peers[j])
			peer_remove(srv, srv->peers[j]);
	srv->npeers = 0;
}
