// SPDX-License-Identifier: GPL-2.0-only
/*
 * n2l-cryptobench: what Network RAM's security costs a 4 KiB page on this
 * CPU, with the algorithms the product uses, through OpenSSL:
 *
 *   psk-tag, psk-verify  a frame of one page (PUT, or GET's reply) tagged
 *                        as nswapd tags it (nswap-net/nswapd/auth.c):
 *                        ChaCha20-Poly1305 with no plaintext, the 48-byte
 *                        header, the page and its 16-byte seal as
 *                        associated data, nonce 0^32 || le64(sequence)
 *   gcm-seal, gcm-open   the page encrypted and authenticated as the kernel
 *                        client does with gcm(aes) (nswap-net/kclient/
 *                        seal.c): AES-256-GCM, IV le32(slot) || le64(vers),
 *                        (slot, vers) as associated data, a 16-byte tag
 *   chacha-seal, chacha-open  the same with ChaCha20-Poly1305, for reference
 *
 *   n2l-cryptobench [--quick] [--batches R] [--pages N]
 *   n2l-cryptobench --self-test
 *
 * Each operation runs in batches of N pages (default 2000), R batches
 * (default 15), the operations taking turns batch by batch so that a
 * slow spell of the machine hits all of them alike. A batch is timed
 * with the thread's CPU clock, which other processes on the machine do
 * not advance (though they may still slow this one through shared caches
 * or an SMT sibling). Prints JSON: per operation the median and minimum
 * ns a page over the batches, and the page bytes a core would process a
 * second at the median.
 *
 * --self-test checks each primitive against a published vector (RFC 8439
 * 2.8.2; GCM spec test case 16), the frame tag against one computed by
 * the protocol's Python implementation (userspace/pylib/n2lproto.py),
 * and that every open or verify refuses a flipped bit; exit 1 if any
 * check fails.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* htole64() and the like */
#endif
#include <endian.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "n2l-proto.h"

#define KEY_LEN		32
#define IV_LEN		12
#define AD_LEN		16	/* (slot, vers), as the kernel client's */
#define HDR_LEN		((unsigned int)sizeof(struct n2l_hdr))	/* 48 */
#define PAYLOAD_LEN	(N2L_PAGE_SIZE + N2L_SEAL_LEN)
#define FRAME_LEN	(HDR_LEN + PAYLOAD_LEN)		/* tag excluded */
/*
 * The pages cycled through: few enough (256 KiB) to stay in L2, so that
 * what is timed is the cipher's work, not the memory traffic that moving
 * the page costs with or without security.
 */
#define POOL		64
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

struct aead {
	EVP_CIPHER_CTX *enc, *dec;	/* keyed once: a page sets only its IV */
};

struct bench {
	struct aead psk, gcm, chacha;
	uint64_t tx_seq;		/* psk-tag: the next frame's number */
	uint64_t vers;			/* *-seal: never twice, as in the client */
	uint8_t frames[POOL][FRAME_LEN];
	uint8_t frame_tags[POOL][N2L_TAG_LEN];	/* frame i tagged as number i */
	uint8_t pages[POOL][N2L_PAGE_SIZE];
	uint8_t gcm_ct[POOL][N2L_PAGE_SIZE];	/* page i sealed as (i, i) */
	uint8_t gcm_tags[POOL][N2L_SEAL_LEN];
	uint8_t chacha_ct[POOL][N2L_PAGE_SIZE];
	uint8_t chacha_tags[POOL][N2L_SEAL_LEN];
	uint8_t out[N2L_PAGE_SIZE];
	uint8_t tag[N2L_SEAL_LEN];
};

/*----------------------------------------------------------------*/
/* The primitives, as the product calls them. */

static void aead_free(struct aead *a)
{
	EVP_CIPHER_CTX_free(a->enc);
	EVP_CIPHER_CTX_free(a->dec);
	a->enc = a->dec = NULL;
}

static int aead_init(struct aead *a, const EVP_CIPHER *cipher, const uint8_t key[KEY_LEN])
{
	a->enc = EVP_CIPHER_CTX_new();
	a->dec = EVP_CIPHER_CTX_new();
	if (!a->enc || !a->dec ||
	    EVP_EncryptInit_ex(a->enc, cipher, NULL, key, NULL) != 1 ||
	    EVP_DecryptInit_ex(a->dec, cipher, NULL, key, NULL) != 1) {
		aead_free(a);
		return -1;
	}
	return 0;
}

/* @len bytes of @in encrypted to @out (none if @len is 0), and the tag. */
static int aead_seal(struct aead *a, const uint8_t iv[IV_LEN], const uint8_t *ad,
		     size_t adlen, const uint8_t *in, size_t len, uint8_t *out,
		     uint8_t tag[16])
{
	uint8_t none[16];
	int outl;

	if (EVP_EncryptInit_ex(a->enc, NULL, NULL, NULL, iv) != 1 ||
	    EVP_EncryptUpdate(a->enc, NULL, &outl, ad, (int)adlen) != 1 ||
	    (len && EVP_EncryptUpdate(a->enc, out, &outl, in, (int)len) != 1) ||
	    EVP_EncryptFinal_ex(a->enc, len ? out + outl : none, &outl) != 1 ||
	    EVP_CIPHER_CTX_ctrl(a->enc, EVP_CTRL_AEAD_GET_TAG, 16, tag) != 1)
		return -1;
	return 0;
}

/* @in decrypted to @out if @tag verifies; -1 if it does not. */
static int aead_open(struct aead *a, const uint8_t iv[IV_LEN], const uint8_t *ad,
		     size_t adlen, const uint8_t *in, size_t len, uint8_t *out,
		     const uint8_t tag[16])
{
	uint8_t t[16];
	int outl;

	memcpy(t, tag, sizeof(t));	/* the ctrl takes a non-const pointer */
	if (EVP_DecryptInit_ex(a->dec, NULL, NULL, NULL, iv) != 1 ||
	    EVP_DecryptUpdate(a->dec, NULL, &outl, ad, (int)adlen) != 1 ||
	    EVP_DecryptUpdate(a->dec, out, &outl, in, (int)len) != 1 ||
	    EVP_CIPHER_CTX_ctrl(a->dec, EVP_CTRL_AEAD_SET_TAG, 16, t) != 1 ||
	    EVP_DecryptFinal_ex(a->dec, out + outl, &outl) <= 0)
		return -1;
	return 0;
}

/* A frame's tag as nswapd's frame_tag() computes it. */
static int frame_tag(struct aead *a, uint64_t seq, const uint8_t *frame, size_t len,
		     uint8_t tag[N2L_TAG_LEN])
{
	uint8_t iv[IV_LEN] = { 0 };
	uint64_t le = htole64(seq);

	memcpy(iv + 4, &le, sizeof(le));	/* 0^32 || seq */
	return aead_seal(a, iv, frame, len, NULL, 0, NULL, tag);
}

/* As tagger_verify(): recompute, compare in constant time. */
static int frame_verify(struct aead *a, uint64_t seq, const uint8_t *frame, size_t len,
			const uint8_t tag[N2L_TAG_LEN])
{
	uint8_t want[N2L_TAG_LEN];

	if (frame_tag(a, seq, frame, len, want) || CRYPTO_memcmp(want, tag, N2L_TAG_LEN))
		return -1;
	return 0;
}

/* The kernel client's IV and associated data of a page (seal.c, ctx_run). */
static void page_iv_ad(uint64_t slot, uint64_t vers, uint8_t iv[IV_LEN], uint8_t ad[AD_LEN])
{
	uint32_t k32 = htole32((uint32_t)slot);
	uint64_t s64 = htole64(slot), v64 = htole64(vers);

	memcpy(iv, &k32, 4);
	memcpy(iv + 4, &v64, 8);
	memcpy(ad, &s64, 8);
	memcpy(ad + 8, &v64, 8);
}

static int page_seal(struct aead *a, uint64_t slot, uint64_t vers, const uint8_t *page,
		     uint8_t *ct, uint8_t tag[N2L_SEAL_LEN])
{
	uint8_t iv[IV_LEN], ad[AD_LEN];

	page_iv_ad(slot, vers, iv, ad);
	return aead_seal(a, iv, ad, AD_LEN, page, N2L_PAGE_SIZE, ct, tag);
}

static int page_open(struct aead *a, uint64_t slot, uint64_t vers, const uint8_t *ct,
		     uint8_t *page, const uint8_t tag[N2L_SEAL_LEN])
{
	uint8_t iv[IV_LEN], ad[AD_LEN];

	page_iv_ad(slot, vers, iv, ad);
	return aead_open(a, iv, ad, AD_LEN, ct, N2L_PAGE_SIZE, page, tag);
}

/*----------------------------------------------------------------*/
/* Setup: keys, frames, and what the open and verify operations check. */

static void fill_key(uint8_t key[KEY_LEN], uint8_t first)
{
	for (int i = 0; i < KEY_LEN; i++)
		key[i] = (uint8_t)(first + i);
}

/* A PUT of one page: header, page, seal; byte i of the payload (i*7+1). */
static void fill_frame(uint8_t frame[FRAME_LEN], uint64_t slot, uint64_t vers)
{
	struct n2l_hdr h = {
		.magic = htole32(N2L_MAGIC), .version = N2L_PROTO_VERSION,
		.opcode = N2L_OP_PUT, .id = htole64(1), .key = htole64(slot),
		.vers = htole64(vers), .count = htole32(1), .len = htole32(PAYLOAD_LEN),
	};

	memcpy(frame, &h, sizeof(h));
	for (size_t i = 0; i < PAYLOAD_LEN; i++)
		frame[HDR_LEN + i] = (uint8_t)(i * 7 + 1);
}

static void bench_free(struct bench *b)
{
	aead_free(&b->psk);
	aead_free(&b->gcm);
	aead_free(&b->chacha);
	free(b);
}

static struct bench *bench_new(void)
{
	struct bench *b = calloc(1, sizeof(*b));
	uint8_t key[KEY_LEN];

	if (!b)
		return NULL;
	fill_key(key, 0x40);
	if (aead_init(&b->psk, EVP_chacha20_poly1305(), key))
		goto fail;
	fill_key(key, 0x60);
	if (aead_init(&b->gcm, EVP_aes_256_gcm(), key) ||
	    aead_init(&b->chacha, EVP_chacha20_poly1305(), key))
		goto fail;
	for (unsigned int i = 0; i < POOL; i++) {
		fill_frame(b->frames[i], 7 + i, 9 + i);
		/* all different: a page opened as another's is caught */
		for (unsigned int j = 0; j < N2L_PAGE_SIZE; j++)
			b->pages[i][j] = (uint8_t)(i * 131 + j * 29 + (j >> 8));
		if (frame_tag(&b->psk, i, b->frames[i], FRAME_LEN, b->frame_tags[i]) ||
		    page_seal(&b->gcm, i, i, b->pages[i], b->gcm_ct[i], b->gcm_tags[i]) ||
		    page_seal(&b->chacha, i, i, b->pages[i], b->chacha_ct[i], b->chacha_tags[i]))
			goto fail;
	}
	/* seals never reuse an IV of the pool's, as the client never does */
	b->vers = POOL;
	return b;
fail:
	bench_free(b);
	return NULL;
}

/*----------------------------------------------------------------*/
/* The operations timed: one page each, @i the pool's page. */

static int op_psk_tag(struct bench *b, unsigned int i)
{
	return frame_tag(&b->psk, b->tx_seq++, b->frames[i], FRAME_LEN, b->tag);
}

static int op_psk_verify(struct bench *b, unsigned int i)
{
	return frame_verify(&b->psk, i, b->frames[i], FRAME_LEN, b->frame_tags[i]);
}

static int op_gcm_seal(struct bench *b, unsigned int i)
{
	return page_seal(&b->gcm, i, b->vers++, b->pages[i], b->out, b->tag);
}

static int op_gcm_open(struct bench *b, unsigned int i)
{
	/* out of place: the ciphertext must survive for the next batch */
	return page_open(&b->gcm, i, i, b->gcm_ct[i], b->out, b->gcm_tags[i]);
}

static int op_chacha_seal(struct bench *b, unsigned int i)
{
	return page_seal(&b->chacha, i, b->vers++, b->pages[i], b->out, b->tag);
}

static int op_chacha_open(struct bench *b, unsigned int i)
{
	return page_open(&b->chacha, i, i, b->chacha_ct[i], b->out, b->chacha_tags[i]);
}

struct op {
	const char *name, *algorithm, *what;
	unsigned int bytes;		/* the cipher's input a page */
	int (*run)(struct bench *b, unsigned int i);
};

static const struct op OPS[] = {
	{ "psk-tag", "ChaCha20-Poly1305", "tag a one-page frame (AD only)",
	  FRAME_LEN, op_psk_tag },
	{ "psk-verify", "ChaCha20-Poly1305", "verify a one-page frame's tag",
	  FRAME_LEN, op_psk_verify },
	{ "gcm-seal", "AES-256-GCM", "encrypt + tag a page",
	  AD_LEN + N2L_PAGE_SIZE, op_gcm_seal },
	{ "gcm-open", "AES-256-GCM", "decrypt + verify a page",
	  AD_LEN + N2L_PAGE_SIZE, op_gcm_open },
	{ "chacha-seal", "ChaCha20-Poly1305", "encrypt + tag a page (reference)",
	  AD_LEN + N2L_PAGE_SIZE, op_chacha_seal },
	{ "chacha-open", "ChaCha20-Poly1305", "decrypt + verify a page (reference)",
	  AD_LEN + N2L_PAGE_SIZE, op_chacha_open },
};
#define NOPS ARRAY_SIZE(OPS)

/*----------------------------------------------------------------*/
/* Timing. */

static double cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* ns of this thread's CPU time a page, over @pages pages; < 0 on failure. */
static double time_batch(struct bench *b, const struct op *op, unsigned int pages)
{
	double t0 = cpu_ns();

	for (unsigned int n = 0; n < pages; n++)
		if (op->run(b, n % POOL))
			return -1;
	return (cpu_ns() - t0) / pages;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(const double *v, unsigned int n)
{
	double *s = malloc(n * sizeof(*s)), m;

	if (!s)
		return -1;
	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_double);
	m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	free(s);
	return m;
}

static double minimum(const double *v, unsigned int n)
{
	double m = v[0];

	for (unsigned int i = 1; i < n; i++)
		m = v[i] < m ? v[i] : m;
	return m;
}

/*----------------------------------------------------------------*/
/* The machine, for the record. */

/* The value of the first "@field" line of /proc/cpuinfo into @out. */
static bool cpuinfo_field(const char *field, char *out, size_t size)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[8192];
	size_t flen = strlen(field);
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (strncmp(line, field, flen) || !colon ||
		    strspn(line + flen, " \t") != (size_t)(colon - line) - flen)
			continue;
		colon += 1 + strspn(colon + 1, " \t");
		colon[strcspn(colon, "\n")] = 0;
		snprintf(out, size, "%s", colon);
		found = true;
	}
	fclose(f);
	return found;
}

static bool has_word(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; (p = strstr(p, word)); p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0))
			return true;
	return false;
}

static void json_string(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", (unsigned char)*s);
		else
			putchar(*s);
	}
	putchar('"');
}

static void print_machine(void)
{
	/*
	 * What AES-GCM's speed hangs on: AES-NI, carry-less multiply, and
	 * the vector widths OpenSSL picks its code paths by.
	 */
	static const char *const flags[] = {
		"aes", "pclmulqdq", "avx", "avx2", "avx512f", "vaes", "vpclmulqdq",
	};
	char model[256] = "unknown", *list = malloc(8192);
	const char *cap = getenv("OPENSSL_ia32cap");

	if (list && !cpuinfo_field("flags", list, 8192))
		list[0] = 0;
	cpuinfo_field("model name", model, sizeof(model));
	printf(" \"cpu\": ");
	json_string(model);
	printf(",\n \"cpu_flags\": {");
	for (size_t i = 0; i < ARRAY_SIZE(flags); i++)
		printf("%s\"%s\": %s", i ? ", " : "", flags[i],
		       list && has_word(list, flags[i]) ? "true" : "false");
	printf("},\n \"openssl\": ");
	json_string(OpenSSL_version(OPENSSL_VERSION));
	/* a mask in the environment would switch off what the flags say */
	printf(",\n \"openssl_ia32cap\": ");
	if (cap)
		json_string(cap);
	else
		printf("null");
	printf(",\n");
	free(list);
}

/*----------------------------------------------------------------*/
/* The benchmark. */

static int run_bench(unsigned int batches, unsigned int pages)
{
	struct bench *b = bench_new();
	double *ns = calloc((size_t)batches * NOPS, sizeof(*ns));
	int rc = 1;

	if (!b || !ns) {
		fprintf(stderr, "n2l-cryptobench: setup failed\n");
		goto out;
	}
	/*
	 * A batch of each first, not counted: first touches, lazy setup in
	 * OpenSSL, the clock speed ramping up.
	 */
	for (unsigned int o = 0; o < NOPS; o++)
		if (time_batch(b, &OPS[o], pages) < 0)
			goto failed;
	for (unsigned int r = 0; r < batches; r++)
		for (unsigned int o = 0; o < NOPS; o++) {
			ns[o * batches + r] = time_batch(b, &OPS[o], pages);
			if (ns[o * batches + r] < 0)
				goto failed;
		}

	printf("{\n \"tool\": \"n2l-cryptobench\",\n");
	print_machine();
	printf(" \"clock\": \"CLOCK_THREAD_CPUTIME_ID\",\n \"page_bytes\": %u,\n"
	       " \"pages_per_batch\": %u,\n \"batches\": %u,\n \"pool_pages\": %u,\n"
	       " \"ops\": [\n", N2L_PAGE_SIZE, pages, batches, POOL);
	for (unsigned int o = 0; o < NOPS; o++) {
		const double *v = ns + (size_t)o * batches;
		double med = median(v, batches);

		printf("  {\"name\": \"%s\", \"algorithm\": \"%s\", \"what\": \"%s\", "
		       "\"bytes\": %u, \"median_ns\": %.1f, \"min_ns\": %.1f, "
		       "\"gb_s_per_core\": %.3f, \"batches_ns\": [",
		       OPS[o].name, OPS[o].algorithm, OPS[o].what, OPS[o].bytes, med,
		       minimum(v, batches), N2L_PAGE_SIZE / med);
		for (unsigned int r = 0; r < batches; r++)
			printf("%s%.1f", r ? ", " : "", v[r]);
		printf("]}%s\n", o + 1 < NOPS ? "," : "");
	}
	printf(" ]\n}\n");
	rc = 0;
	goto out;
failed:
	fprintf(stderr, "n2l-cryptobench: an operation failed (a tag did not verify?)\n");
out:
	free(ns);
	if (b)
		bench_free(b);
	return rc;
}

/*----------------------------------------------------------------*/
/* Self-test. */

static int checks_failed, checks_run;

static void check(const char *name, bool ok)
{
	printf("%s  {\"check\": \"%s\", \"ok\": %s}", checks_run ? ",\n" : "", name,
	       ok ? "true" : "false");
	checks_run++;
	checks_failed += !ok;
}

/* Whether @hex is exactly @len bytes of hex digits, put in @out. */
static bool unhex(const char *hex, uint8_t *out, size_t len)
{
	if (strlen(hex) != 2 * len || strspn(hex, "0123456789abcdef") != 2 * len)
		return false;
	for (size_t i = 0; i < len; i++)
		if (sscanf(hex + 2 * i, "%2hhx", &out[i]) != 1)
			return false;
	return true;
}

static void print_hex(const uint8_t *p, size_t len)
{
	putchar('"');
	for (size_t i = 0; i < len; i++)
		printf("%02x", p[i]);
	putchar('"');
}

/*
 * A published vector: seal matches it, open recovers the plaintext and
 * refuses a flipped bit in the ciphertext, the tag and the AD.
 */
struct vector {
	const char *name;
	const EVP_CIPHER *(*cipher)(void);
	const char *key, *iv, *ad, *pt, *ct, *tag;
};

static void check_vector(const struct vector *v)
{
	size_t adlen = strlen(v->ad) / 2, len = strlen(v->pt) / 2;
	uint8_t key[KEY_LEN], iv[IV_LEN], ad[64], pt[128], ct[128], tag[16];
	uint8_t got_ct[128], got_pt[128], got_tag[16];
	struct aead a;
	char name[96];
	bool sealed;

	/* a vector that does not fit, or a typo in it, fails: never passes */
	if (adlen > sizeof(ad) || len > sizeof(pt) ||
	    !unhex(v->key, key, KEY_LEN) || !unhex(v->iv, iv, IV_LEN) ||
	    !unhex(v->ad, ad, adlen) || !unhex(v->pt, pt, len) ||
	    !unhex(v->ct, ct, len) || !unhex(v->tag, tag, 16) ||
	    aead_init(&a, v->cipher(), key)) {
		snprintf(name, sizeof(name), "%s: read and set up", v->name);
		check(name, false);
		return;
	}
	sealed = !aead_seal(&a, iv, ad, adlen, pt, len, got_ct, got_tag);
	snprintf(name, sizeof(name), "%s: seal", v->name);
	check(name, sealed && !memcmp(got_ct, ct, len) && !memcmp(got_tag, tag, 16));
	snprintf(name, sizeof(name), "%s: open", v->name);
	check(name, !aead_open(&a, iv, ad, adlen, ct, len, got_pt, tag) &&
		    !memcmp(got_pt, pt, len));
	ct[len / 2] ^= 0x01;
	snprintf(name, sizeof(name), "%s: open refuses a flipped ciphertext bit", v->name);
	check(name, aead_open(&a, iv, ad, adlen, ct, len, got_pt, tag) != 0);
	ct[len / 2] ^= 0x01;
	tag[15] ^= 0x80;
	snprintf(name, sizeof(name), "%s: open refuses a flipped tag bit", v->name);
	check(name, aead_open(&a, iv, ad, adlen, ct, len, got_pt, tag) != 0);
	tag[15] ^= 0x80;
	ad[0] ^= 0x04;
	snprintf(name, sizeof(name), "%s: open refuses a flipped AD bit", v->name);
	check(name, aead_open(&a, iv, ad, adlen, ct, len, got_pt, tag) != 0);
	aead_free(&a);
}

static const struct vector VECTORS[] = {
	{	/* RFC 8439 2.8.2 */
		"ChaCha20-Poly1305 RFC 8439 2.8.2", EVP_chacha20_poly1305,
		"808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f",
		"070000004041424344454647", "50515253c0c1c2c3c4c5c6c7",
		"4c616469657320616e642047656e746c656d656e206f662074686520636c6173"
		"73206f66202739393a204966204920636f756c64206f6666657220796f75206f"
		"6e6c79206f6e652074697020666f7220746865206675747572652c2073756e73"
		"637265656e20776f756c642062652069742e",
		"d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d6"
		"3dbea45e8ca9671282fafb69da92728b1a71de0a9e060b2905d6a5b67ecd3b36"
		"92ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc"
		"3ff4def08e4b7a9de576d26586cec64b6116",
		"1ae10b594f09e26a7e902ecbd0600691",
	},
	{	/* McGrew and Viega, The Galois/Counter Mode of Operation, test case 16 */
		"AES-256-GCM test case 16", EVP_aes_256_gcm,
		"feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
		"cafebabefacedbaddecaf888", "feedfacedeadbeeffeedfacedeadbeefabaddad2",
		"d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
		"1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
		"522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
		"8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
		"76fc6ece0f4e1768cddf8853bb2d551b",
	},
};

/*
 * No published vector tags associated data alone; this one is the
 * protocol's own: frame 0 of the pool tagged as number 5 under key
 * 0x40..0x5f, as userspace/pylib/n2lproto.py's Tagger computes it
 * (tests/bench/test_crypto.py recomputes it from the JSON's sample).
 */
#define PSK_SAMPLE_SEQ	5
#define PSK_SAMPLE_TAG	"a73894d3e6650c55015a1674e337e819"

static void check_frame_tags(struct bench *b, uint8_t tag[N2L_TAG_LEN])
{
	uint8_t *f = b->frames[0], want[N2L_TAG_LEN];
	bool tagged = !frame_tag(&b->psk, PSK_SAMPLE_SEQ, f, FRAME_LEN, tag);

	check("psk: frame tag as n2lproto.Tagger's",
	      tagged && unhex(PSK_SAMPLE_TAG, want, sizeof(want)) &&
	      !memcmp(tag, want, sizeof(want)));
	check("psk: verify accepts it", !frame_verify(&b->psk, PSK_SAMPLE_SEQ, f, FRAME_LEN, tag));
	check("psk: verify refuses another sequence number (replay)",
	      frame_verify(&b->psk, PSK_SAMPLE_SEQ + 1, f, FRAME_LEN, tag) != 0);
	f[20] ^= 0x01;		/* the header's slot */
	check("psk: verify refuses a flipped header bit",
	      frame_verify(&b->psk, PSK_SAMPLE_SEQ, f, FRAME_LEN, tag) != 0);
	f[20] ^= 0x01;
	f[FRAME_LEN - 1] ^= 0x40;	/* the seal's last byte */
	check("psk: verify refuses a flipped payload bit",
	      frame_verify(&b->psk, PSK_SAMPLE_SEQ, f, FRAME_LEN, tag) != 0);
	f[FRAME_LEN - 1] ^= 0x40;
	tag[0] ^= 0x01;
	check("psk: verify refuses a flipped tag bit",
	      frame_verify(&b->psk, PSK_SAMPLE_SEQ, f, FRAME_LEN, tag) != 0);
	tag[0] ^= 0x01;
}

/*
 * What a test needs to recompute the sample's tag on its own: the key,
 * the number, the header (the payload is byte i = i * 7 + 1) and the tag
 * computed here, not the one expected.
 */
static void print_psk_sample(const struct bench *b, const uint8_t tag[N2L_TAG_LEN])
{
	uint8_t key[KEY_LEN];

	fill_key(key, 0x40);
	printf(" \"psk_sample\": {\"key\": ");
	print_hex(key, KEY_LEN);
	printf(", \"seq\": %d, \"header\": ", PSK_SAMPLE_SEQ);
	print_hex(b->frames[0], HDR_LEN);
	printf(", \"payload\": \"byte i = (i * 7 + 1) mod 256, %u bytes\", \"tag\": ",
	       PAYLOAD_LEN);
	print_hex(tag, N2L_TAG_LEN);
	printf("},\n");
}

/* The pages the benchmark seals open as they were, and not once altered. */
static void check_pages(struct bench *b, struct aead *a, const char *name,
			uint8_t (*ct)[N2L_PAGE_SIZE], uint8_t (*tags)[N2L_SEAL_LEN])
{
	char what[96];
	bool ok = true;

	snprintf(what, sizeof(what), "%s: every pool page opens as sealed", name);
	for (unsigned int i = 0; i < POOL; i++)
		ok &= !page_open(a, i, i, ct[i], b->out, tags[i]) &&
		      !memcmp(b->out, b->pages[i], N2L_PAGE_SIZE);
	check(what, ok);
	snprintf(what, sizeof(what), "%s: a page refuses another version", name);
	check(what, page_open(a, 3, 4, ct[3], b->out, tags[3]) != 0);
	ct[3][4095] ^= 0x01;
	snprintf(what, sizeof(what), "%s: a page refuses a flipped bit", name);
	check(what, page_open(a, 3, 3, ct[3], b->out, tags[3]) != 0);
	ct[3][4095] ^= 0x01;
}

static int self_test(void)
{
	struct bench *b = bench_new();
	uint8_t tag[N2L_TAG_LEN];

	if (!b) {
		fprintf(stderr, "n2l-cryptobench: setup failed\n");
		return 1;
	}
	printf("{\n \"tool\": \"n2l-cryptobench\",\n");
	print_machine();
	printf(" \"checks\": [\n");
	for (size_t i = 0; i < ARRAY_SIZE(VECTORS); i++)
		check_vector(&VECTORS[i]);
	check_frame_tags(b, tag);
	check_pages(b, &b->gcm, "AES-256-GCM", b->gcm_ct, b->gcm_tags);
	check_pages(b, &b->chacha, "ChaCha20-Poly1305", b->chacha_ct, b->chacha_tags);
	printf("\n ],\n");
	print_psk_sample(b, tag);
	printf(" \"passed\": %d,\n \"failed\": %d\n}\n", checks_run - checks_failed,
	       checks_failed);
	bench_free(b);
	return checks_failed ? 1 : 0;
}

/*----------------------------------------------------------------*/

static int usage(void)
{
	fprintf(stderr, "usage: n2l-cryptobench [--quick] [--batches R] [--pages N] | --self-test\n");
	return 2;
}

static bool parse_count(const char *s, unsigned int *out)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);

	if (!*s || *end || v < 1 || v > 1000000)
		return false;
	*out = (unsigned int)v;
	return true;
}

int main(int argc, char **argv)
{
	unsigned int batches = 15, pages = 2000;

	if (argc == 2 && !strcmp(argv[1], "--self-test"))
		return self_test();
	for (int i = 1; i < argc; i++) {
		bool more = i + 1 < argc;

		if (!strcmp(argv[i], "--quick")) {
			batches = 3;
			pages = 200;
		} else if (!strcmp(argv[i], "--batches") && more) {
			if (!parse_count(argv[++i], &batches))
				return usage();
		} else if (!strcmp(argv[i], "--pages") && more) {
			if (!parse_count(argv[++i], &pages))
				return usage();
		} else {
			return usage();
		}
	}
	return run_bench(batches, pages);
}
