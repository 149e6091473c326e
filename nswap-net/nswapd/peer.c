// SPDX-License-Identifier: GPL-2.0-only
/*
 * Peer servers, as we see them: we connect with role PEER, say HELLO and,
 * if we have keys, authenticate as --identity (checking the peer's proof
 * first), then send STATUS and PEER_PUT. Every reply tells how much the
 * peer can still take. A peer that fails is retried with a backoff.
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

static void peer_ready(struct server *srv, struct peer *p, const struct n2l_info *info)
{
	p->free_est = le64toh(info->free_pages);
	p->draining = le32toh(info->state) == N2L_SERVER_DRAINING;
	p->status_at_ms = server_now(srv);
	if (p->state != PEER_READY)
		log_info(&srv->log, "peer %s: ready, %" PRIu64 " pages free of %" PRIu64 "%s",
			 p->addr, p->free_est, le64toh(info->capacity_pages),
			 p->draining ? " (draining)" : "");
	p->state = PEER_READY;
	p->backoff_ms = 0;
	srv->mover_kick = true;
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
	peer_ready(srv, p, &info);
}

static void send_status(struct server *srv, struct peer *p)
{
	uint8_t *payload;

	if (sreq_send(srv, p->conn, N2L_OP_STATUS, 0, 0, status_done, NULL, &payload))
		p->status_pending = true;
	else
		conn_kill(p->conn, "cannot send STATUS");
}

static void auth_done(struct server *srv, struct sreq *r, int status,
		      const struct frame_hdr *h, const uint8_t *payload)
{
	struct peer *p = r->conn->peer;
	struct n2l_info info;

	if (!p || status == SREQ_LOST)
		return;
	if (status != N2L_ST_OK) {
		log_err(&srv->log, "peer %s: AUTH refused: %s (does it list our identity as a peer, with our key?)",
			p->addr, frame_status_name(status));
		conn_kill(r->conn, "AUTH refused");
		return;
	}
	memcpy(&info, payload, sizeof(info));
	peer_ready(srv, p, &info);
}

/*
 * Which of our keys the peer's proof is made with: the one bound to the
 * peer's address (copied to @key), or else our own; false if neither.
 */
static bool peer_key(const struct peer *p, const struct psk_entry *e, struct conn *c,
		     const struct n2l_challenge *ch, uint8_t key[N2L_PSK_LEN])
{
	uint8_t want[N2L_MAC_LEN];
	char name[N2L_ADDR_LEN];

	netaddr_format((const struct sockaddr *)&p->sa, name, sizeof(name));
	for (int i = 0; i < 2; i++) {
		if (i)
			memcpy(key, e->key, N2L_PSK_LEN);
		else
			auth_bound_key(e->key, name, key);
		auth_proof(key, AUTH_LABEL_SERVER, &c->ap, want);
		if (auth_proof_equal(want, ch->proof))
			return true;
	}
	return false;
}

/* The peer proved it has our key: prove we have it too, then tag. */
static void send_auth(struct server *srv, struct conn *c, const struct n2l_challenge *ch)
{
	const struct psk_entry *e = psk_find(&srv->psk, c->ap.identity);
	uint8_t key[N2L_PSK_LEN], c2s[N2L_MAC_LEN], s2c[N2L_MAC_LEN];
	struct n2l_auth auth;
	uint8_t *payload;
	int rc;

	if (!e) {
		conn_kill(c, "our identity left the psk file");
		return;
	}
	memcpy(c->ap.server_nonce, ch->nonce, N2L_NONCE_LEN);
	if (!peer_key(c->peer, e, c, ch, key)) {
		log_err(&srv->log, "peer %s: its proof is wrong: it has neither our key nor one bound to its address",
			c->name);
		conn_kill(c, "the peer's proof is wrong");
		auth_cleanse(key, sizeof(key));
		return;
	}
	auth_proof(key, AUTH_LABEL_CLIENT, &c->ap, auth.proof);
	auth_session_keys(key, &c->ap, c2s, s2c);
	auth_cleanse(key, sizeof(key));
	if (!sreq_send(srv, c, N2L_OP_AUTH, 0, sizeof(auth), auth_done, NULL, &payload)) {
		conn_kill(c, "cannot send AUTH");
	} else {
		memcpy(payload, &auth, sizeof(auth));
		rc = hello_start_tags(c, c2s, s2c);
		if (rc)
			conn_kill(c, "cannot set up frame tags");
		else
			c->peer->state = PEER_AUTH;
	}
	auth_cleanse(c2s, sizeof(c2s));
	auth_cleanse(s2c, sizeof(s2c));
}

static void hello_done(struct server *srv, struct sreq *r, int status,
		       const struct frame_hdr *h, const uint8_t *payload)
{
	struct peer *p = r->conn->peer;
	struct n2l_hello_reply hr;

	if (!p || status == SREQ_LOST)
		return;
	if (status != N2L_ST_OK) {
		log_err(&srv->log, "peer %s: HELLO refused: %s", p->addr, frame_status_name(status));
		conn_kill(r->conn, "HELLO refused");
		return;
	}
	memcpy(&hr, payload, sizeof(hr));
	if (r->conn->secure) {
		send_auth(srv, r->conn, &hr.challenge);
		return;
	}
	r->conn->auth = CA_READY;
	peer_ready(srv, p, &hr.info);
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
	hello.role = htole32(N2L_ROLE_PEER);
	c->ap.role = N2L_ROLE_PEER;
	if (c->secure) {
		hello.flags = htole32(N2L_HELLO_AUTH);
		memcpy(hello.identity, srv->cfg.identity, strnlen(srv->cfg.identity, N2L_ID_LEN));
		if (auth_random(hello.nonce, N2L_NONCE_LEN)) {
			conn_kill(c, "no random bytes for a nonce");
			return;
		}
		memcpy(c->ap.identity, hello.identity, N2L_ID_LEN);
		memcpy(c->ap.client_nonce, hello.nonce, N2L_NONCE_LEN);
	}
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
	if (p && p->state == PEER_AUTH && h->opcode == N2L_OP_AUTH && h->status == N2L_ST_OK)
		c->auth = CA_READY;
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
		log_warn(&c->srv->log, "peer %s: cannot connect, or HELLO or AUTH failed; retrying later", p->addr);
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
