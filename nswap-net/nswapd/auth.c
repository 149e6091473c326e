// SPDX-License-Identifier: GPL-2.0-only
#include "auth.h"

#include <endian.h>
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

static void transcript(struct n2l_transcript *t, const char *label,
		       const struct auth_params *ap)
{
	memset(t, 0, sizeof(*t));
	memcpy(t->label, label, strnlen(label, sizeof(t->label)));
	memcpy(t->client_nonce, ap->client_nonce, N2L_NONCE_LEN);
	memcpy(t->server_nonce, ap->server_nonce, N2L_NONCE_LEN);
	t->role = htole32(ap->role);
	t->device = htole64(ap->device);
	memcpy(t->identity, ap->identity, N2L_ID_LEN);
}

static void hmac(const uint8_t *key, size_t keylen, const void *data, size_t len,
		 uint8_t out[N2L_MAC_LEN])
{
	unsigned int outlen = N2L_MAC_LEN;

	if (!HMAC(EVP_sha256(), key, (int)keylen, data, len, out, &outlen))
		memset(out, 0, N2L_MAC_LEN);	/* never matches a real proof */
}

void auth_proof(const uint8_t psk[N2L_PSK_LEN], const char *label,
		const struct auth_params *ap, uint8_t out[N2L_MAC_LEN])
{
	struct n2l_transcript t;

	transcript(&t, label, ap);
	hmac(psk, N2L_PSK_LEN, &t, sizeof(t), out);
}

void auth_session_keys(const uint8_t psk[N2L_PSK_LEN], const struct auth_params *ap,
		       uint8_t c2s[N2L_MAC_LEN], uint8_t s2c[N2L_MAC_LEN])
{
	uint8_t ks[N2L_MAC_LEN];

	auth_proof(psk, AUTH_LABEL_SESSION, ap, ks);
	hmac(ks, sizeof(ks), "n2l2-c2s", 8, c2s);
	hmac(ks, sizeof(ks), "n2l2-s2c", 8, s2c);
	OPENSSL_cleanse(ks, sizeof(ks));
}

void auth_bound_key(const uint8_t psk[N2L_PSK_LEN], const char *name,
		    uint8_t out[N2L_MAC_LEN])
{
	struct n2l_bound_name bn;

	memset(&bn, 0, sizeof(bn));
	memcpy(bn.label, AUTH_LABEL_BOUND, strlen(AUTH_LABEL_BOUND));
	memcpy(bn.name, name, strnlen(name, sizeof(bn.name)));
	hmac(psk, N2L_PSK_LEN, &bn, sizeof(bn), out);
}

bool auth_proof_equal(const uint8_t a[N2L_MAC_LEN], const uint8_t b[N2L_MAC_LEN])
{
	return CRYPTO_memcmp(a, b, N2L_MAC_LEN) == 0;
}

int auth_random(void *buf, size_t n)
{
	uint8_t *p = buf;

	while (n) {
		ssize_t r = getrandom(p, n, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

void auth_cleanse(void *p, size_t n)
{
	OPENSSL_cleanse(p, n);
}

void auth_short_hash(const void *data, size_t len, char out[9])
{
	static const char hex[] = "0123456789abcdef";
	uint8_t md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	if (!EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL))
		memset(md, 0, 4);
	for (int i = 0; i < 4; i++) {
		out[2 * i] = hex[md[i] >> 4];
		out[2 * i + 1] = hex[md[i] & 15];
	}
	out[8] = 0;
}

int tagger_init(struct tagger *t, const uint8_t key[N2L_MAC_LEN])
{
	EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();

	t->seq = 0;
	t->ctx = ctx;
	if (!ctx || EVP_EncryptInit_ex(ctx, EVP_chacha20_poly1305(), NULL, key, NULL) != 1) {
		tagger_free(t);
		return -1;
	}
	return 0;
}

static int frame_tag(struct tagger *t, const uint8_t *data, size_t len, uint8_t tag[N2L_TAG_LEN])
{
	EVP_CIPHER_CTX *ctx = t->ctx;
	uint8_t iv[12] = { 0 }, none[16];
	uint64_t seq = htole64(t->seq);
	int outl;

	memcpy(iv + 4, &seq, sizeof(seq));	/* 0^32 || seq */
	if (!ctx || EVP_EncryptInit_ex(ctx, NULL, NULL, NULL, iv) != 1)
		return -1;
	while (len) {
		int chunk = len > (1U << 30) ? 1 << 30 : (int)len;

		if (EVP_EncryptUpdate(ctx, NULL, &outl, data, chunk) != 1)
			return -1;
		data += chunk;
		len -= (size_t)chunk;
	}
	if (EVP_EncryptFinal_ex(ctx, none, &outl) != 1 ||
	    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_AEAD_GET_TAG, N2L_TAG_LEN, tag) != 1)
		return -1;
	return 0;
}

int tagger_tag(struct tagger *t, const uint8_t *data, size_t len, uint8_t tag[N2L_TAG_LEN])
{
	if (frame_tag(t, data, len, tag))
		return -1;
	t->seq++;
	return 0;
}

bool tagger_verify(struct tagger *t, const uint8_t *data, size_t len,
		   const uint8_t tag[N2L_TAG_LEN])
{
	uint8_t want[N2L_TAG_LEN];

	if (frame_tag(t, data, len, want) || CRYPTO_memcmp(want, tag, N2L_TAG_LEN))
		return false;
	t->seq++;
	return true;
}

void tagger_free(struct tagger *t)
{
	if (t->ctx)
		EVP_CIPHER_CTX_free(t->ctx);
	t->ctx = NULL;
}
