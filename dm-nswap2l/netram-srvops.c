// SPDX-License-Identifier: GPL-2.0-only
/*
 * Requests a page server sends us when it gives memory back to its node:
 * MOVED (our pages now live on a peer) and RETURN (here are our pages).
 * The server keeps the pages, and serves them, until our answer; a slot
 * that changed meanwhile keeps its newer data and the copy is dropped.
 *
 * This runs on the server's own work item, which the server's stop path
 * flushes with the store's config_lock held: nothing here takes it.
 */
#include "nswap2l.h"

static void reply_done(struct n2l_netreq *req)
{
	n2l_srvop_free(req->private);
}

static void reply(struct n2l_server *srv, struct n2l_srvop *op, int status)
{
	struct n2l_netreq *req = &op->reply;

	INIT_LIST_HEAD(&req->node);
	req->op = op->hdr.opcode;
	req->flags = N2L_F_REPLY;
	req->id = le64_to_cpu(op->hdr.id);
	req->key = le64_to_cpu(op->hdr.key);
	req->count = le32_to_cpu(op->hdr.count);
	req->vers = le32_to_cpu(op->hdr.vers);
	req->status = status;
	req->done = reply_done;
	req->private = op;
	n2l_server_submit(srv, req);
}

/* Remember @name for the tick to connect to; false if no room. */
static bool __want_peer(struct n2l_netram *nr, const char *name)
{
	unsigned int i;

	for (i = 0; i < N2L_MAX_WANTED; i++)
		if (!strcmp(nr->wanted[i], name))
			return true;
	for (i = 0; i < N2L_MAX_WANTED; i++) {
		if (!nr->wanted[i][0]) {
			strscpy(nr->wanted[i], name, N2L_ADDR_LEN);
			return true;
		}
	}
	return false;
}

static bool key_ok(struct n2l_store *s, u64 key)
{
	return key < n2l_nr_slots(s);
}

/*
 * Point the slots still on this server's copy at the peer. A peer we do
 * not know yet is connected to by the tick; until then we answer FULL
 * and the server tries again later.
 */
static int handle_moved(struct n2l_server *srv, struct n2l_srvop *op)
{
	struct n2l_store *s = srv->nr->store;
	u32 i, count = le32_to_cpu(op->hdr.count), vers, moved = 0;
	struct n2l_server *peer;
	sme_t e, new;
	u64 key;

	op->addr.addr[N2L_ADDR_LEN - 1] = '\0';
	spin_lock_irq(&s->lock);
	peer = __n2l_server_find(&s->netram, op->addr.addr);
	if (!peer || peer == srv) {
		if (!peer)
			__want_peer(&s->netram, op->addr.addr);
		spin_unlock_irq(&s->lock);
		return N2L_ST_FULL;
	}
	for (i = 0; i < count; i++) {
		key = le64_to_cpu(op->kv[i].key);
		vers = le32_to_cpu(op->kv[i].vers);
		if (!key_ok(s, key))
			continue;
		e = slotmap_get(&s->map, to_slot(key));
		if (sme_medium(e) != N2L_NETRAM ||
		    sme_loc(e) != sme_netram_loc(srv->idx, vers)) {
			/* Overwritten or freed meanwhile: the peer's copy is junk. */
			__n2l_netram_inval(&s->netram, peer->idx, key, vers);
			continue;
		}
		new = sme_make(N2L_NETRAM, sme_netram_loc(peer->idx, vers),
			       sme_version(e), sme_flags(e));
		__n2l_held_add(s, e, -1);
		slotmap_set(&s->map, to_slot(key), new);
		__n2l_held_add(s, new, 1);
		moved++;
	}
	spin_unlock_irq(&s->lock);
	atomic64_add(moved, &s->netram.moved_pages);
	return N2L_ST_OK;
}

/* The entries from @i that form one run: consecutive keys, one version. */
static u32 run_length(struct n2l_srvop *op, u32 i, u32 count)
{
	u64 key = le64_to_cpu(op->kv[i].key);
	u32 vers = le32_to_cpu(op->kv[i].vers), n = 1;

	while (i + n < count &&
	       le64_to_cpu(op->kv[i + n].key) == key + n &&
	       le32_to_cpu(op->kv[i + n].vers) == vers)
		n++;
	return n;
}

/* Move one run of returned pages to wherever placement says. */
static int return_run(struct n2l_server *srv, struct n2l_srvop *op, u32 i,
		      u32 n)
{
	struct n2l_store *s = srv->nr->store;
	u64 key = le64_to_cpu(op->kv[i].key);
	u32 vers = le32_to_cpu(op->kv[i].vers), j;
	struct n2l_move mv = {
		.first = to_slot(key), .nr = n,
		.src_loc = sme_netram_loc(srv->idx, vers),
		.avoid = BIT_ULL(srv->idx),
	};
	struct bio *bio;
	int r;

	if (!key_ok(s, key) || !key_ok(s, key + n - 1))
		return 0;
	bio = bio_kmalloc(n, GFP_NOIO);
	if (!bio)
		return -ENOMEM;
	bio_init(bio, NULL, bio->bi_inline_vecs, n, REQ_OP_WRITE);
	for (j = 0; j < n; j++)
		__bio_add_page(bio, op->pages[i + j], N2L_PAGE_SIZE, 0);
	mv.data = bio;
	r = n2l_move_out(s, &mv);
	bio_uninit(bio);
	kfree(bio);
	return r;
}

static int handle_return(struct n2l_server *srv, struct n2l_srvop *op)
{
	u32 i, n, count = le32_to_cpu(op->hdr.count);
	int r;

	for (i = 0; i < count; i += n) {
		n = run_length(op, i, count);
		r = return_run(srv, op, i, n);
		if (r)
			return N2L_ST_FULL;	/* keep them; ask again later */
	}
	atomic64_add(count, &srv->nr->returned_pages);
	return N2L_ST_OK;
}

void n2l_srvop_work(struct work_struct *w)
{
	struct n2l_server *srv = container_of(w, struct n2l_server, srvop_work);
	unsigned int noio = memalloc_noio_save();
	struct n2l_srvop *op;
	int status;

	for (;;) {
		spin_lock_irq(&srv->lock);
		op = list_first_entry_or_null(&srv->srvops, struct n2l_srvop, node);
		if (op)
			list_del_init(&op->node);
		spin_unlock_irq(&srv->lock);
		if (!op)
			break;
		if (op->hdr.opcode == N2L_OP_MOVED)
			status = handle_moved(srv, op);
		else
			status = handle_return(srv, op);
		reply(srv, op, status);
	}
	memalloc_noio_restore(noio);
}
