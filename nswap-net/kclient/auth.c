// SPDX-License-Identifier: GPL-2.0-only
/*
 * Authentication in the manner of NVMe/TCP's DH-HMAC-CHAP, without the
 * DH: client and server prove to each other that they hold the identity's
 * pre-shared key, over fresh nonces of both, so no secret crosses the wire
 * and no answer can be replayed; the session keys derived from the key
 * and both nonces then tag every frame (ChaCha20-Poly1305 with no
 * plaintext, the sequence number as nonce), so a frame forged, replayed,
 * reordered or dropped by anyone on the path ends the connection. The
 * exact transcript and labels are in n2l-proto.h.
 *
 * Crypto objects are made when a server is added, not per connection:
 * connecting must not wait for memory that swapping would free.
 */
#include <crypto/algapi.h>
#include <crypto/chacha.h>
#include <crypto/hash.h>
#include <crypto/poly1305.h>
#include <linux/bio.h>
#include <linux/highmem.h>
#include <linux/random.h>

#include "auth.h"

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

/*
 * Kb, the identity's key bound to this server's name (n2l-proto.h): made
 * once, since the name never changes.
 */
static int bound_key(struct n2l_nsrv *srv)
{
	struct n2l_bound_name bn = {};
	int r;

	strscpy(bn.label, "n2l2-server-key", sizeof(bn.label));
	strscpy(bn.name, srv->name, sizeof(bn.name));
	r = hmac(&srv->sess, srv->net->psk, &bn, sizeof(bn), srv->sess.bound_key);
	memzero_explicit(&bn, sizeof(bn));
	return r;
}

/* What one handshake keeps; made when the server is added. */
struct n2l_handshake {
	struct n2l_hello hello;
	struct n2l_hello_reply reply;
	struct n2l_transcript tr;
	u8 mac[N2L_MAC_LEN];
};

int n2l_session_init(struct n2l_nsrv *srv)
{
	struct n2l_session *s = &srv->sess;
	int r;

	/* Connecting must not wait for memory either. */
	srv->hs = kzalloc(sizeof(*srv->hs), GFP_KERNEL);
	if (!srv->hs)
		return -ENOMEM;
	if (!srv->net->secure)
		return 0;
	s->hmac = crypto_alloc_shash("hmac(sha256)", 0, 0);
	if (IS_ERR(s->hmac)) {
		r = PTR_ERR(s->hmac);
		s->hmac = NULL;
		return r;
	}
	return bound_key(srv);
}

void n2l_session_exit(struct n2l_nsrv *srv)
{
	struct n2l_session *s = &srv->sess;

	kfree_sensitive(srv->hs);
	srv->hs = NULL;
	memzero_explicit(&s->tx, sizeof(s->tx));
	memzero_explicit(&s->rx, sizeof(s->rx));
	memzero_explicit(s->bound_key, sizeof(s->bound_key));
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
/*
 * Tags: RFC 8439's AEAD with no plaintext, the frame's header and payload
 * its associated data, pages included, hashed where they lie. Computed
 * with the kernel's ChaCha20 and Poly1305 library (AVX2 where the CPU has
 * it), not through the crypto API: a frame's tag is a handful of calls,
 * where the rfc7539 template costs a request, a scatterlist walk and a
 * cipher and a hash transform per frame, most of a small frame's cost.
 * (GCM costs more still: x86's "gcm(aes)" copies all associated data into
 * one buffer it kmallocs per frame, and a gcm template instance over the
 * AES-NI drivers, named "gcm(aes)" itself, shadows the fast "gcm(aes)" for
 * every later user in the kernel, this device's seals and dm-crypt alike.)
 */

struct frame_mac {
	struct poly1305_desc_ctx poly;
	u64 len;		/* associated data so far */
};

static void mac_bytes(struct frame_mac *m, const void *p, size_t len)
{
	poly1305_update(&m->poly, p, len);
	m->len += len;
}

/* Poly1305 keyed by ChaCha20's first block under the nonce 0^32 || seq. */
static void mac_start(struct frame_mac *m, const struct n2l_session_dir *d)
{
	u32 state[CHACHA_STATE_WORDS];
	__le32 iv[4] = { 0, 0, cpu_to_le32(lower_32_bits(d->seq)),
			 cpu_to_le32(upper_32_bits(d->seq)) };
	u8 otk[POLY1305_KEY_SIZE] = {};

	chacha_init(state, d->key, (u8 *)iv);
	chacha20_crypt(state, otk, otk, sizeof(otk));
	poly1305_init(&m->poly, otk);
	m->len = 0;
	memzero_explicit(state, sizeof(state));
	memzero_explicit(otk, sizeof(otk));
}

static void mac_end(struct frame_mac *m, u8 *tag)
{
	static const u8 zeros[POLY1305_BLOCK_SIZE];
	__le64 lens[2] = { cpu_to_le64(m->len), 0 };	/* no plaintext */

	if (m->len % POLY1305_BLOCK_SIZE)
		poly1305_update(&m->poly, zeros,
				POLY1305_BLOCK_SIZE - m->len % POLY1305_BLOCK_SIZE);
	poly1305_update(&m->poly, (u8 *)lens, sizeof(lens));
	poly1305_final(&m->poly, tag);
}

/* The tag of @f under @d's key and sequence number. */
static void frame_tag(const struct n2l_session_dir *d,
		      const struct n2l_frame *f, u8 *tag)
{
	struct frame_mac m;
	struct bvec_iter it;
	struct bio_vec bv;
	void *v;

	mac_start(&m, d);
	mac_bytes(&m, f->hdr, sizeof(*f->hdr));
	mac_bytes(&m, f->pre, f->pre_len);
	if (f->bio)
		bio_for_each_segment(bv, f->bio, it) {
			v = kmap_local_page(bv.bv_page);
			mac_bytes(&m, v + bv.bv_offset, bv.bv_len);
			kunmap_local(v);
		}
	mac_bytes(&m, f->post, f->post_len);
	mac_end(&m, tag);
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
		frame_tag(&s->tx, f, tag);
		s->tx.seq++;
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
	u8 tag[N2L_TAG_LEN], want[N2L_TAG_LEN];
	int r;

	if (!s->tagged)
		return 0;
	r = n2l_wire_buf(sock, tag, sizeof(tag), false, false);
	if (r)
		return r;
	frame_tag(&s->rx, f, want);
	if (crypto_memneq(want, tag, N2L_TAG_LEN))
		return -EPROTO;
	s->rx.seq++;
	return 0;
}

/* Receives @len bytes into @buf, into the MAC @m too when given. */
static int recv_macced(struct socket *sock, void *buf, u32 len,
		       struct frame_mac *m)
{
	int r = n2l_wire_buf(sock, buf, len, false, false);

	if (!r && m)
		mac_bytes(m, buf, len);
	return r;
}

int n2l_frame_recv_skipping(struct n2l_nsrv *srv, struct socket *sock,
			    const struct n2l_frame *f, u32 skip, void *scratch,
			    u32 scratch_len)
{
	struct n2l_session *s = &srv->sess;
	u8 tag[N2L_TAG_LEN], want[N2L_TAG_LEN];
	struct frame_mac mac, *m = NULL;
	u32 n;
	int r;

	if (s->tagged) {
		m = &mac;
		mac_start(m, &s->rx);
		mac_bytes(m, f->hdr, sizeof(*f->hdr));
	}
	r = recv_macced(sock, (void *)f->pre, f->pre_len, m);
	for (; !r && skip; skip -= n) {
		n = min(skip, scratch_len);
		r = recv_macced(sock, scratch, n, m);
	}
	if (!r)
		r = recv_macced(sock, (void *)f->post, f->post_len, m);
	if (r || !m)
		return r;
	r = n2l_wire_buf(sock, tag, sizeof(tag), false, false);
	if (r)
		return r;
	mac_end(m, want);
	if (crypto_memneq(want, tag, N2L_TAG_LEN))
		return -EPROTO;
	s->rx.seq++;
	return 0;
}

/*----------------------------------------------------------------*/
/* The handshake. */

/* HMAC(@key, transcript(@label)) */
static int proof(struct n2l_nsrv *srv, struct n2l_handshake *hs,
		 const u8 *key, const char *label, u8 *out)
{
	memset(hs->tr.label, 0, sizeof(hs->tr.label));
	strscpy(hs->tr.label, label, sizeof(hs->tr.label));
	return hmac(&srv->sess, key, &hs->tr, sizeof(hs->tr), out);
}

/*
 * The key the server's proof Ps is made with: the one bound to its name,
 * or else the identity's own; NULL if neither, and it is not the server
 * we know.
 */
static const u8 *server_key(struct n2l_nsrv *srv, struct n2l_handshake *hs)
{
	const u8 *keys[] = { srv->sess.bound_key, srv->net->psk };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(keys); i++) {
		if (proof(srv, hs, keys[i], "n2l2-server", hs->mac))
			return NULL;
		if (!crypto_memneq(hs->mac, hs->reply.challenge.proof,
				   N2L_MAC_LEN)) {
			srv->sess.key_bound = !i;
			return keys[i];
		}
	}
	return NULL;
}

/* HMAC(Ks, @label): the label's bytes alone, no NUL (n2l-proto.h). */
static int set_dir_key(struct n2l_session *s, struct n2l_session_dir *d,
		       const u8 *ks, const char *label)
{
	__le32 key[CHACHA_KEY_SIZE / 4];
	unsigned int i;
	int r;

	BUILD_BUG_ON(sizeof(key) != N2L_MAC_LEN);
	r = hmac(s, ks, label, strlen(label), (u8 *)key);
	for (i = 0; !r && i < ARRAY_SIZE(key); i++)
		d->key[i] = le32_to_cpu(key[i]);
	memzero_explicit(key, sizeof(key));
	d->seq = 0;
	return r;
}

static int start_session(struct n2l_nsrv *srv, struct n2l_handshake *hs,
			 const u8 *key)
{
	struct n2l_session *s = &srv->sess;
	u8 ks[N2L_MAC_LEN];
	int r;

	r = proof(srv, hs, key, "n2l2-session", ks);
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
	const u8 *key;
	u32 len;
	int r;

	memcpy(hs->tr.server_nonce, hs->reply.challenge.nonce, N2L_NONCE_LEN);
	key = server_key(srv, hs);
	if (!key)
		return -EKEYREJECTED;
	r = proof(srv, hs, key, "n2l2-client", auth.proof);
	if (!r)
		r = send_hs(srv, sock, N2L_OP_AUTH, 2, &auth, sizeof(auth));
	if (!r)
		r = start_session(srv, hs, key);
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
	hs = srv->hs;
	memset(hs, 0, sizeof(*hs));
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
	memzero_explicit(hs, sizeof(*hs));
	return r;
}
