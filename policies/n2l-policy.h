/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What a policy author implements. A policy only decides; the target does
 * every I/O. Policies are registered by name, per kind, and looked up when
 * a table line or a message names them; "default" names the kind's default.
 *
 * Every callback is called with the target's lock held and must not block
 * or allocate, unless its comment says otherwise.
 */
#ifndef N2L_POLICY_H
#define N2L_POLICY_H

#include "n2l-types.h"

enum n2l_policy_kind {
	N2L_POLICY_PLACEMENT,
	N2L_POLICY_PREFETCH,
};

/* What the registry knows of every policy, whatever its kind. */
struct n2l_policy_type {
	struct list_head list;
	const char *name;
	unsigned int version[3];
	enum n2l_policy_kind kind;
	struct module *owner;
};

int n2l_policy_register(struct n2l_policy_type *t);
void n2l_policy_unregister(struct n2l_policy_type *t);
/* Takes a reference on the owner; NULL if no such policy. May sleep. */
struct n2l_policy_type *n2l_policy_get(enum n2l_policy_kind kind,
				       const char *name);
void n2l_policy_put(struct n2l_policy_type *t);
/* Names of the registered policies of @kind, space separated, sorted. */
int n2l_policy_names(enum n2l_policy_kind kind, const char *selected,
		     char *buf, size_t len);

/*----------------------------------------------------------------*/

/* What a placement policy sees of one write. */
struct n2l_place_ctx {
	enum n2l_medium now;	/* where the slot is now, or N2L_NONE */
	u32 free[N2L_NR_MEDIA];		/* free blocks; 0 if full or absent */
};

struct n2l_placement;

struct n2l_placement_type {
	struct n2l_policy_type base;

	/* May sleep. Returns NULL on allocation failure. */
	struct n2l_placement *(*create)(void);
	void (*destroy)(struct n2l_placement *p);

	/*
	 * Optional. A key/value pair from the table line or a message.
	 * -EINVAL for an unknown key or a bad value.
	 */
	int (*set_config)(struct n2l_placement *p, const char *key,
			  const char *value);

	/*
	 * Optional. Print the current configuration as "<#args> <k> <v>..."
	 * so that it recreates the policy; nothing printed means "0".
	 */
	int (*emit_config)(struct n2l_placement *p, char *buf, size_t len);

	/*
	 * The medium the write goes to. Returning the slot's current medium
	 * means "overwrite where it is", which needs no free block; any
	 * other medium must have free blocks. N2L_NONE: nowhere to go.
	 */
	enum n2l_medium (*place)(struct n2l_placement *p,
				 const struct n2l_place_ctx *ctx);
};

struct n2l_placement {
	struct n2l_placement_type *type;
};

static inline struct n2l_placement_type *
to_placement_type(struct n2l_policy_type *t)
{
	return container_of(t, struct n2l_placement_type, base);
}

/*----------------------------------------------------------------*/

/*
 * A prefetch policy picks the slots on Network RAM that the migration
 * engine moves to Flash. It learns where slots are from the on_*()
 * events and keeps its own bookkeeping, in O(1) or O(log n) per event and
 * memory bounded by the number of slots of the device. The target does
 * the moving; a slot it moves, or finds changed, is reported through the
 * same events.
 *
 * The candidates are the slots whose last event was on_write() with
 * N2L_NETRAM: a slot leaves them with on_write() to another medium or
 * with on_free().
 */
struct n2l_prefetch;

/*
 * What the migration engine measured since its last activation, for a
 * policy that decides how many slots move (plan()). Latencies are of
 * foreground reads that completed meanwhile, from map to completion.
 */
struct n2l_pf_view {
	u64 swapouts;			/* slots written since then */
	u64 knob_amount;		/* what the amount knobs would ask */
	u32 slots;			/* of the device */
	u32 held[N2L_NR_MEDIA];		/* slots each medium holds now */
	u32 free[N2L_NR_MEDIA];		/* free slots now: Network RAM, Flash */
	u64 prefetched;			/* slots the engine moved since then */
	u64 prefetch_reads;		/* reads of prefetched slots since then */
	u64 reads[N2L_NR_MEDIA];	/* foreground reads completed since then */
	u64 read_us[N2L_NR_MEDIA];	/* their latencies, summed */
	u32 reads_inflight[N2L_NR_MEDIA];	/* foreground reads now */
	u32 cpu_idle_pm;		/* of CPU time idle or in iowait */
};

struct n2l_prefetch_type {
	struct n2l_policy_type base;

	/* May sleep. @nr_slots: slots of the device. NULL on failure. */
	struct n2l_prefetch *(*create)(u32 nr_slots);
	void (*destroy)(struct n2l_prefetch *p);

	/* A write of @slot (a swap-out) landed on @m. */
	void (*on_write)(struct n2l_prefetch *p, n2l_slot_t slot,
			 enum n2l_medium m);

	/* Optional. A read of @slot was served from @m. */
	void (*on_read)(struct n2l_prefetch *p, n2l_slot_t slot,
			enum n2l_medium m);

	/*
	 * @slot left its medium without a write: discarded, moved to Flash
	 * by the engine, or handed back by a server and placed elsewhere.
	 */
	void (*on_free)(struct n2l_prefetch *p, n2l_slot_t slot);

	/*
	 * Up to @n candidates to move, best first, into @victims; returns
	 * how many. Selecting does not remove a slot: the engine takes the
	 * ones it moves out with on_free() at once, so that the next
	 * selection names others while they move. A slot the engine could
	 * not move is reported with on_write(..., N2L_NETRAM) again, so that
	 * it does not come back at once.
	 */
	u32 (*select)(struct n2l_prefetch *p, n2l_slot_t *victims, u32 n);

	/*
	 * Optional. How many slots this activation of the engine moves, from
	 * what it measured: a policy that decides when and how many itself.
	 * Without it, the engine's amount knobs decide (v->knob_amount).
	 * The engine moves no more than Network RAM holds. @room: how many
	 * of them it asks for to keep room on Network RAM for the next
	 * swap-outs (the rest: to spread reads), so that the engine can
	 * count why it moved.
	 */
	u64 (*plan)(struct n2l_prefetch *p, const struct n2l_pf_view *v,
		    u64 *room);
};

struct n2l_prefetch {
	struct n2l_prefetch_type *type;
};

static inline struct n2l_prefetch_type *
to_prefetch_type(struct n2l_policy_type *t)
{
	return container_of(t, struct n2l_prefetch_type, base);
}

#endif /* N2L_POLICY_H */
