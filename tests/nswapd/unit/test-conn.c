// SPDX-License-Identifier: GPL-2.0-only
/*
 * The frame state machine and the mover, without sockets: connections
 * with fd -1 are fed bytes directly and their queued output is parsed.
 */
#include <stdlib.h>
#include <string.h>

#include "server.h"
#include "unit.h"

static int64_t fake_now;
static int64_t fake_clock(void)
{
	return fake_now;
}

static struct server *mksrv(uint64_t capacity)
{
	struct server *srv = malloc(sizeof(*srv));
	struct config cfg;
	char err[256];
	char *argv[] = { "nswapd", "--log-level", "error", "--insecure", NULL };

	config_load(&cfg, 4, argv, err, sizeof(err));
	server_init(srv, &cfg, 16, false);
	srv->clock = fake_clock;
	srv->store.capacity = capacity;
	return srv;
}

static void rmsrv(struct server *srv)
{
	server_destroy(srv);
	free(srv);
}

static void feed(struct conn *c, const void *data, size_t len)
{
	memcpy(buf_space(&c->in, len), data, len);
	c->in.tail += len;
	conn_process(c);
}

static size_t frame(uint8_t *out, unsigned int op, int reply, uint64_t id, uint64_t key,
		    uint32_t count, uint64_t vers, uint32_t status, const void *payload, uint32_t len)
{
	struct frame_hdr h = {
		.magic = N2L_MAGIC, .version = N2L_PROTO_VERSION, .opcode = (uint8_t)op,
		.flags = reply ? N2L_F_REPLY : 0, .id = id, .key = key, .count = count,
		.vers = vers, .status = status, .len = len,
	};
	struct n2l_hdr w;

	frame_encode(&h, &w);
	memcpy(out, &w, sizeof(w));
	if (len)
		memcpy(out + sizeof(w), payload, len);
	return sizeof(w) + len;
}

/* Our side's tags, once the test's connection is authenticated. */
static struct tagger test_tx, test_rx;
static bool test_tagged;

static void send_frame(struct conn *c, unsigned int op, int reply, uint64_t id, uint64_t key,
		       uint32_t count, uint64_t vers, uint32_t status, const void *payload, uint32_t len)
{
	uint8_t *buf = malloc(N2L_HDR_LEN + len + N2L_TAG_LEN);
	size_t n = frame(buf, op, reply, id, key, count, vers, status, payload, len);

	if (test_tagged) {
		tagger_tag(&test_tx, buf, n, buf + n);
		n += N2L_TAG_LEN;
	}
	feed(c, buf, n);
	free(buf);
}

static void hello(struct conn *c, uint64_t device)
{
	struct n2l_hello h = { .device = htole64(device) };

	send_frame(c, N2L_OP_HELLO, 0, 1, 0, 0, 0, 0, &h, sizeof(h));
}

/* Takes the next queued frame off c->out; its payload stays valid until the next call. */
static int next_out(struct conn *c, struct frame_hdr *h, uint8_t **payload)
{
	static uint8_t *copy;
	struct n2l_hdr w;

	size_t tag = c->tx_tagged && test_tagged ? N2L_TAG_LEN : 0;

	conn_seal(c);
	if (buf_len(&c->out) < N2L_HDR_LEN)
		return 0;
	memcpy(&w, buf_data(&c->out), N2L_HDR_LEN);
	frame_decode(&w, h);
	if (tag && !tagger_verify(&test_rx, buf_data(&c->out), N2L_HDR_LEN + h->len,
				  buf_data(&c->out) + N2L_HDR_LEN + h->len))
		h->magic = 0;	/* tells the test */
	free(copy);
	copy = malloc(h->len + 1);
	memcpy(copy, buf_data(&c->out) + N2L_HDR_LEN, h->len);
	buf_consume(&c->out, N2L_HDR_LEN + h->len + tag);
	*payload = copy;
	return 1;
}

/* n pages, then their n seals: a PUT's payload. */
static uint8_t *pagebuf(unsigned int n, int seed)
{
	uint8_t *p = malloc(N2L_PAGE_BYTES(n));

	for (size_t i = 0; i < N2L_PAGE_BYTES(n); i++)
		p[i] = (uint8_t)(seed + i / N2L_PAGE_SIZE);
	return p;
}

#define PB(n)	((uint32_t)N2L_PAGE_BYTES(n))

TEST(conn_hello_then_requests)
{
	struct server *srv = mksrv(100);
	struct conn *c = conn_new(srv, -1, CONN_IN, "t");
	struct frame_hdr h;
	struct n2l_info info;
	uint8_t *p, *pg = pagebuf(2, 1);

	hello(c, 9);
	CHECK(next_out(c, &h, &p));
	CHECK_EQ(h.status, N2L_ST_OK);
	CHECK_EQ(h.flags, N2L_F_REPLY);
	CHECK_EQ(h.len, sizeof(struct n2l_hello_reply));
	memcpy(&info, p + sizeof(struct n2l_challenge), sizeof(info));
	CHECK_EQ(le64toh(info.capacity_pages), 100);
	CHECK_EQ(le64toh(info.free_pages), 100);
	CHECK_EQ(le64toh(info.epoch), srv->epoch);
	CHECK(srv->epoch != 0);
	send_frame(c, N2L_OP_PUT, 0, 2, 40, 2, 6, 0, pg, PB(2));
	CHECK(next_out(c, &h, &p));
	CHECK(h.status == N2L_ST_OK && h.id == 2 && h.key == 40 && h.count == 2 && h.vers == 6);
	CHECK_EQ(h.free_pages, 98);
	send_frame(c, N2L_OP_GET, 0, 3, 40, 2, 6, 0, NULL, 0);
	CHECK(next_out(c, &h, &p));
	CHECK(h.status == N2L_ST_OK && h.len == PB(2) && !memcmp(p, pg, PB(2)));
	send_frame(c, N2L_OP_GET, 0, 4, 40, 2, 7, 0, NULL, 0);
	CHECK(next_out(c, &h, &p));
	CHECK(h.status == N2L_ST_STALE && h.len == 0 && h.id == 4);
	CHECK(!next_out(c, &h, &p));
	CHECK(!c->closing && !c->dead);
	free(pg);
	rmsrv(srv);
}

TEST(conn_request_before_hello)
{
	struct server *srv = mksrv(100);
	struct conn *c = conn_new(srv, -1, CONN_IN, "t");
	struct frame_hdr h;
	uint8_t *p;

	send_frame(c, N2L_OP_STATUS, 0, 7, 0, 0, 0, 0, NULL, 0);
	CHECK(next_out(c, &h, &p));
	CHECK(h.status == N2L_ST_NOHELLO && h.id == 7);
	CHECK(c->closing);
	hello(c, 1);		/* nothing more is read */
	CHECK(!next_out(c, &h, &p));
	rmsrv(srv);
}

TEST(conn_frame_split_byte_by_byte)
{
	struct server *srv = mksrv(100);
	struct conn *c = conn_new(srv, -1, CONN_IN, "t");
	uint8_t *pg = pagebuf(3, 5), *buf = malloc(N2L_HDR_LEN + PB(3));
	struct frame_hdr h;
	uint8_t *p;
	size_t n;

	hello(c, 1);
	next_out(c, &h, &p);
	n = frame(buf, N2L_OP_PUT, 0, 2, 0, 3, 1, 0, pg, PB(3));
	for (size_t i = 0; i < n - 1; i++)
		feed(c, buf + i, 1);
	CHECK(!next_out(c, &h, &p));
	CHECK_EQ(srv->store.used, 0);
	feed(c, buf + n - 1, 1);
	CHECK(next_out(c, &h, &p) && h.status == N2L_ST_OK);
	CHECK_EQ(srv->store.used, 3);
	free(pg);
	free(buf);
	rmsrv(srv);
}

TEST(conn_invalid_header_closes)
{
	struct server *srv = mksrv(100);
	struct conn *c = conn_new(srv, -1, CONN_IN, "t"), *d;
	struct frame_hdr h;
	uint8_t *p, buf[64];

	hello(c, 1);
	next_out(c, &h, &p);
	send_frame(c, 77, 0, 9, 0, 0, 0, 0, NULL, 0);	/* unknown opcode */
	CHECK(next_out(c, &h, &p));
	CHECK(h.status == N2L_ST_INVALID && h.id == 9 && h.opcode == 77 && h.len == 0);
	CHECK(c->closing);
	/* no magic: not a frame, no reply */
	d = conn_new(srv, -1, CONN_IN, "u");
	memset(buf, 0xab, sizeof(buf));
	feed(d, buf, sizeof(buf));
	CHECK(d->dead);
	CHECK(!next_out(d, &h, &p));
	/* wrong version first: VERSION */
	d = conn_new(srv, -1, CONN_IN, "v");
	frame(buf, N2L_OP_HELLO, 0, 3, 0, 0, 0, 0, NULL, 0);
	buf[4] = 9;
	feed(d, buf, N2L_HDR_LEN);
	CHECK(next_out(d, &h, &p) && h.status == N2L_ST_VERSION);
	server_after_events(srv);
	rmsrv(srv);
}

TEST(conn_output_bound_pauses_reading)
{
	struct server *srv = mksrv(1000);
	struct conn *c = conn_new(srv, -1, CONN_IN, "t");
	uint8_t *pg = pagebuf(256, 1), gets[20 * N2L_HDR_LEN];
	struct frame_hdr h;
	uint8_t *p;
	size_t n = 0;
	int replies = 0;

	hello(c, 1);
	next_out(c, &h, &p);
	send_frame(c, N2L_OP_PUT, 0, 2, 0, 256, 1, 0, pg, PB(256));
	next_out(c, &h, &p);
	for (int i = 0; i < 20; i++)
		n += frame(gets + n, N2L_OP_GET, 0, 100 + (uint64_t)i, 0, 256, 1, 0, NULL, 0);
	feed(c, gets, n);
	CHECK(c->paused);
	CHECK(buf_len(&c->out) >= OUT_HIGH);
	CHECK(buf_len(&c->out) < OUT_HIGH + N2L_MAX_FRAME);
	CHECK(buf_len(&c->in) > 0);	/* the rest waits */
	while (next_out(c, &h, &p))
		replies++;
	CHECK(replies < 20);
	/* drained (loop_flush without a socket drops output): reading resumes */
	for (int round = 0; round < 10 && replies < 20; round++) {
		int before = replies;

		loop_flush(c);
		while (next_out(c, &h, &p))
			replies++;
		CHECK(replies > before);
	}
	CHECK_EQ(replies, 20);
	loop_flush(c);
	CHECK(!c->paused && !buf_len(&c->in));
	free(pg);
	rmsrv(srv);
}

static uint32_t kv_key(const uint8_t *p, unsigned int i)
{
	struct n2l_kv kv;

	memcpy(&kv, p + i * sizeof(kv), sizeof(kv));
	return (uint32_t)le64toh(kv.key);
}

TEST(mover_returns_oldest_and_drops_on_ok)
{
	struct server *srv = mksrv(100);
	struct conn *c = conn_new(srv, -1, CONN_IN, "t");
	uint8_t *pg = pagebuf(8, 1), *p;
	struct frame_hdr h;

	hello(c, 1);
	next_out(c, &h, &p);
	send_frame(c, N2L_OP_PUT, 0, 2, 0, 8, 1, 0, pg, PB(8));
	next_out(c, &h, &p);
	srv->store.capacity = 5;
	mover_run(srv);
	CHECK(next_out(c, &h, &p));
	CHECK(h.opcode == N2L_OP_RETURN && !(h.flags & N2L_F_REPLY) && h.count == 3);
	CHECK(kv_key(p, 0) == 0 && kv_key(p, 2) == 2);
	CHECK(!memcmp(p + 3 * sizeof(struct n2l_kv), pg, 3 * N2L_PAGE_SIZE));
	CHECK(!memcmp(p + 3 * sizeof(struct n2l_kv) + 3 * N2L_PAGE_SIZE, pg + 8 * N2L_PAGE_SIZE,
		      3 * N2L_SEAL_LEN));	/* the seals as stored */
	CHECK_EQ(srv->store.moving, 3);
	mover_run(srv);			/* nothing more to do meanwhile */
	CHECK(!next_out(c, &h, &p));
	/* GETs are still served until the answer */
	send_frame(c, N2L_OP_GET, 0, 3, 0, 1, 1, 0, NULL, 0);
	CHECK(next_out(c, &h, &p) && h.status == N2L_ST_OK);
	send_frame(c, N2L_OP_RETURN, 1, srv->next_req_id, 0, 3, 0, N2L_ST_OK, NULL, 0);
	CHECK_EQ(srv->store.used, 5);
	CHECK_EQ(srv->store.moving, 0);
	CHECK(!c->closing);
	free(pg);
	rmsrv(srv);
}

TEST(mover_refusal_keeps_pages_and_backs_off)
{
	struct server *srv = mksrv(100);
	struct conn *c = conn_new(srv, -1, CONN_IN, "t");
	uint8_t *pg = pagebuf(4, 1), *p;
	struct frame_hdr h;

	fake_now = 1000;
	hello(c, 1);
	next_out(c, &h, &p);
	send_frame(c, N2L_OP_PUT, 0, 2, 0, 4, 1, 0, pg, PB(4));
	next_out(c, &h, &p);
	srv->store.capacity = 2;
	mover_run(srv);
	CHECK(next_out(c, &h, &p) && h.opcode == N2L_OP_RETURN);
	send_frame(c, N2L_OP_RETURN, 1, h.id, 0, h.count, 0, N2L_ST_FULL, NULL, 0);
	CHECK_EQ(srv->store.used, 4);
	mover_run(srv);
	CHECK(!next_out(c, &h, &p));	/* backing off */
	fake_now += BACKOFF_MIN_MS;
	mover_run(srv);
	CHECK(next_out(c, &h, &p) && h.opcode == N2L_OP_RETURN && h.count == 2);
	/* no answer in time: lost, and a late OK is ignored (not INVALID) */
	fake_now += (int64_t)srv->cfg.request_timeout_s * 1000;
	sreq_tick(srv, fake_now);
	CHECK_EQ(srv->store.moving, 0);
	send_frame(c, N2L_OP_RETURN, 1, h.id, 0, h.count, 0, N2L_ST_OK, NULL, 0);
	CHECK(!c->closing);
	CHECK_EQ(srv->store.used, 4);
	fake_now = 0;
	free(pg);
	rmsrv(srv);
}

TEST(mover_skips_disconnected_clients_and_drain)
{
	struct server *srv = mksrv(100);
	struct conn *c = conn_new(srv, -1, CONN_IN, "t"), *d = conn_new(srv, -1, CONN_IN, "u");
	uint8_t *pg = pagebuf(4, 1), *p;
	struct frame_hdr h;

	hello(c, 1);
	next_out(c, &h, &p);
	send_frame(c, N2L_OP_PUT, 0, 2, 0, 4, 1, 0, pg, PB(4));
	hello(d, 2);
	next_out(d, &h, &p);
	send_frame(d, N2L_OP_PUT, 0, 2, 0, 4, 1, 0, pg, PB(4));
	next_out(d, &h, &p);
	conn_kill(c, NULL);
	server_after_events(srv);	/* reaped; client 1 keeps its pages */
	CHECK_EQ(srv->store.used, 8);
	server_drain(srv);
	send_frame(d, N2L_OP_PUT, 0, 3, 10, 1, 1, 0, pg, PB(1));
	CHECK(next_out(d, &h, &p) && h.status == N2L_ST_DRAINING && h.free_pages == 0);
	mover_run(srv);
	CHECK(next_out(d, &h, &p) && h.opcode == N2L_OP_RETURN && h.count == 4);
	CHECK_EQ(srv->stuck_pages, 4);
	send_frame(d, N2L_OP_RETURN, 1, h.id, 0, 4, 0, N2L_ST_OK, NULL, 0);
	CHECK_EQ(srv->store.used, 4);
	server_after_events(srv);
	CHECK_EQ(srv->exit_code, -1);	/* client 1's pages are still here */
	free(pg);
	rmsrv(srv);
}

/* Key number seed: as strong as a psk file's must be (keycheck.h). */
static void test_key(uint8_t key[N2L_PSK_LEN], uint8_t seed)
{
	static const uint8_t base[N2L_PSK_LEN] = {
		0x9d, 0x3f, 0x61, 0xa8, 0x0c, 0x57, 0xe2, 0xb4,
		0x1f, 0x86, 0xd0, 0x3a, 0x7b, 0xc5, 0xe9, 0x12,
		0x6e, 0x0b, 0xa4, 0xf7, 0xd8, 0x31, 0x5c, 0x90,
		0xa2, 0xe7, 0x6b, 0x1d, 0x43, 0xf8, 0xc0, 0x5e,
	};

	/* Adding seed keeps base's distinct values and steps. */
	for (unsigned int i = 0; i < N2L_PSK_LEN; i++)
		key[i] = (uint8_t)(base[i] + seed);
}

static struct server *mksrv_keys(uint64_t capacity, const char *identity, uint8_t seed)
{
	struct server *srv = mksrv(capacity);

	srv->psk.e = calloc(1, sizeof(*srv->psk.e));
	srv->psk.n = 1;
	memcpy(srv->psk.e[0].identity, identity, strlen(identity));
	test_key(srv->psk.e[0].key, seed);
	return srv;
}

/* HELLO and AUTH as a client of srv's one identity; 0 if all went well. */
static int handshake(struct conn *c, const char *identity, uint8_t keyseed, uint64_t device)
{
	struct n2l_hello hello = { .device = htole64(device), .flags = htole32(N2L_HELLO_AUTH) };
	struct n2l_hello_reply hr;
	struct auth_params ap = { .role = N2L_ROLE_CLIENT, .device = device };
	uint8_t key[N2L_PSK_LEN], want[N2L_MAC_LEN], c2s[N2L_MAC_LEN], s2c[N2L_MAC_LEN];
	struct n2l_auth auth;
	struct frame_hdr h;
	uint8_t *p;

	test_key(key, keyseed);
	memset(hello.nonce, 0x5a, sizeof(hello.nonce));
	memcpy(hello.identity, identity, strlen(identity));
	send_frame(c, N2L_OP_HELLO, 0, 1, 0, 0, 0, 0, &hello, sizeof(hello));
	if (!next_out(c, &h, &p) || h.status != N2L_ST_OK || h.len != sizeof(hr))
		return -1;
	memcpy(&hr, p, sizeof(hr));
	memcpy(ap.client_nonce, hello.nonce, N2L_NONCE_LEN);
	memcpy(ap.server_nonce, hr.challenge.nonce, N2L_NONCE_LEN);
	memcpy(ap.identity, hello.identity, N2L_ID_LEN);
	auth_proof(key, AUTH_LABEL_SERVER, &ap, want);
	if (!auth_proof_equal(want, hr.challenge.proof))
		return -2;
	auth_proof(key, AUTH_LABEL_CLIENT, &ap, auth.proof);
	send_frame(c, N2L_OP_AUTH, 0, 2, 0, 0, 0, 0, &auth, sizeof(auth));
	auth_session_keys(key, &ap, c2s, s2c);
	tagger_init(&test_tx, c2s);
	tagger_init(&test_rx, s2c);
	test_tagged = true;
	if (!next_out(c, &h, &p) || h.magic != N2L_MAGIC || h.status != N2L_ST_OK ||
	    h.len != sizeof(struct n2l_info))
		return -3;
	return 0;
}

static void untagged(void)
{
	test_tagged = false;
	tagger_free(&test_tx);
	tagger_free(&test_rx);
}

TEST(conn_auth_handshake_and_tags)
{
	struct server *srv = mksrv_keys(100, "alice", 7);
	struct conn *c = conn_new(srv, -1, CONN_IN, "t");
	uint8_t *pg = pagebuf(2, 3), *p, raw[N2L_HDR_LEN + N2L_TAG_LEN];
	struct frame_hdr h;
	size_t n;

	CHECK(c->secure);
	CHECK_EQ(handshake(c, "alice", 7, 9), 0);
	CHECK(conn_ready(c) && c->area && c->area->device == 9);
	send_frame(c, N2L_OP_PUT, 0, 3, 0, 2, 1, 0, pg, PB(2));
	CHECK(next_out(c, &h, &p) && h.magic == N2L_MAGIC && h.status == N2L_ST_OK);
	send_frame(c, N2L_OP_GET, 0, 4, 0, 2, 1, 0, NULL, 0);
	CHECK(next_out(c, &h, &p) && h.magic == N2L_MAGIC && !memcmp(p, pg, PB(2)));
	/* a replayed frame (its tag is for an old sequence number) kills */
	n = frame(raw, N2L_OP_STATUS, 0, 5, 0, 0, 0, 0, NULL, 0);
	tagger_tag(&test_tx, raw, n, raw + n);
	feed(c, raw, n + N2L_TAG_LEN);
	CHECK(next_out(c, &h, &p) && h.magic == N2L_MAGIC && h.opcode == N2L_OP_STATUS);
	feed(c, raw, n + N2L_TAG_LEN);
	CHECK(c->dead);
	CHECK(!next_out(c, &h, &p));
	untagged();
	free(pg);
	rmsrv(srv);
}

TEST(conn_auth_refusals)
{
	struct server *srv = mksrv_keys(100, "alice", 7);
	struct conn *c = conn_new(srv, -1, CONN_IN, "t");
	struct n2l_hello hello = { .device = htole64(1) };
	struct frame_hdr h;
	uint8_t *p;

	/* the wrong key: the server's proof does not verify for us, and ours fails there */
	CHECK_EQ(handshake(c, "alice", 8, 1), -2);
	untagged();
	/* without auth, or unknown */
	c = conn_new(srv, -1, CONN_IN, "u");
	send_frame(c, N2L_OP_HELLO, 0, 1, 0, 0, 0, 0, &hello, sizeof(hello));
	CHECK(next_out(c, &h, &p) && h.status == N2L_ST_AUTH && h.len == 0);
	CHECK(c->closing);
	c = conn_new(srv, -1, CONN_IN, "v");
	CHECK_EQ(handshake(c, "bob", 7, 1), -1);
	untagged();
	CHECK(c->closing);
	rmsrv(srv);
}

TEST(conn_preauth_refuses_big_headers_unread)
{
	struct server *srv = mksrv_keys(100, "alice", 7);
	struct conn *c = conn_new(srv, -1, CONN_IN, "t");
	struct frame_hdr h;
	uint8_t hdr[N2L_HDR_LEN], *p;

	frame(hdr, N2L_OP_PUT, 0, 3, 0, 256, 1, 0, NULL, 0);
	((struct n2l_hdr *)hdr)->len = htole32(PB(256));
	feed(c, hdr, sizeof(hdr));	/* no payload: refused on the header */
	CHECK(next_out(c, &h, &p) && h.status == N2L_ST_NOHELLO && h.id == 3);
	CHECK(c->closing);
	CHECK(c->in.cap <= 4096);
	rmsrv(srv);
}

/* A connection to the configured peer, HELLO answered: ready. */
static struct conn *fake_peer(struct server *srv, uint64_t free_pages)
{
	struct peer *pe = srv->peers[0];
	struct conn *c = conn_new(srv, -1, CONN_PEER, pe->addr);
	struct n2l_hello_reply hr;
	struct frame_hdr h;
	uint8_t *p;

	c->peer = pe;
	pe->conn = c;
	c->connecting = true;
	peer_connected(c);
	next_out(c, &h, &p);
	memset(&hr, 0, sizeof(hr));
	hr.info.free_pages = htole64(free_pages);
	send_frame(c, N2L_OP_HELLO, 1, h.id, 0, 0, 0, 0, &hr, sizeof(hr));
	return c;
}

/*
 * A server with one peer (1000 pages free) and a client that
 * stored pages 0-7 (@pg), shrunk to 5 pages: the mover's first batch, 3
 * pages, is on its way to the peer. The peer's and the client's
 * connections in *@pc and *@c.
 */
static struct server *mover_to_peer(uint8_t *pg, struct conn **pc, struct conn **c)
{
	struct server *srv = mksrv(100);
	struct config cfg = srv->cfg;
	struct frame_hdr h;
	uint8_t *p;

	snprintf(cfg.peers[0], sizeof(cfg.peers[0]), "192.0.2.1:7077");
	cfg.npeers = 1;
	peer_set(srv, &cfg);
	srv->cfg = cfg;
	*pc = fake_peer(srv, 1000);
	*c = conn_new(srv, -1, CONN_IN, "t");
	hello(*c, 1);
	next_out(*c, &h, &p);
	send_frame(*c, N2L_OP_PUT, 0, 2, 0, 8, 1, 0, pg, PB(8));
	next_out(*c, &h, &p);
	srv->store.capacity = 5;
	mover_run(srv);
	return srv;
}

TEST(mover_moved_refused_then_return)
{
	uint8_t *pg = pagebuf(8, 1), *p;
	struct conn *c, *pc;
	struct server *srv;
	struct frame_hdr h;

	fake_now = 1000;
	srv = mover_to_peer(pg, &pc, &c);
	CHECK_EQ(srv->peers[0]->state, PEER_READY);
	CHECK(next_out(pc, &h, &p) && h.opcode == N2L_OP_PEER_PUT && h.count == 3);
	CHECK(!memcmp(p + sizeof(struct n2l_peer) + N2L_KV_BYTES(3), pg, 3 * N2L_PAGE_SIZE));
	send_frame(pc, N2L_OP_PEER_PUT, 1, h.id, 0, 3, 0, N2L_ST_OK, NULL, 0);
	CHECK(next_out(c, &h, &p) && h.opcode == N2L_OP_MOVED && h.count == 3);
	send_frame(c, N2L_OP_MOVED, 1, h.id, 0, 3, 0, N2L_ST_FULL, NULL, 0);
	CHECK_EQ(srv->store.used, 8);
	mover_run(srv);		/* no backoff of the client: its pages come back */
	CHECK(!next_out(pc, &h, &p));
	CHECK(next_out(c, &h, &p) && h.opcode == N2L_OP_RETURN && h.count == 3);
	send_frame(c, N2L_OP_RETURN, 1, h.id, 0, 3, 0, N2L_ST_OK, NULL, 0);
	CHECK_EQ(srv->store.used, 5);
	/* after the backoff the peer is tried again */
	fake_now += REFUSED_MIN_MS;
	srv->peers[0]->free_est = 1000;	/* our replies said 0 free */
	srv->store.capacity = 4;
	mover_run(srv);
	while (next_out(pc, &h, &p) && h.opcode == N2L_OP_STATUS)
		;	/* the peer's room is asked now and then */
	CHECK(h.opcode == N2L_OP_PEER_PUT && h.count == 1);
	fake_now = 0;
	free(pg);
	rmsrv(srv);
}

/*
 * A page the client overwrites while its PEER_PUT is in flight is dropped
 * here by the client's INVAL; its copy on the peer is junk only the
 * client can tell apart, so the MOVED still names it. Left out, it stayed
 * on the peer, unclaimed, until it expired.
 */
TEST(mover_moved_names_pages_invalidated_during_the_peer_put)
{
	uint8_t *pg = pagebuf(8, 1), *p;
	struct conn *c, *pc;
	struct server *srv = mover_to_peer(pg, &pc, &c);
	uint64_t peer_put_id;
	struct frame_hdr h;
	struct n2l_kv kv;

	CHECK(next_out(pc, &h, &p) && h.opcode == N2L_OP_PEER_PUT && h.count == 3);
	peer_put_id = h.id;
	memcpy(&kv, p + sizeof(struct n2l_peer), sizeof(kv));	/* its first page */
	send_frame(c, N2L_OP_INVAL, 0, 3, 0, 1, 0, 0, &kv, sizeof(kv));
	CHECK(next_out(c, &h, &p) && h.opcode == N2L_OP_INVAL && h.status == N2L_ST_OK);
	CHECK_EQ(srv->store.used, 7);
	send_frame(pc, N2L_OP_PEER_PUT, 1, peer_put_id, 0, 3, 0, N2L_ST_OK, NULL, 0);
	CHECK(next_out(c, &h, &p) && h.opcode == N2L_OP_MOVED && h.count == 3);
	CHECK(!memcmp(p, &kv, sizeof(kv)));
	free(pg);
	rmsrv(srv);
}

TEST(mover_drops_unclaimed_first)
{
	struct server *srv = mksrv(100);
	struct conn *c = conn_new(srv, -1, CONN_IN, "t"), *pc = conn_new(srv, -1, CONN_IN, "p");
	struct n2l_hello ph = { .role = htole32(N2L_ROLE_PEER) };
	uint8_t *pg = pagebuf(4, 1), *p, *pp = malloc(sizeof(struct n2l_peer) + N2L_KV_BYTES(2) + PB(2));
	struct n2l_peer pe = { .device = htole64(1) };
	struct n2l_kv kv[2] = { { htole64(50), htole64(1) }, { htole64(51), htole64(1) } };
	struct frame_hdr h;

	hello(c, 1);
	next_out(c, &h, &p);
	send_frame(c, N2L_OP_PUT, 0, 2, 0, 4, 1, 0, pg, PB(4));
	next_out(c, &h, &p);
	send_frame(pc, N2L_OP_HELLO, 0, 1, 0, 0, 0, 0, &ph, sizeof(ph));
	next_out(pc, &h, &p);
	memcpy(pp, &pe, sizeof(pe));
	memcpy(pp + sizeof(pe), kv, sizeof(kv));
	memcpy(pp + sizeof(pe) + sizeof(kv), pg, PB(2));
	send_frame(pc, N2L_OP_PEER_PUT, 0, 2, 0, 2, 0, 0, pp, (uint32_t)(sizeof(pe) + sizeof(kv) + PB(2)));
	CHECK(next_out(pc, &h, &p) && h.status == N2L_ST_OK);
	CHECK_EQ(srv->store.used, 6);
	CHECK_EQ(c->area->unclaimed, 2);
	srv->store.capacity = 4;
	mover_run(srv);
	CHECK(!next_out(c, &h, &p));	/* nothing to give back: the copies went */
	CHECK_EQ(srv->store.used, 4);
	CHECK_EQ(srv->store.unclaimed, 0);
	srv->store.capacity = 3;
	mover_run(srv);
	CHECK(next_out(c, &h, &p) && h.opcode == N2L_OP_RETURN && h.count == 1);
	free(pp);
	free(pg);
	rmsrv(srv);
}
