// SPDX-License-Identifier: GPL-2.0-only
/*
 * A connection: bytes in, whole frames out of them, replies queued. Every
 * header is checked (frame_check, which uses n2l_payload_len) before a
 * byte of payload is looked at, and the read buffer only ever grows to the
 * size of one checked frame. Before authentication only the frames of the
 * handshake pass the header check, so such a connection never holds more
 * than N2L_PREAUTH_FRAME bytes. Once authenticated, every frame carries a
 * tag: ours are added as frames are queued (the last one when the next is
 * queued or output is sent), theirs are checked before a frame is served,
 * and one that does not verify ends the connection without a word.
 */
#include "server.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct conn *conn_new(struct server *srv, int fd, enum conn_kind kind, const char *name)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->ev.type = EV_CONN;
	c->srv = srv;
	c->fd = fd;
	c->kind = kind;
	c->serial = ++srv->conn_serial;
	c->secure = srv->psk.n > 0;
	c->auth_deadline_ms = server_now(srv) + (int64_t)srv->cfg.auth_timeout_ms;
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->next = srv->conns;
	if (srv->conns)
		srv->conns->prev = c;
	srv->conns = c;
	srv->nconns++;
	return c;
}

bool conn_usable(const struct conn *c)
{
	return c && !c->dead && !c->closing && !c->connecting;
}

void conn_mark_dirty(struct conn *c)
{
	if (!c->dirty && !c->dead) {
		c->dirty = true;
		c->dirty_next = c->srv->dirty;
		c->srv->dirty = c;
	}
}

/*
 * Closed at once: no more reading or sending. The struct stays until
 * server_reap() so that events and callers still holding it are safe.
 */
void conn_kill(struct conn *c, const char *why)
{
	if (c->dead)
		return;
	c->dead = true;
	if (why)
		log_info(&c->srv->log, "connection %s: closed: %s", c->name, why);
	else
		log_debug(&c->srv->log, "connection %s: closed", c->name);
	if (c->fd >= 0) {
		close(c->fd);
		c->fd = -1;
	}
}

/* Reply with an error status, send it, then close. */
void conn_close_after(struct conn *c, uint32_t status, const struct frame_hdr *h,
		      const char *why)
{
	log_warn(&c->srv->log, "connection %s: %s; replying %s and closing",
		 c->name, why, frame_status_name(status));
	if (h)
		conn_reply(c, h, status, 0);
	if (c->dead)
		return;
	c->closing = true;
	c->deadline_ms = server_now(c->srv) + CLOSE_GRACE_MS;
	conn_mark_dirty(c);
	loop_conn_events(c);
}

void conn_seal(struct conn *c)
{
	size_t n = c->tx_untagged;
	uint8_t *f;

	if (!n)
		return;
	c->tx_untagged = 0;
	f = c->out.p + c->out.tail - n;
	if (tagger_tag(&c->tx, f, n - N2L_TAG_LEN, f + n - N2L_TAG_LEN))
		conn_kill(c, "cannot compute a frame tag");
}

uint8_t *conn_frame(struct conn *c, const struct frame_hdr *h)
{
	size_t need = N2L_HDR_LEN + h->len + (c->tx_tagged ? N2L_TAG_LEN : 0);
	struct n2l_hdr w;
	uint8_t *p;

	if (c->dead)
		return NULL;
	conn_seal(c);
	p = buf_space(&c->out, need);
	if (!p) {
		conn_kill(c, "out of memory for output");
		return NULL;
	}
	frame_encode(h, &w);
	memcpy(p, &w, N2L_HDR_LEN);
	c->out.tail += need;
	if (c->tx_tagged)
		c->tx_untagged = need;
	conn_mark_dirty(c);
	return p + N2L_HDR_LEN;
}

void conn_unqueue(struct conn *c, uint32_t len)
{
	c->out.tail -= N2L_HDR_LEN + len + (c->tx_untagged ? N2L_TAG_LEN : 0);
	c->tx_untagged = 0;
}

uint8_t *conn_reply(struct conn *c, const struct frame_hdr *req, uint32_t status,
		    uint32_t len)
{
	struct frame_hdr h = {
		.magic = N2L_MAGIC,
		.version = N2L_PROTO_VERSION,
		.opcode = req->opcode,
		.flags = N2L_F_REPLY,
		.id = req->id,
		.key = req->key,
		.count = req->count,
		.vers = req->vers,
		.status = status,
		.free_pages = server_free_pages32(c->srv, c),
		.len = status == N2L_ST_OK ? len : 0,
	};

	return conn_frame(c, &h);
}

/* A header that does not pass: answer if it is a header at all, then close. */
static void bad_frame(struct conn *c, const struct n2l_hdr *w, enum frame_err fe)
{
	struct frame_hdr h;
	char why[128];

	frame_decode(w, &h);
	if (c->kind == CONN_PEER || fe == FRAME_BAD_MAGIC) {
		snprintf(why, sizeof(why), "%s (magic 0x%08x)", frame_err_str(fe), h.magic);
		conn_kill(c, why);
		return;
	}
	snprintf(why, sizeof(why), "%s frame (opcode %u, version %u, count %u, len %u): %s",
		 h.flags & N2L_F_REPLY ? "reply" : "request", h.opcode, h.version,
		 h.count, h.len, frame_err_str(fe));
	/* Another protocol version at HELLO time: say so; later it is garbage. */
	conn_close_after(c, fe == FRAME_BAD_VERSION && !conn_ready(c) ?
			 N2L_ST_VERSION : N2L_ST_INVALID, &h, why);
}

/*
 * Before authentication only the handshake may come, and nothing bigger
 * than its frames is ever buffered: anything else is refused on its
 * header alone. Returns true if the frame was refused.
 */
static bool preauth_refused(struct conn *c, const struct frame_hdr *h, size_t plen)
{
	bool reply = h->flags & N2L_F_REPLY;
	bool ok;

	if (c->kind == CONN_PEER) {
		ok = reply && (h->opcode == N2L_OP_HELLO || h->opcode == N2L_OP_AUTH);
		if (!ok || plen > N2L_PREAUTH_PAYLOAD) {
			conn_kill(c, "peer sent something other than the handshake's replies");
			return true;
		}
		return false;
	}
	ok = !reply && h->opcode == (c->auth == CA_HELLO ? N2L_OP_HELLO : N2L_OP_AUTH);
	if (ok && plen <= N2L_PREAUTH_PAYLOAD)
		return false;
	conn_close_after(c, N2L_ST_NOHELLO, h, c->auth == CA_HELLO ?
			 "request before HELLO" : "request before AUTH");
	return true;
}

/* A refused AUTH is answered untagged, though tags were expected. */
static bool untagged_refusal(const struct conn *c, const struct frame_hdr *h)
{
	return c->kind == CONN_PEER && c->rx.seq == 0 && (h->flags & N2L_F_REPLY) &&
	       h->opcode == N2L_OP_AUTH && h->status == N2L_ST_AUTH;
}

/* Dispatches every whole frame in the read buffer, while output has room. */
void conn_process(struct conn *c)
{
	while (!c->dead && !c->closing) {
		size_t avail = buf_len(&c->in), plen, need;
		struct n2l_hdr w;
		struct frame_hdr h;
		enum frame_err fe;
		bool tagged;

		if (buf_len(&c->out) >= OUT_HIGH) {
			if (!c->paused)
				log_debug(&c->srv->log, "connection %s: %zu bytes of replies unsent: reading paused",
					  c->name, buf_len(&c->out));
			c->paused = true;
			break;
		}
		if (avail < N2L_HDR_LEN)
			break;
		memcpy(&w, buf_data(&c->in), N2L_HDR_LEN);
		fe = frame_check(&w, &plen);
		if (fe != FRAME_OK) {
			bad_frame(c, &w, fe);
			break;
		}
		frame_decode(&w, &h);
		if (!conn_ready(c) && preauth_refused(c, &h, plen))
			break;
		tagged = c->rx_tagged && !untagged_refusal(c, &h);
		need = N2L_HDR_LEN + plen + (tagged ? N2L_TAG_LEN : 0);
		if (avail < need) {
			/* plen is checked: at most N2L_MAX_PAYLOAD */
			if (!buf_space(&c->in, need - avail))
				conn_kill(c, "out of memory for input");
			break;
		}
		if (tagged && !tagger_verify(&c->rx, buf_data(&c->in), N2L_HDR_LEN + plen,
					     buf_data(&c->in) + N2L_HDR_LEN + plen)) {
			conn_kill(c, "a frame whose tag does not verify");
			break;
		}
		serve_frame(c, &h, buf_data(&c->in) + N2L_HDR_LEN);
		buf_consume(&c->in, need);
	}
}

void conn_free(struct conn *c)
{
	struct server *srv = c->srv;

	if (c->prev)
		c->prev->next = c->next;
	else
		srv->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	srv->nconns--;
	tagger_free(&c->tx);
	tagger_free(&c->rx);
	auth_cleanse(c->psk, sizeof(c->psk));
	auth_cleanse(&c->ap, sizeof(c->ap));
	buf_free(&c->in);
	buf_free(&c->out);
	free(c);
}
