// SPDX-License-Identifier: GPL-2.0-only
/*
 * Seals: 16 bytes that go with every page to the server and back, and
 * prove that a page read is the one written for that slot and version.
 *
 *   plain:    CRC32C over (area, slot, version) and the page, in the first
 *             4 bytes (little-endian), the rest zero. Catches a server, a
 *             network or a bug handing back another slot's page, an older
 *             version or damaged bytes; not an attacker, who can forge it.
 *   encrypt:  the page is AES-256-GCM encrypted under a key derived from
 *             the user's key and a random salt of this device instance,
 *             with the IV (slot, version) and the associated data (slot,
 *             version); the seal is the GCM tag. A version is never used
 *             twice by one device, so no IV repeats under one key, and a
 *             page that is not the one written for that slot and version
 *             does not verify. Donors see ciphertext only.
 *
 * A write is sealed once, whatever number of servers it goes to, and
 * keeps its seal until it has landed: a server that fails it is replaced
 * by another, sent the same seal (and ciphertext). Its seals and its
 * ciphertext go to pages (and a bio) from mempools, as dm-crypt's writes
 * do, so that a write under memory pressure waits for other writes to
 * finish rather than for memory that only swapping could free. That wait
 * ends because no holder of these pools takes more from them before it
 * gives back what it holds.
 */
#include <crypto/aead.h>
#include <crypto/hash.h>
#include <linux/mempool.h>
#include <linux/random.h>
#include <linux/scatterlist.h>

#include "nnet.h"

#define N2L_SEAL_POOL	16		/* seal pages kept for writes */
#define N2L_CTX_POOL	8		/* crypto requests kept for writes */

struct n2l_sealer {
	struct crypto_shash *crc;	/* plain */
	struct crypto_aead *aead;	/* encrypt */
	mempool_t *seal_pages;
	mempool_t *bounce;		/* encrypt: ciphertext pages */
	mempool_t *ctxs;		/* encrypt: requests, held for one page */
	struct mutex bounce_lock;	/* one writer waits for the pool at a time */
	struct bio_set bs;		/* encrypt: bios of ciphertext pages */
};

/* One page's AEAD request and what must not live on a stack. */
struct n2l_crypt_ctx {
	__le64 ad[2];			/* slot, version */
	u8 iv[12];
	u8 tag[N2L_SEAL_LEN];
	struct scatterlist src[4], dst[4];
	struct aead_request req;	/* followed by its reqsize */
};

struct n2l_slot_piece {
	struct page *page;
	unsigned int off, len;
};

/* The (at most two) pieces of the @i-th 4 KiB of @bio. */
static unsigned int slot_pieces(struct bio *bio, u32 i,
				struct n2l_slot_piece *p)
{
	struct bvec_iter it = bio->bi_iter;
	unsigned int n = 0, left = N2L_PAGE_SIZE;
	struct bio_vec bv;

	bio_advance_iter(bio, &it, (unsigned int)i * N2L_PAGE_SIZE);
	while (left && n < 2) {
		bv = bio_iter_iovec(bio, it);
		p[n].page = bv.bv_page;
		p[n].off = bv.bv_offset;
		p[n].len = min(bv.bv_len, left);
		left -= p[n].len;
		bio_advance_iter_single(bio, &it, p[n].len);
		n++;
	}
	return n;
}

/*----------------------------------------------------------------*/
/* Plain: CRC32C. */

static int crc_seal(struct n2l_net *net, struct n2l_slot_piece *p,
		    unsigned int n, u64 key, u64 vers, u8 *seal)
{
	SHASH_DESC_ON_STACK(desc, net->sealer->crc);
	__le64 ad[3] = { cpu_to_le64(net->device), cpu_to_le64(key),
			 cpu_to_le64(vers) };
	unsigned int i;
	__le32 crc;
	void *v;
	int r;

	desc->tfm = net->sealer->crc;
	r = crypto_shash_init(desc) ?: crypto_shash_update(desc, (u8 *)ad, sizeof(ad));
	for (i = 0; !r && i < n; i++) {
		v = kmap_local_page(p[i].page);
		r = crypto_shash_update(desc, (u8 *)v + p[i].off, p[i].len);
		kunmap_local(v);
	}
	if (!r)
		r = crypto_shash_final(desc, (u8 *)&crc);
	memset(seal, 0, N2L_SEAL_LEN);
	memcpy(seal, &crc, sizeof(crc));
	return r;
}

/*----------------------------------------------------------------*/
/* Encrypt: AES-256-GCM. */

static struct n2l_crypt_ctx *ctx_alloc(struct n2l_sealer *sl, gfp_t gfp)
{
	return mempool_alloc(sl->ctxs, gfp);
}

static int ctx_run(struct n2l_sealer *sl, struct n2l_crypt_ctx *c, u64 key,
		   u64 vers, bool enc, struct scatterlist *src,
		   struct scatterlist *dst)
{
	DECLARE_CRYPTO_WAIT(wait);
	__le32 k32 = cpu_to_le32((u32)key);
	__le64 v64 = cpu_to_le64(vers);

	c->ad[0] = cpu_to_le64(key);
	c->ad[1] = v64;
	memcpy(c->iv, &k32, 4);
	memcpy(c->iv + 4, &v64, 8);
	aead_request_set_tfm(&c->req, sl->aead);
	aead_request_set_callback(&c->req, CRYPTO_TFM_REQ_MAY_BACKLOG |
				  CRYPTO_TFM_REQ_MAY_SLEEP, crypto_req_done, &wait);
	aead_request_set_ad(&c->req, sizeof(c->ad));
	aead_request_set_crypt(&c->req, src, dst,
			       N2L_PAGE_SIZE + (enc ? 0 : N2L_SEAL_LEN), c->iv);
	return crypto_wait_req(enc ? crypto_aead_encrypt(&c->req) :
				     crypto_aead_decrypt(&c->req), &wait);
}

static unsigned int sg_pieces(struct scatterlist *sg, void *ad,
			      struct n2l_slot_piece *p, unsigned int n,
			      void *tag)
{
	unsigned int i, k = 0;

	sg_init_table(sg, 4);
	sg_set_buf(&sg[k++], ad, 2 * sizeof(__le64));
	for (i = 0; i < n; i++)
		sg_set_page(&sg[k++], p[i].page, p[i].len, p[i].off);
	if (tag)
		sg_set_buf(&sg[k++], tag, N2L_SEAL_LEN);
	sg_mark_end(&sg[k - 1]);
	return k;
}

/* Encrypt the slot in @p into @dst, its tag into @seal. */
static int gcm_seal(struct n2l_sealer *sl, struct n2l_slot_piece *p,
		    unsigned int n, struct page *dst, u64 key, u64 vers,
		    u8 *seal, gfp_t gfp)
{
	struct n2l_slot_piece d = { .page = dst, .off = 0, .len = N2L_PAGE_SIZE };
	struct n2l_crypt_ctx *c = ctx_alloc(sl, gfp);
	int r;

	if (!c)
		return -ENOMEM;
	sg_pieces(c->src, c->ad, p, n, NULL);
	sg_pieces(c->dst, c->ad, &d, 1, c->tag);
	r = ctx_run(sl, c, key, vers, true, c->src, c->dst);
	memcpy(seal, c->tag, N2L_SEAL_LEN);
	mempool_free(c, sl->ctxs);
	return r;
}

/* Decrypt the slot in @p in place if its tag @seal verifies. */
static int gcm_open(struct n2l_sealer *sl, struct n2l_slot_piece *p,
		    unsigned int n, u64 key, u64 vers, const u8 *seal)
{
	struct n2l_crypt_ctx *c = ctx_alloc(sl, GFP_NOIO);
	int r;

	memcpy(c->tag, seal, N2L_SEAL_LEN);
	sg_pieces(c->src, c->ad, p, n, c->tag);
	r = ctx_run(sl, c, key, vers, false, c->src, c->src);
	mempool_free(c, sl->ctxs);
	return r;
}

/*----------------------------------------------------------------*/

static int open_slot(struct n2l_net *net, struct n2l_slot_piece *p,
		     unsigned int n, u64 key, u64 vers, const u8 *seal)
{
	u8 want[N2L_SEAL_LEN];
	int r;

	if (net->sealer->aead)
		return gcm_open(net->sealer, p, n, key, vers, seal);
	r = crc_seal(net, p, n, key, vers, want);
	if (!r && memcmp(want, seal, N2L_SEAL_LEN))
		r = -EBADMSG;
	return r;
}

int n2l_unseal_page(struct n2l_net *net, struct page *page, u64 key, u64 vers,
		    const u8 *seal)
{
	struct n2l_slot_piece p = { .page = page, .len = N2L_PAGE_SIZE };

	return open_slot(net, &p, 1, key, vers, seal);
}

/*
 * Check (and decrypt) the @count slots of @bio against their seals; the
 * bad ones are marked in @bad if given. -EBADMSG if any is bad.
 */
int n2l_seal_check(struct n2l_net *net, struct bio *bio, u64 key, u32 count,
		   u64 vers, const void *seals, unsigned long *bad)
{
	struct n2l_slot_piece p[2];
	int r = 0;
	u32 i;

	for (i = 0; i < count; i++) {
		unsigned int n = slot_pieces(bio, i, p);

		if (open_slot(net, p, n, key + i, vers,
			      (const u8 *)seals + i * N2L_SEAL_LEN)) {
			r = -EBADMSG;
			if (bad)
				__set_bit(i, bad);
		}
	}
	return r;
}

/*----------------------------------------------------------------*/
/* Writes. */

/* The pages of @bio back to the pool; @bio is empty again. */
static void put_bounce_pages(struct n2l_sealer *sl, struct bio *bio)
{
	struct bvec_iter_all it;
	struct bio_vec *bv;

	bio_for_each_segment_all(bv, bio, it)
		mempool_free(bv->bv_page, sl->bounce);
	bio_reset(bio, NULL, REQ_OP_WRITE);
}

static void free_bounce(struct n2l_sealer *sl, struct bio *bio)
{
	put_bounce_pages(sl, bio);
	bio_put(bio);
}

/*
 * @count pages of ciphertext. First without waiting; if the pool is dry,
 * one writer at a time waits for it, so that no two writers each hold
 * part of what both need (dm-crypt's crypt_alloc_buffer()).
 */
static struct bio *alloc_bounce(struct n2l_sealer *sl, u32 count, gfp_t gfp)
{
	gfp_t nowait = (gfp | __GFP_NOWARN) & ~__GFP_DIRECT_RECLAIM;
	struct bio *bio;
	bool locked = false;
	struct page *page;
	u32 i;

	bio = bio_alloc_bioset(NULL, count, REQ_OP_WRITE, gfp, &sl->bs);
	if (!bio)
		return NULL;
retry:
	for (i = 0; i < count; i++) {
		page = mempool_alloc(sl->bounce, locked ? gfp : nowait);
		if (!page) {
			if (!(gfp & __GFP_DIRECT_RECLAIM)) {
				free_bounce(sl, bio);
				return NULL;
			}
			put_bounce_pages(sl, bio);
			mutex_lock(&sl->bounce_lock);
			locked = true;
			goto retry;
		}
		__bio_add_page(bio, page, N2L_PAGE_SIZE, 0);
	}
	if (locked)
		mutex_unlock(&sl->bounce_lock);
	return bio;
}

int n2l_net_seal(struct n2l_net *net, struct n2l_sealed *sd, struct bio *data,
		 u64 key, u32 count, u64 vers, gfp_t gfp)
{
	struct n2l_sealer *sl = net->sealer;
	struct n2l_slot_piece p[2];
	u8 *seals;
	int r = 0;
	u32 i;

	memset(sd, 0, sizeof(*sd));
	sd->seals = mempool_alloc(sl->seal_pages, gfp);
	if (!sd->seals)
		return -ENOMEM;
	seals = page_address((struct page *)sd->seals);
	sd->seals = seals;
	sd->wire = data;
	if (sl->aead) {
		sd->wire = alloc_bounce(sl, count, gfp);
		if (!sd->wire) {
			n2l_net_unseal(net, sd);
			return -ENOMEM;
		}
		sd->bounced = true;
	}
	for (i = 0; !r && i < count; i++) {
		unsigned int n = slot_pieces(data, i, p);
		u8 *seal = seals + i * N2L_SEAL_LEN;

		r = sl->aead ?
		    gcm_seal(sl, p, n, sd->wire->bi_io_vec[i].bv_page, key + i,
			     vers, seal, gfp) :
		    crc_seal(net, p, n, key + i, vers, seal);
	}
	if (r)
		n2l_net_unseal(net, sd);
	return r;
}

void n2l_net_unseal(struct n2l_net *net, struct n2l_sealed *sd)
{
	struct n2l_sealer *sl = net->sealer;

	if (sd->bounced && sd->wire)
		free_bounce(sl, sd->wire);
	if (sd->seals)
		mempool_free(virt_to_page(sd->seals), sl->seal_pages);
	memset(sd, 0, sizeof(*sd));
}

/*----------------------------------------------------------------*/

/* K_page = HMAC(user key, "n2l2-page" || salt): never repeats across devices. */
static int derive_page_key(const u8 *user_key, u8 *out)
{
	struct crypto_shash *h = crypto_alloc_shash("hmac(sha256)", 0, 0);
	struct {
		char label[16];
		u8 salt[16];
	} in = { .label = "n2l2-page" };
	int r;

	if (IS_ERR(h))
		return PTR_ERR(h);
	get_random_bytes(in.salt, sizeof(in.salt));
	r = crypto_shash_setkey(h, user_key, N2L_PAGE_KEY_LEN);
	if (!r)
		r = crypto_shash_tfm_digest(h, (u8 *)&in, sizeof(in), out);
	crypto_free_shash(h);
	return r;
}

static int init_aead(struct n2l_sealer *sl, const u8 *user_key)
{
	u8 key[N2L_PAGE_KEY_LEN];
	size_t ctx;
	int r;

	sl->aead = crypto_alloc_aead("gcm(aes)", 0, 0);
	if (IS_ERR(sl->aead)) {
		r = PTR_ERR(sl->aead);
		sl->aead = NULL;
		return r;
	}
	r = derive_page_key(user_key, key);
	if (!r)
		r = crypto_aead_setkey(sl->aead, key, sizeof(key));
	memzero_explicit(key, sizeof(key));
	if (!r)
		r = crypto_aead_setauthsize(sl->aead, N2L_SEAL_LEN);
	if (r)
		return r;
	ctx = sizeof(struct n2l_crypt_ctx) + crypto_aead_reqsize(sl->aead);
	sl->ctxs = mempool_create(N2L_CTX_POOL, n2l_pool_kmalloc, mempool_kfree,
				  (void *)ctx);
	sl->bounce = mempool_create(N2L_MAX_PAGES, n2l_pool_alloc_page,
				    n2l_pool_free_page, NULL);
	if (!sl->ctxs || !sl->bounce)
		return -ENOMEM;
	return bioset_init(&sl->bs, N2L_SEAL_POOL, 0, BIOSET_NEED_BVECS);
}

int n2l_sealer_init(struct n2l_net *net, const u8 *page_key)
{
	struct n2l_sealer *sl = kzalloc(sizeof(*sl), GFP_KERNEL);
	int r;

	if (!sl)
		return -ENOMEM;
	net->sealer = sl;
	mutex_init(&sl->bounce_lock);
	sl->seal_pages = mempool_create(N2L_SEAL_POOL, n2l_pool_alloc_page,
					n2l_pool_free_page, NULL);
	if (!sl->seal_pages)
		return -ENOMEM;
	if (page_key)
		return init_aead(sl, page_key);
	sl->crc = crypto_alloc_shash("crc32c", 0, 0);
	if (IS_ERR(sl->crc)) {
		r = PTR_ERR(sl->crc);
		sl->crc = NULL;
		return r;
	}
	return 0;
}

void n2l_sealer_exit(struct n2l_net *net)
{
	struct n2l_sealer *sl = net->sealer;

	if (!sl)
		return;
	bioset_exit(&sl->bs);
	mempool_destroy(sl->ctxs);
	mempool_destroy(sl->bounce);
	mempool_destroy(sl->seal_pages);
	if (sl->aead)
		crypto_free_aead(sl->aead);
	if (sl->crc)
		crypto_free_shash(sl->crc);
	kfree(sl);
	net->sealer = NULL;
}
