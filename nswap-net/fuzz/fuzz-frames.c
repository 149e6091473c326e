// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target: the whole server minus sockets. The input is a script
 * of commands against one fresh server per run, with two accepted
 * connections (clients or peers, whatever their HELLO says) and one
 * connection to a peer server, all without file descriptors. The first
 * byte picks the server, by its value % 3:
 *
 *   0  --insecure: HELLO without authentication, nothing tagged
 *   1  with keys (identity "client", key 0x11...; "peer", key 0x22...,
 *      marked peer): the handshake itself is fuzzed
 *   2  with keys, and connection 0 already authenticated as "client"
 *      (device 7) by the harness: every chunk fed to it gets a valid tag
 *      of the next sequence number, so that what follows the handshake
 *      is fuzzed too (a chunk that is not exactly one frame fails its tag)
 *
 * Then commands, byte op, then by op % 8:
 *   0, 1, 2  feed a u16-length chunk of bytes to connection op % 8
 *            (2: the connection to the peer)
 *   3        set capacity to the next byte (pages), then run the mover
 *   4        advance the clock by next byte * 200 ms and tick
 *   5        SIGTERM (drain; a second one ends the run)
 *   6        close connection (next byte % 3)
 *   7        answer the oldest of our requests with status next byte % 9
 *            (an OK to HELLO/STATUS carries an n2l_info from the input)
 *
 * After every command the server runs as after a round of events:
 * closed connections are reaped, the mover runs, output is dropped.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"

static int64_t fake_now;

enum { MODE_INSECURE, MODE_KEYS, MODE_AUTHED };

#define FUZZ_CLIENT_KEY	0x11
#define FUZZ_PEER_KEY	0x22

static int64_t fake_clock(void)
{
	return fake_now;
}

struct fuzz {
	struct server *srv;
	struct conn *conns[3];
	int mode;
	struct tagger tx;	/* conn 0's client side, MODE_AUTHED */
	bool tx_ok;
	uint64_t authed_serial;	/* that connection */
};

static bool alive(struct server *srv, struct conn *c)
{
	for (struct conn *o = srv->conns; o; o = o->next)
		if (o == c)
			return !o->dead;
	return false;
}

static struct conn *slot(struct fuzz *f, unsigned int i)
{
	struct server *srv = f->srv;
	struct conn *c = f->conns[i];

	if (c && alive(srv, c))
		return c;
	if (i < 2) {
		c = conn_new(srv, -1, CONN_IN, i ? "client1" : "client0");
	} else {
		struct peer *p = srv->peers[0];

		if (p->conn)
			return p->conn->dead ? NULL : p->conn;
		c = conn_new(srv, -1, CONN_PEER, p->addr);
		if (c) {
			c->peer = p;
			p->conn = c;
			p->state = PEER_CONNECTING;
			c->connecting = true;
			peer_connected(c);
		}
	}
	f->conns[i] = c;
	return c;
}

static void feed(struct conn *c, const uint8_t *data, size_t len)
{
	uint8_t *p;

	if (!c || c->dead || c->closing || c->paused)
		return;
	p = buf_space(&c->in, len);
	if (!p)
		return;
	memcpy(p, data, len);
	c->in.tail += len;
	conn_process(c);
}

static void answer(struct fuzz *f, const uint8_t **data, size_t *size)
{
	struct server *srv = f->srv;
	struct sreq *r = srv->sreqs;
	struct n2l_info info = { 0 };
	uint8_t frame[N2L_HDR_LEN + sizeof(struct n2l_hello_reply)];
	struct frame_hdr h;
	struct n2l_hdr w;
	uint32_t status;
	size_t off;

	if (!*size)
		return;
	status = (*data)[0] % 9;	/* 8: not a status at all */
	if (status == N2L_ST_OK && (*data)[0] >= 128)
		status = 9;	/* an OK without the payload it needs */
	(*data)++, (*size)--;
	if (!r)
		return;
	while (r->next)
		r = r->next;		/* the oldest */
	if (r->conn->dead)
		return;
	memset(&h, 0, sizeof(h));
	h.magic = N2L_MAGIC;
	h.version = N2L_PROTO_VERSION;
	h.opcode = r->op;
	h.flags = N2L_F_REPLY;
	h.id = r->id;
	h.count = r->count;
	h.status = status;
	h.free_pages = 1000;
	if (status == 9)
		h.status = N2L_ST_OK;
	if (status == N2L_ST_OK && (r->op == N2L_OP_HELLO || r->op == N2L_OP_STATUS ||
				    r->op == N2L_OP_AUTH)) {
		size_t n = *size < sizeof(info) ? *size : sizeof(info);

		memcpy(&info, *data, n);
		*data += n, *size -= n;
		h.len = sizeof(info);
	}
	off = r->op == N2L_OP_HELLO && h.len ? sizeof(struct n2l_challenge) : 0;
	h.len += (uint32_t)off;
	frame_encode(&h, &w);
	memset(frame, 0, sizeof(frame));
	memcpy(frame, &w, sizeof(w));
	memcpy(frame + sizeof(w) + off, &info, h.len - off);
	feed(r->conn, frame, N2L_HDR_LEN + h.len);
}

/* Feeds conn 0 a chunk and, once authenticated, its tag. */
static void feed_tagged(struct fuzz *f, const uint8_t *data, size_t len)
{
	struct conn *c = slot(f, 0);
	uint8_t tag[N2L_TAG_LEN];

	if (!f->tx_ok || !c || c->serial != f->authed_serial || !c->rx_tagged) {
		feed(c, data, len);
		return;
	}
	tagger_tag(&f->tx, data, len, tag);
	if (!c || c->dead || c->closing || c->paused)
		return;
	if (!buf_space(&c->in, len + N2L_TAG_LEN))
		return;
	memcpy(c->in.p + c->in.tail, data, len);
	memcpy(c->in.p + c->in.tail + len, tag, N2L_TAG_LEN);
	c->in.tail += len + N2L_TAG_LEN;
	conn_process(c);
}

static void add_key(struct psk_table *t, const char *id, uint8_t fill, bool peer)
{
	struct psk_entry *e = &t->e[t->n++];

	memset(e, 0, sizeof(*e));
	memcpy(e->identity, id, strlen(id));
	memset(e->key, fill, N2L_PSK_LEN);
	e->peer = peer;
}

/* The harness is "client" (device 7) on conn 0: HELLO, AUTH, tags. */
static void authenticate(struct fuzz *f)
{
	struct conn *c = slot(f, 0);
	struct n2l_hello hello = { .flags = htole32(N2L_HELLO_AUTH), .device = htole64(7) };
	struct auth_params ap = { .role = N2L_ROLE_CLIENT, .device = 7 };
	uint8_t key[N2L_PSK_LEN], c2s[N2L_MAC_LEN], s2c[N2L_MAC_LEN];
	uint8_t frame[N2L_HDR_LEN + sizeof(hello)];
	struct n2l_hello_reply hr;
	struct n2l_auth auth;
	struct frame_hdr h = { .magic = N2L_MAGIC, .version = N2L_PROTO_VERSION,
			       .opcode = N2L_OP_HELLO, .id = 1, .len = sizeof(hello) };
	struct n2l_hdr w;

	memset(key, FUZZ_CLIENT_KEY, sizeof(key));
	memcpy(hello.identity, "client", 6);
	memset(hello.nonce, 0x33, sizeof(hello.nonce));
	frame_encode(&h, &w);
	memcpy(frame, &w, sizeof(w));
	memcpy(frame + sizeof(w), &hello, sizeof(hello));
	feed(c, frame, sizeof(frame));
	if (buf_len(&c->out) != N2L_HDR_LEN + sizeof(hr))
		abort();
	memcpy(&hr, buf_data(&c->out) + N2L_HDR_LEN, sizeof(hr));
	buf_consume(&c->out, buf_len(&c->out));
	memcpy(ap.client_nonce, hello.nonce, N2L_NONCE_LEN);
	memcpy(ap.server_nonce, hr.challenge.nonce, N2L_NONCE_LEN);
	memcpy(ap.identity, hello.identity, N2L_ID_LEN);
	auth_proof(key, AUTH_LABEL_CLIENT, &ap, auth.proof);
	auth_session_keys(key, &ap, c2s, s2c);
	h.opcode = N2L_OP_AUTH;
	h.id = 2;
	h.len = sizeof(auth);
	frame_encode(&h, &w);
	memcpy(frame, &w, sizeof(w));
	memcpy(frame + sizeof(w), &auth, sizeof(auth));
	feed(c, frame, N2L_HDR_LEN + sizeof(auth));
	if (!conn_ready(c) || tagger_init(&f->tx, c2s))
		abort();
	f->tx_ok = true;
	f->authed_serial = c->serial;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *argv[] = { "nswapd", "--log-level", "error", "--peer", "192.0.2.1:7077",
			 "--client-timeout-s", "5", "--insecure", NULL };
	struct fuzz f = { 0 };
	struct config cfg;
	char err[256];

	if (!size)
		return 0;
	f.mode = data[0] % 3;
	data++, size--;
	if (config_load(&cfg, 8, argv, err, sizeof(err)) != CONFIG_OK)
		abort();
	f.srv = malloc(sizeof(*f.srv));
	if (server_init(f.srv, &cfg, 16, false))
		abort();
	f.srv->log.level = LOG_QUIET;
	f.srv->store.pool.log = &f.srv->log;
	fake_now = 1000000;
	f.srv->clock = fake_clock;
	f.srv->store.capacity = 64;
	f.srv->peers[0]->retry_at_ms = INT64_MAX;
	if (f.mode != MODE_INSECURE) {
		f.srv->psk.e = calloc(2, sizeof(*f.srv->psk.e));
		add_key(&f.srv->psk, "client", FUZZ_CLIENT_KEY, false);
		add_key(&f.srv->psk, "peer", FUZZ_PEER_KEY, true);
		f.srv->cfg.insecure = false;
		snprintf(f.srv->cfg.identity, sizeof(f.srv->cfg.identity), "peer");
	}
	if (f.mode == MODE_AUTHED)
		authenticate(&f);

	while (size && f.srv->exit_code < 0) {
		uint8_t op = data[0];
		size_t n;

		data++, size--;
		switch (op % 8) {
		case 0: case 1: case 2:
			if (size < 2) {
				size = 0;
				break;
			}
			n = (size_t)data[0] | (size_t)data[1] << 8;
			data += 2, size -= 2;
			if (n > size)
				n = size;
			if (op % 8 == 0)
				feed_tagged(&f, data, n);
			else
				feed(slot(&f, op % 8), data, n);
			data += n, size -= n;
			break;
		case 3:
			if (size) {
				f.srv->store.capacity = data[0];
				data++, size--;
			}
			f.srv->mover_kick = true;
			break;
		case 4:
			if (size) {
				fake_now += (int64_t)data[0] * 200;
				data++, size--;
			}
			server_tick(f.srv);
			f.srv->store.capacity = f.srv->draining ? 0 : 64;
			break;
		case 5:
			server_drain(f.srv);
			break;
		case 6:
			if (size) {
				struct conn *c = f.conns[data[0] % 3];

				if (c && alive(f.srv, c))
					conn_kill(c, NULL);
				data++, size--;
			}
			break;
		case 7:
			answer(&f, &data, &size);
			break;
		}
		server_after_events(f.srv);
		/* the store's books must always balance */
		if (f.srv->store.used != f.srv->store.pool.used_slots ||
		    f.srv->store.moving > f.srv->store.used ||
		    f.srv->store.unclaimed > f.srv->store.used)
			abort();
	}
	if (f.tx_ok)
		tagger_free(&f.tx);
	server_destroy(f.srv);
	free(f.srv);
	return 0;
}
