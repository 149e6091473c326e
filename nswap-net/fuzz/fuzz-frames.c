// SPDX-License-Identifier: GPL-2.0-only
/*
 * libFuzzer target: the whole server minus sockets. The input is a script
 * of commands against one fresh server per run, with two accepted
 * connections (clients or peers, whatever their HELLO says) and one
 * connection to a peer server, all without file descriptors:
 *
 *   byte op, then by op % 8:
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
#include <stdlib.h>
#include <string.h>

#include "server.h"

static int64_t fake_now;

static int64_t fake_clock(void)
{
	return fake_now;
}

struct fuzz {
	struct server *srv;
	struct conn *conns[3];
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
	uint8_t frame[N2L_HDR_LEN + sizeof(info)];
	struct frame_hdr h;
	struct n2l_hdr w;
	uint32_t status;

	if (!*size)
		return;
	status = (*data)[0] % 9;	/* 8: not a status at all */
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
	if (status == N2L_ST_OK && (r->op == N2L_OP_HELLO || r->op == N2L_OP_STATUS)) {
		size_t n = *size < sizeof(info) ? *size : sizeof(info);

		memcpy(&info, *data, n);
		*data += n, *size -= n;
		h.len = sizeof(info);
	}
	frame_encode(&h, &w);
	memcpy(frame, &w, sizeof(w));
	memcpy(frame + sizeof(w), &info, h.len);
	feed(r->conn, frame, N2L_HDR_LEN + h.len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *argv[] = { "nswapd", "--log-level", "error", "--peer", "192.0.2.1:7077",
			 "--client-timeout-s", "5", NULL };
	struct fuzz f = { 0 };
	struct config cfg;
	char err[256];

	if (config_load(&cfg, 7, argv, err, sizeof(err)) != CONFIG_OK)
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
		    f.srv->store.moving > f.srv->store.used)
			abort();
	}
	server_destroy(f.srv);
	free(f.srv);
	return 0;
}
