// SPDX-License-Identifier: GPL-2.0-only
/*
 * Requests we send (MOVED and RETURN to clients; HELLO, STATUS and
 * PEER_PUT to peers), with ids from our own counter. Each ends exactly
 * once: with its reply, or SREQ_LOST when its connection closes or it
 * times out. A request to a client that timed out stays known until its
 * connection closes, so that a late reply is recognised and ignored
 * rather than taken for garbage.
 *
 * A client answers our requests one at a time, in the order they came
 * (the kernel client's event work), so those behind the first wait for
 * it: each answer from a client restarts the clock of the requests still
 * waiting on its connection. A client times out when it answers nothing
 * for request_timeout_s, not when its last answer comes later than that
 * after the first request was sent.
 */
#include "server.h"

#include <inttypes.h>
#include <stdlib.h>

#define SREQ_FORGET_MS	(10 * 60 * 1000)	/* late replies after this: INVALID */

static void unlink_req(struct server *srv, struct sreq *r)
{
	if (r->prev)
		r->prev->next = r->next;
	else
		srv->sreqs = r->next;
	if (r->next)
		r->next->prev = r->prev;
}

struct sreq *sreq_send(struct server *srv, struct conn *c, uint8_t op,
		       uint32_t count, uint32_t len, sreq_done_fn done, void *arg,
		       uint8_t **payload)
{
	struct frame_hdr h = {
		.magic = N2L_MAGIC,
		.version = N2L_PROTO_VERSION,
		.opcode = op,
		.id = ++srv->next_req_id,
		.count = count,
		.len = len,
	};
	struct sreq *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	*payload = conn_frame(c, &h);
	if (!*payload) {
		free(r);
		return NULL;
	}
	r->id = h.id;
	r->op = op;
	r->count = count;
	r->conn = c;
	r->deadline_ms = server_now(srv) + (int64_t)srv->cfg.request_timeout_s * 1000;
	r->done = done;
	r->arg = arg;
	r->next = srv->sreqs;
	if (srv->sreqs)
		srv->sreqs->prev = r;
	srv->sreqs = r;
	return r;
}

/* @c answered one request: the clocks of the others waiting on it start again. */
static void restart_clocks(struct server *srv, struct conn *c)
{
	int64_t deadline = server_now(srv) + (int64_t)srv->cfg.request_timeout_s * 1000;

	for (struct sreq *r = srv->sreqs; r; r = r->next)
		if (r->conn == c && r->done && r->deadline_ms < deadline)
			r->deadline_ms = deadline;
}

int sreq_complete(struct server *srv, struct conn *c, const struct frame_hdr *h,
		  const uint8_t *payload)
{
	struct sreq *r;

	for (r = srv->sreqs; r; r = r->next)
		if (r->id == h->id && r->conn == c)
			break;
	if (!r || r->op != h->opcode || r->count != h->count)
		return -1;
	unlink_req(srv, r);
	if (!r->done) {
		log_info(&srv->log, "connection %s: late %s reply (id %" PRIu64 ", %s) ignored",
			 c->name, frame_op_name(r->op), r->id, frame_status_name(h->status));
		free(r);
		return 1;
	}
	if (c->kind != CONN_PEER)
		restart_clocks(srv, c);
	r->done(srv, r, (int)h->status, h, payload);
	free(r);
	return 0;
}

void sreq_conn_lost(struct server *srv, struct conn *c)
{
	struct sreq *r, *next;

	for (r = srv->sreqs; r; r = next) {
		next = r->next;
		if (r->conn != c)
			continue;
		unlink_req(srv, r);
		if (r->done)
			r->done(srv, r, SREQ_LOST, NULL, NULL);
		free(r);
	}
}

void sreq_tick(struct server *srv, int64_t now)
{
	struct sreq *r, *next;

	for (r = srv->sreqs; r; r = next) {
		next = r->next;
		if (now < r->deadline_ms)
			continue;
		if (!r->done) {
			unlink_req(srv, r);
			free(r);
			continue;
		}
		log_warn(&srv->log, "connection %s: no reply to %s (id %" PRIu64 ") in %" PRIu64 " s",
			 r->conn->name, frame_op_name(r->op), r->id, srv->cfg.request_timeout_s);
		if (r->conn->kind == CONN_PEER) {
			/* a peer that does not answer is not worth keeping */
			conn_kill(r->conn, "peer does not answer");
			continue;
		}
		r->done(srv, r, SREQ_LOST, NULL, NULL);
		r->done = NULL;
		r->deadline_ms = now + SREQ_FORGET_MS;
	}
}

/* Shutdown: end every request as lost. */
void sreq_abort_all(struct server *srv)
{
	while (srv->sreqs) {
		struct sreq *r = srv->sreqs;

		unlink_req(srv, r);
		if (r->done)
			r->done(srv, r, SREQ_LOST, NULL, NULL);
		free(r);
	}
}
