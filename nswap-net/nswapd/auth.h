/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The cryptography of n2l-proto.h's "Authentication": proofs and session
 * keys (HMAC-SHA256 over an n2l_transcript), frame tags (ChaCha20-Poly1305
 * with no plaintext, the frame as associated data, the sequence number as
 * nonce), nonces from getrandom. Everything from OpenSSL's libcrypto.
 */
#ifndef NSWAPD_AUTH_H
#define NSWAPD_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../n2l-proto.h"

#define AUTH_LABEL_SERVER	"n2l2-server"
#define AUTH_LABEL_CLIENT	"n2l2-client"
#define AUTH_LABEL_SESSION	"n2l2-session"
#define AUTH_LABEL_BOUND	"n2l2-server-key"

/* What a proof is computed over, besides the label. */
struct auth_params {
	uint8_t client_nonce[N2L_NONCE_LEN];
	uint8_t server_nonce[N2L_NONCE_LEN];
	uint32_t role;
	uint64_t device;
	char identity[N2L_ID_LEN];
};

/* HMAC(psk, transcript(label)). */
void auth_proof(const uint8_t psk[N2L_PSK_LEN], const char *label,
		const struct auth_params *ap, uint8_t out[N2L_MAC_LEN]);
/* Kc2s and Ks2c. */
void auth_session_keys(const uint8_t psk[N2L_PSK_LEN], const struct auth_params *ap,
		       uint8_t c2s[N2L_MAC_LEN], uint8_t s2c[N2L_MAC_LEN]);
/* Kb: psk bound to a server's canonical address (n2l-proto.h). */
void auth_bound_key(const uint8_t psk[N2L_PSK_LEN], const char *name,
		    uint8_t out[N2L_MAC_LEN]);
/* Constant time. */
bool auth_proof_equal(const uint8_t a[N2L_MAC_LEN], const uint8_t b[N2L_MAC_LEN]);
/* n random bytes from getrandom; -1 if there are none. */
int auth_random(void *buf, size_t n);
void auth_cleanse(void *p, size_t n);
/* "0123abcd": the first 8 hex digits of SHA-256(data). */
void auth_short_hash(const void *data, size_t len, char out[9]);

/* The tags of one direction of a connection. */
struct tagger {
	void *ctx;		/* EVP_CIPHER_CTX, keyed */
	uint64_t seq;		/* the next frame's sequence number */
};

int tagger_init(struct tagger *t, const uint8_t key[N2L_MAC_LEN]);
/* The tag of the next frame (data: header and payload); seq advances. */
int tagger_tag(struct tagger *t, const uint8_t *data, size_t len, uint8_t tag[N2L_TAG_LEN]);
/* Whether tag is the next frame's; seq advances only if it is. */
bool tagger_verify(struct tagger *t, const uint8_t *data, size_t len,
		   const uint8_t tag[N2L_TAG_LEN]);
void tagger_free(struct tagger *t);

#endif
