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
	char *argv[] = { "nswapd", "--log-level", "error", NULL };

	config_load(&cfg, 3, argv, err, sizeof(err));
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
		    uint32_t count, uint32_t vers, uint32_t status, const void *payload, uint32_t len)
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

static void send_frame(struct conn *c, unsigned int op, int reply, uint64_t id, uint64_t key,
		       uint32_t count, uint32_t vers, uint32_t status, const void *payload, uint32_t len)
{
	uint8_t *buf = malloc(N2L_HDR_LEN + len);

	feed(c, buf, frame(buf, op, reply, id, key, count, vers, status, payload, len));
	free(buf);
}

static void hello(struct conn *c, uint64_t client_id)
{
	struct n2l_hello h = { .client_id = htole64(client_id) };

	send_frame(c, N2L_OP_HELLO, 0, 1, 0, 0, 0, 0, &h, sizeof(h));
}

/* Takes the next queued frame off c->out; its payload stays valid until the next call. */
static int next_out(struct conn *c, struct frame_hdr *h, uint8_t **payload)
{
	static uint8_t *copy;
	struct n2l_hdr w;

	if (buf_len(&c->out) < N2L_HDR_LEN)
		return 0;
	memcpy(&w, buf_data(&c->out), N2L_HDR_LEN);
	frame_decode(&w, h);
	free(copy);
	copy = malloc(h->len + 1);
	memcpy(copy, buf_data(&c->out) + N2L_HDR_LEN, h->len);
	buf_consume(&c->out, N2L_HDR_LEN + h->len);
	*payload = copy;
	return 1;
}

static uint8_t *pagebuf(unsigned int n, int seed)
{
	uint8_t *p = malloc((size_t)n * N2L_PAGE_SIZE);

	for (size_t i = 0; i < (size_t)n * N2L_PAGE_SIZE; i++)
		p[i] = (uint8_t)(seed + i / N2L_PAGE_SIZE);
	return p;
}

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
	CHECK_EQ(h.len, sizeof(info));
	memcpy(&info, p, sizeof(info));
	CHECK_EQ(le64toh(info.capacity_pages), 100);
	CHECK_EQ(le64toh(info.free_pages), 100);
	send_frame(c, N2L_OP_PUT, 0, 2, 40, 2, 6, 0, pg, 2 * N2L_PAGE_SIZE);
	CHECK(next_out(c, &h, &p));
	CHECK(h.status == N2L_ST_OK && h.id == 2 && h.key == 40 && h.count == 2 && h.vers == 6);
	CHECK_EQ(h.free_pages, 98);
	send_frame(c, N2L_OP_GET, 0, 3, 40, 2, 6, 0, NULL, 0);
	CHECK(next_out(c, &h, &p));
	CHECK(h.status == N2L_ST_OK && h.len == 2 * N2L_PAGE_SIZE && !memcmp(p, pg, 2 * N2L_PAGE_SIZE));
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
	uint8_t *pg = pagebuf(3, 5), *buf = malloc(N2L_HDR_LEN + 3 * N2L_PAGE_SIZE);
	struct frame_hdr h;
	uint8_t *p;
	size_t n;

	hello(c, 1);
	next_out(c, &h, &p);
	n = frame(buf, N2L_OP_PUT, 0, 2, 0, 3, 1, 0, pg, 3 * N2L_PAGE_SIZE);
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
	send_frame(c, N2L_OP_PUT, 0, 2, 0, 256, 1, 0, pg, 256 * N2L_PAGE_SIZE);
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
	send_frame(c, N2L_OP_PUT, 0, 2, 0, 8, 1, 0, pg, 8 * N2L_PAGE_SIZE);
	next_out(c, &h, &p);
	srv->store.capacity = 5;
	mover_run(srv);
	CHECK(next_out(c, &h, &p));
	CHECK(h.opcode == N2L_OP_RETURN && !(h.flags & N2L_F_REPLY) && h.count == 3);
	CHECK(kv_key(p, 0) == 0 && kv_key(p, 2) == 2);
	CHECK(!memcmp(p + 3 * sizeof(struct n2l_kv), pg, 3 * N2L_PAGE_SIZE));
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
	send_frame(c, N2L_OP_PUT, 0, 2, 0, 4, 1, 0, pg, 4 * N2L_PAGE_SIZE);
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
	send_frame(c, N2L_OP_PUT, 0, 2, 0, 4, 1, 0, pg, 4 * N2L_PAGE_SIZE);
	hello(d, 2);
	next_out(d, &h, &p);
	send_frame(d, N2L_OP_PUT, 0, 2, 0, 4, 1, 0, pg, 4 * N2L_PAGE_SIZE);
	next_out(d, &h, &p);
	conn_kill(c, NULL);
	server_after_events(srv);	/* reaped; client 1 keeps its pages */
	CHECK_EQ(srv->store.used, 8);
	server_drain(srv);
	send_frame(d, N2L_OP_PUT, 0, 3, 10, 1, 1, 0, pg, N2L_PAGE_SIZE);
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
