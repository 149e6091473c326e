// SPDX-License-Identifier: GPL-2.0-only
/*
 * Identities and the pages charged to them, against the quota: a
 * client's own pages, and the unclaimed pages a peer server sent, which
 * are the peer's until their client claims them (else a peer could fill
 * a client's quota with pages the client never asked for). An identity's
 * record lives while it has areas or pages charged.
 */
#include "store.h"

#include <stdlib.h>
#include <string.h>

struct ident *ident_get(struct store *st, const char name[N2L_ID_LEN])
{
	struct ident *id;

	for (id = st->idents; id; id = id->next)
		if (!memcmp(id->name, name, N2L_ID_LEN))
			return id;
	id = calloc(1, sizeof(*id));
	if (!id)
		return NULL;
	memcpy(id->name, name, N2L_ID_LEN);
	id->next = st->idents;
	if (st->idents)
		st->idents->prev = id;
	st->idents = id;
	return id;
}

void ident_maybe_free(struct store *st, struct ident *id)
{
	if (id->nareas || id->held)
		return;
	if (id->prev)
		id->prev->next = id->next;
	else
		st->idents = id->next;
	if (id->next)
		id->next->prev = id->prev;
	free(id);
}

uint64_t ident_quota_left(const struct store *st, const struct ident *id)
{
	if (!st->quota)
		return UINT64_MAX;
	return id->held < st->quota ? st->quota - id->held : 0;
}

void ident_charge(struct store *st, struct entry *e, struct ident *to)
{
	struct ident *from = e->payer;

	if (from == to)
		return;
	to->held++;
	e->payer = to;
	if (from) {
		from->held--;
		ident_maybe_free(st, from);
	}
}
