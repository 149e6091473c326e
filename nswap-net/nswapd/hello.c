// SPDX-License-Identifier: GPL-2.0-only
/*
 * The handshake on accepted connections (n2l-proto.h, "Authentication").
 * With keys: HELLO names an identity and brings the client's nonce; we
 * answer with ours and our proof; AUTH brings the client's proof, and our
 * OK answer is the first tagged frame. Without keys (--insecure): HELLO
 * without N2L_HELLO_AUTH is answered at once and nothing is tagged.
 * Anything refused gets AUTH (untagged) and the connection closes. The
 * logs name the area by its tag, never the identity or device.
 */
#include "server.h"

#include <inttypes.h>
#include <string.h>

static void reply_hello_info(struct conn *c, const struct frame_hdr *h)
{
	struct n2l_hello_reply r;
	uint8_t *p;

	memset(&r, 0, sizeof(r));
	server_info(c->srv, c, &r.info);
	p = conn_reply(c, h, N2L_ST_OK, sizeof(r));
	if (p)
		memcpy(p, &r, sizeof(r));
}

/* Authenticated: a client joins its area; a peer may PEER_PUT. */
static int conn_accepted(struct conn *c)
{
	struct server *srv = c->srv;
	struct area *a;

	c->auth = CA_READY;
	c->role = c->ap.role;
	if (c->role != N2L_ROLE_CLIENT) {
		log_info(&srv->log, "connection %s: peer server ready%s", c->name,
			 c->secure ? " (authenticated)" : "");
		return 0;
	}
	a = store_area(&srv->store, c->ap.identity, c->ap.device, true);
	if (!a) {
		conn_kill(c, "out of memory for an area");
		return -1;
	}
	c->area = a;
	a->nconns++;
	a->conn = c;
	a->retry_at_ms = 0;
	a->backoff_ms = 0;
	a->stuck_logged = false;
	log_info(&srv->log, "connection %s: client of area %s ready%s (%" PRIu64 " pages held here)",
		 c->name, a->tag, c->secure ? " (authenticated)" : "", a->held);
	srv->mover_kick = true;
	return 0;
}

int hello_start_tags(struct conn *c, const uint8_t tx_key[N2L_MAC_LEN],
		     const uint8_t rx_key[N2L_MAC_LEN])
{
	conn_seal(c);
	if (tagger_init(&c->tx, tx_key) || tagger_init(&c->rx, rx_key))
		return -1;
	c->tx_tagged = c->rx_tagged = true;
	return 0;
}

static bool all_zero(const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i])
			return false;
	return true;
}

static void hello_insecure(struct conn *c, const struct frame_hdr *h,
			   const struct n2l_hello *hello, uint32_t flags)
{
	if (flags & N2L_HELLO_AUTH) {
		conn_close_after(c, N2L_ST_AUTH, h,
				 "HELLO asks to authenticate, but this server has no keys (--insecure)");
		return;
	}
	if (!all_zero(hello->identity, sizeof(hello->identity)) ||
	    !all_zero(hello->nonce, sizeof(hello->nonce))) {
		conn_close_after(c, N2L_ST_INVALID, h, "HELLO without authentication names an identity");
		return;
	}
	if (conn_accepted(c) == 0)
		reply_hello_info(c, h);
}

static void hello_secure(struct conn *c, const struct frame_hdr *h,
			 const struct n2l_hello *hello, uint32_t flags)
{
	const struct psk_entry *e;
	struct n2l_hello_reply r;
	uint8_t *p;

	if (!(flags & N2L_HELLO_AUTH)) {
		conn_close_after(c, N2L_ST_AUTH, h, "HELLO without authentication");
		return;
	}
	if (!psk_identity_valid(hello->identity)) {
		conn_close_after(c, N2L_ST_AUTH, h, "HELLO with a malformed identity");
		return;
	}
	e = psk_find(&c->srv->psk, hello->identity);
	if (!e) {
		conn_close_after(c, N2L_ST_AUTH, h, "HELLO from an unknown identity");
		return;
	}
	if (c->ap.role == N2L_ROLE_PEER && !e->peer) {
		conn_close_after(c, N2L_ST_AUTH, h, "HELLO with role PEER from an identity not marked peer");
		return;
	}
	memcpy(c->psk, e->key, sizeof(c->psk));
	memcpy(c->ap.client_nonce, hello->nonce, N2L_NONCE_LEN);
	memcpy(c->ap.identity, hello->identity, N2L_ID_LEN);
	if (auth_random(c->ap.server_nonce, N2L_NONCE_LEN)) {
		conn_kill(c, "no random bytes for a nonce");
		return;
	}
	memset(&r, 0, sizeof(r));
	memcpy(r.challenge.nonce, c->ap.server_nonce, N2L_NONCE_LEN);
	auth_proof(c->psk, AUTH_LABEL_SERVER, &c->ap, r.challenge.proof);
	c->auth = CA_CHALLENGED;
	p = conn_reply(c, h, N2L_ST_OK, sizeof(r));
	if (p)
		memcpy(p, &r, sizeof(r));
}

void hello_serve(struct conn *c, const struct frame_hdr *h, const uint8_t *payload)
{
	struct n2l_hello hello;
	uint32_t role, flags;

	memcpy(&hello, payload, sizeof(hello));
	role = le32toh(hello.role);
	flags = le32toh(hello.flags);
	if (role != N2L_ROLE_CLIENT && role != N2L_ROLE_PEER) {
		conn_close_after(c, N2L_ST_INVALID, h, "HELLO with an unknown role");
		return;
	}
	if (flags & ~(uint32_t)N2L_HELLO_AUTH) {
		conn_close_after(c, N2L_ST_INVALID, h, "HELLO with unknown flags");
		return;
	}
	c->ap.role = role;
	c->ap.device = le64toh(hello.device);
	if (c->secure)
		hello_secure(c, h, &hello, flags);
	else
		hello_insecure(c, h, &hello, flags);
}

void hello_auth(struct conn *c, const struct frame_hdr *h, const uint8_t *payload)
{
	uint8_t want[N2L_MAC_LEN], c2s[N2L_MAC_LEN], s2c[N2L_MAC_LEN];
	struct n2l_auth auth;
	int rc;

	memcpy(&auth, payload, sizeof(auth));
	auth_proof(c->psk, AUTH_LABEL_CLIENT, &c->ap, want);
	if (!auth_proof_equal(want, auth.proof)) {
		conn_close_after(c, N2L_ST_AUTH, h, "AUTH with a wrong proof");
		return;
	}
	auth_session_keys(c->psk, &c->ap, c2s, s2c);
	rc = hello_start_tags(c, s2c, c2s);
	auth_cleanse(c2s, sizeof(c2s));
	auth_cleanse(s2c, sizeof(s2c));
	if (rc) {
		conn_kill(c, "cannot set up frame tags");
		return;
	}
	if (conn_accepted(c) == 0)
		serve_reply_info(c, h);
}
