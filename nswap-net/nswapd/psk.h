/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The pre-shared keys: a file of lines "<identity> <64 hex digits> [peer]",
 * '#' comments and blank lines allowed, readable by its owner only. An
 * identity marked "peer" may also connect with role PEER (another server
 * moving pages here). A key too weak to use (keycheck.h) is refused like a
 * malformed line. Keys never appear in messages.
 */
#ifndef NSWAPD_PSK_H
#define NSWAPD_PSK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../n2l-proto.h"

struct psk_entry {
	char identity[N2L_ID_LEN];	/* NUL-padded, as on the wire */
	uint8_t key[N2L_PSK_LEN];
	bool peer;
};

struct psk_table {
	struct psk_entry *e;
	size_t n;
};

/* Loads path into t (empty on failure); err gets "path:line: what". */
int psk_load(struct psk_table *t, const char *path, char *err, size_t errlen);
/* The entry of a NUL-padded wire identity, or NULL. */
const struct psk_entry *psk_find(const struct psk_table *t, const char identity[N2L_ID_LEN]);
/* Whether a wire identity is 1..N2L_ID_LEN printable bytes, NUL-padded. */
bool psk_identity_valid(const char identity[N2L_ID_LEN]);
void psk_free(struct psk_table *t);

#endif
