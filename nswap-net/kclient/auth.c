// SPDX-License-Identifier: GPL-2.0-only
/*
 * Authentication in the manner of NVMe/TCP's DH-HMAC-CHAP, without the
 * DH: client and server prove to each other that they hold the identity's
 * pre-shared key, over fresh nonces of both, so no secret crosses the wire
 * and no answer can be replayed; the session keys derived from the key
 * and both nonces then tag every frame (AES-256-GCM with no plaintext,
 * the sequence number as IV), so a frame forged, replayed, reordered or
 * dropped by anyone on the path ends the connection. The exact transcript
 * and labels are in n2l-proto.h.
 *
 * Crypto objects are made when a server is added, not per connection:
 * connecting must not wait for memory that swapping would free.
 */
#include <crypto/aead.h>
#include <crypto/algapi.h>
#include <crypto/hash.h>
#include <linux/bio.h>
#include <linux/random.h>
#include <linux/scatterlist.h>

#include "auth.h"

/* Header, entries, pages, seals and tag: a RETURN of N2L_MAX_PAGES has all. */
#define N2L_SG_MAX	(N2L_MAX_PAGES + 4)
#define N2L_SCRATCH	(sizeof(struct n2l_hdr) + N2L_FRAME_LINEAR + N2L_TAG_LEN)

/*
 * A frame tag is GCM over associated data only (header and pages). The
 * x86 AES-NI "gcm(aes)" copies all of it into one buffer kmalloc'ed per
 * frame, up to a megabyte in the swap-out path; the gcm template built on
 * the AES-NI CTR and PCLMUL GHASH drivers (asked for by driver name, as
 * "ghash" alone finds the table-driven one) hashes the pages where they
 * lie. Same algorithm, same tags; "gcm(aes)" elsewhere.
 */
static const char *const n2l_tag_aeads[] = {
	"gcm_base(ctr-aes-aesni,ghash-clmulni)",
	"gcm(aes)",
};

static struct crypto_aead *alloc_tag_aead(void)
{
	struct crypto_aead *tfm = ERR_PTR(-ENOENT);
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(n2l_tag_aeads) && IS_ERR(tfm); i++)
		tfm = crypto_alloc_aead(n2l_tag_aeads[i], 0, 0);
	return tfm;
}

static int dir_init(struct n2l_session_dir *d)
{
	d->tfm = alloc_tag_aead();
	if (IS_ERR(d->tfm)) {
		int r = PTR_ERR(d->tfm);

		d->tfm = NULL;
		return r;
	}
	d->req = aead_request_alloc(d->tfm, GFP_KERNEL);
	d->sg = kcalloc(N2L_SG_MAX, sizeof(*d->sg), GFP_KERNEL);
	d->scratch = kmalloc(N2L_SCRATCH, GFP_KERNEL);
	if (!d->req || !d->sg || !d->scratch)
		return -ENOMEM;
	return crypto_aead_setauthsize(d->tfm, N2L_TAG_LEN);
}

static void dir_exit(struct n2l_session_dir *d)
{
	kfree_sensitive(d->scratch);
	kfree(d->sg);
	aead_request_free(d->req);
	if (d->tfm)
		crypto_free_aead(d->tfm);
	memset(d, 0, sizeof(*d));
}

int n2l_session_init(struct n2l_nsrv *srv)
{
	struct n2l_session *s = &srv->sess;
	int r;

	if (!srv->net->secure)
		return 0;
	s->hmac = crypto_alloc_shash("hmac(sha256)", 0, 0);
	if (IS_ERR(s->hmac)) {
		r = PTR_ERR(s->hmac);
		s->hmac = NULL;
		return r;
	}
	r = dir_init(&s->tx);
	return r ?: dir_init(&s->rx);
}

void n2l_session_exit(struct n2l_nsrv *srv)
{
	struct n2l_session *s = &srv->sess;

	dir_exit(&s->tx);
	dir_exit(&s->rx);
	if (s->hmac)
		crypto_free_shash(s->hmac);
	s->hmac = NULL;
}

/* Back to untagged; the next handshake sets new keys. */
void n2l_session_end(struct n2l_nsrv *srv)
{
	srv->sess.tagged = false;
}

/*----------------------------------------------------------------*/
/* Tags. */

/* @len bytes of @p into the scratch at *@off, as one scatterlist entry. */
static void sg_linear(struct n2l_session_dir *d, unsigned int *i, size_t *off,
		      const void *p, size_t len)
{
	if (!len)
		return;
	memcpy(d->scratch + *off, p, len);
	sg_set_buf(&d->sg[(*i)++], d->scratch + *off, len);
	*off += len;
}

/*
 * GMAC of @f, the IV its sequence number: written into @tag (@verify
 * false), or checked against it (-EBADMSG when it does not match).
 */
static int frame_gmac(struct n2l_session_dir *d, const struct n2l_frame *f,
		      u8 *tag, bool verify)
{
	u32 assoc = sizeof(*f->hdr) + le32_to_cpu(f->hdr->len);
	DECLARE_CRYPTO_WAIT(wait);
	unsigned int i = 0;
	struct bvec_iter it;
	struct bio_vec bv;
	size_t off = 0;
	__le64 iv[2] = { cpu_to_le64(d->seq), 0 };
	int r;

	if (f->pre_len + f->post_len > N2L_FRAME_LINEAR ||
	    (f->bio ? bio_segments(f->bio) : 0) + 4 > N2L_SG_MAX)
		return -EMSGSIZE;
	sg_init_table(d->sg, N2L_SG_MAX);
	sg_linear(d, &i, &off, f->hdr, sizeof(*f->hdr));
	sg_linear(d, &i, &off, f->pre, f->pre_len);
	if (f->bio)
		bio_for_each_segment(bv, f->bio, it)
			sg_set_page(&d->sg[i++], bv.bv_page, bv.bv_len,
				    bv.bv_offset);
	sg_linear(d, &i, &off, f->post, f->post_len);
	/* The tag's place: filled by encrypt, read by decrypt. */
	memcpy(d->scratch + off, tag, N2L_TAG_LEN);
	sg_set_buf(&d->sg[i++], d->scratch + off, N2L_TAG_LEN);
	sg_mark_end(&d->sg[i - 1]);

	aead_request_set_callback(d->req, CRYPTO_TFM_REQ_MAY_BACKLOG |
				  CRYPTO_TFM_REQ_MAY_SLEEP, crypto_req_done, &wait);
	aead_request_set_ad(d->req, assoc);
	aead_request_set_crypt(d->req, d->sg, d->sg, verify ? N2L_TAG_LEN : 0,
			       (u8 *)iv);
	r = crypto_wait_req(verify ? crypto_aead_decrypt(d->req) :
				     crypto_aead_encrypt(d->req), &wait);
	if (!r && !verify)
		memcpy(tag, d->scratch + off, N2L_TAG_LEN);
	if (!r)
		d->seq++;
	return r;
}

/* Sends the pieces of @f, and its tag when the session tags frames. */
int n2l_frame_send(struct n2l_nsrv *srv, struct socket *sock,
		   const struct n2l_frame *f)
{
	struct n2l_session *s = &srv->sess;
	u8 tag[N2L_TAG_LEN] = {};
	bool tagged = s->tagged;
	int r;

	if (tagged) {
		r = frame_gmac(&s->tx, f, tag, false);
		if (r)
			return r;
	}
	r = n2l_wire_buf(sock, f->hdr, sizeof(*f->hdr), true,
			 f->pre_len || f->bio || f->post_len || tagged);
	if (!r && f->pre_len)
		r = n2l_wire_buf(sock, (void *)f->pre, f->pre_len, true,
				 f->bio || f->post_len || tagged);
	if (!r && f->bio)
		r = n2l_wire_bio(sock, f->bio, true, f->post_len || tagged);
	if (!r && f->post_len)
		r = n2l_wire_buf(sock, (void *)f->post, f->post_len, true, tagged);
	if (!r && tagged)
		r = n2l_wire_buf(sock, tag, N2L_TAG_LEN, true, false);
	return r;
}

int n2l_frame_check_tag(struct n2l_nsrv *srv, struct socket *sock,
			const struct n2l_frame *f)
{
	struct n2l_session *s = &srv->sess;
	u8 tag[N2L_TAG_LEN];
	int r;

	if (!s->tagged)
		return 0;
	r = n2l_wire_buf(sock, tag, sizeof(tag), false, false);
	if (r)
		return r;
	r = frame_gmac(&s->rx, f, tag, true);
	return r == -EBADMSG ? -EPROTO : r;
}

/*----------------------------------------------------------------*/
/* The handshake. */

struct n2l_handshake {
	struct n2l_hello hello;
	struct n2l_hello_reply reply;
	struct n2l_transcript tr;
	u8 mac[N2L_MAC_LEN];
};

static int hmac(struct n2l_session *s, const u8 *key, const void *data,
		size_t len, u8 *out)
{
	SHASH_DESC_ON_STACK(desc, s->hmac);
	int r;

	r = crypto_shash_setkey(s->hmac, key, N2L_MAC_LEN);
	if (r)
		return r;
	desc->tfm = s->hmac;
	r = crypto_shash_digest(desc, data, len, out);
	shash_desc_zero(desc);
	return r;
}

/* HMAC(psk, transcript(@label)) */
static int proof(struct n2l_nsrv *srv, struct n2l_handshake *hs,
		 const char *label, u8 *out)
{
	memset(hs->tr.label, 0, sizeof(hs->tr.label));
	strscpy(hs->tr.label, label, sizeof(hs->tr.label));
	return hmac(&srv->sess, srv->net->psk, &hs->tr, sizeof(hs->tr), out);
}

/* HMAC(Ks, @label): the label's bytes alone, no NUL (n2l-proto.h). */
static int set_dir_key(struct n2l_session *s, struct n2l_session_dir *d,
		       const u8 *ks, const char *label)
{
	u8 key[N2L_MAC_LEN];
	int r;

	r = hmac(s, ks, label, strlen(label), key);
	if (!r)
		r = crypto_aead_setkey(d->tfm, key, sizeof(key));
	memzero_explicit(key, sizeof(key));
	d->seq = 0;
	return r;
}

static int start_session(struct n2l_nsrv *srv, struct n2l_handshake *hs)
{
	struct n2l_session *s = &srv->sess;
	u8 ks[N2L_MAC_LEN];
	int r;

	r = proof(srv, hs, "n2l2-session", ks);
	if (!r)
		r = set_dir_key(s, &s->tx, ks, "n2l2-c2s");
	if (!r)
		r = set_dir_key(s, &s->rx, ks, "n2l2-s2c");
	memzero_explicit(ks, sizeof(ks));
	s->tagged = !r;
	return r;
}

/* A reply to the handshake request @op: its header, checked. */
static int recv_hs_reply(struct n2l_nsrv *srv, struct socket *sock, u8 op,
			 u64 id, struct n2l_hdr *h, u32 *len)
{
	int r = n2l_wire_buf(sock, h, sizeof(*h), false, false);

	if (r)
		return r;
	if (n2l_check_hdr(h, len) || !(le16_to_cpu(h->flags) & N2L_F_REPLY) ||
	    h->opcode != op || le64_to_cpu(h->id) != id)
		return -EPROTO;
	switch (le32_to_cpu(h->status)) {
	case N2L_ST_OK:
		return 0;
	case N2L_ST_AUTH:
		return -EACCES;
	case N2L_ST_VERSION:
		return -EPROTONOSUPPORT;
	default:
		return -EPROTO;
	}
}

static int send_hs(struct n2l_nsrv *srv, struct socket *sock, u8 op, u64 id,
		   void *payload, u32 len)
{
	struct n2l_net_req req = {
		.op = op, .id = id, .buf = payload, .buf_len = len,
	};

	return n2l_send_frame(srv, sock, &req);
}

static int parse_hs_info(const struct n2l_info *wire,
			 struct n2l_info_host *info)
{
	return n2l_parse_info(wire, info) ? -EPROTO : 0;
}

/* The server proves it holds the key; then we do; then frames are tagged. */
static int authenticate(struct n2l_nsrv *srv, struct socket *sock,
			struct n2l_handshake *hs, struct n2l_info_host *info)
{
	struct n2l_auth auth;
	struct n2l_info wire;
	struct n2l_hdr h;
	struct n2l_frame f = { .hdr = &h, .pre = &wire, .pre_len = sizeof(wire) };
	u32 len;
	int r;

	memcpy(hs->tr.server_nonce, hs->reply.challenge.nonce, N2L_NONCE_LEN);
	r = proof(srv, hs, "n2l2-server", hs->mac);
	if (r)
		return r;
	if (crypto_memneq(hs->mac, hs->reply.challenge.proof, N2L_MAC_LEN))
		return -EKEYREJECTED;
	r = proof(srv, hs, "n2l2-client", auth.proof);
	if (!r)
		r = send_hs(srv, sock, N2L_OP_AUTH, 2, &auth, sizeof(auth));
	if (!r)
		r = start_session(srv, hs);
	if (!r)
		r = recv_hs_reply(srv, sock, N2L_OP_AUTH, 2, &h, &len);
	if (!r && len != sizeof(wire))
		r = -EPROTO;
	if (!r)
		r = n2l_wire_buf(sock, &wire, sizeof(wire), false, false);
	if (!r)
		r = n2l_frame_check_tag(srv, sock, &f);
	if (!r)
		r = parse_hs_info(&wire, info);
	memzero_explicit(&auth, sizeof(auth));
	return r;
}

int n2l_handshake(struct n2l_nsrv *srv, struct socket *sock,
		  struct n2l_info_host *info)
{
	struct n2l_net *net = srv->net;
	struct n2l_handshake *hs;
	struct n2l_hdr h;
	u32 len;
	int r;

	n2l_session_end(srv);
	hs = kzalloc(sizeof(*hs), GFP_NOIO);
	if (!hs)
		return -ENOMEM;
	hs->hello.role = cpu_to_le32(N2L_ROLE_CLIENT);
	hs->hello.device = cpu_to_le64(net->device);
	if (net->secure) {
		hs->hello.flags = cpu_to_le32(N2L_HELLO_AUTH);
		get_random_bytes(hs->hello.nonce, N2L_NONCE_LEN);
		memcpy(hs->hello.identity, net->identity, N2L_ID_LEN);
	}
	memcpy(hs->tr.client_nonce, hs->hello.nonce, N2L_NONCE_LEN);
	hs->tr.role = hs->hello.role;
	hs->tr.device = hs->hello.device;
	memcpy(hs->tr.identity, hs->hello.identity, N2L_ID_LEN);

	r = send_hs(srv, sock, N2L_OP_HELLO, 1, &hs->hello, sizeof(hs->hello));
	if (!r)
		r = recv_hs_reply(srv, sock, N2L_OP_HELLO, 1, &h, &len);
	if (!r && len != sizeof(hs->reply))
		r = -EPROTO;
	if (!r)
		r = n2l_wire_buf(sock, &hs->reply, sizeof(hs->reply), false, false);
	if (!r && net->secure)
		r = authenticate(srv, sock, hs, info);
	else if (!r)
		r = parse_hs_info(&hs->reply.info, info);
	if (r)
		n2l_session_end(srv);
	kfree_sensitive(hs);
	return r;
}
