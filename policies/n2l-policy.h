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

#endif /* N2L_POLICY_H */
