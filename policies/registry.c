// SPDX-License-Identifier: GPL-2.0-only
/*
 * Policy registry: policies of every kind, by name. Lookups take a
 * reference on the module that owns the policy, and ask for a module named
 * "nswap2l-<name>" when the name is not registered yet.
 */
#include "n2l-policy.h"

static N2L_DEFINE_LOCK(register_lock);
static LIST_HEAD(register_list);

static const char *const default_names[] = {
	[N2L_POLICY_PLACEMENT] = "netram-first",
	[N2L_POLICY_PREFETCH] = "none",
};

static struct n2l_policy_type *__find(enum n2l_policy_kind kind,
				      const char *name)
{
	struct n2l_policy_type *t;

	list_for_each_entry(t, &register_list, list)
		if (t->kind == kind && !strcmp(t->name, name))
			return t;
	return NULL;
}

int n2l_policy_register(struct n2l_policy_type *t)
{
	int r = 0;

	n2l_lock(&register_lock);
	if (__find(t->kind, t->name))
		r = -EEXIST;
	else
		list_add_tail(&t->list, &register_list);
	n2l_unlock(&register_lock);
	return r;
}

void n2l_policy_unregister(struct n2l_policy_type *t)
{
	n2l_lock(&register_lock);
	list_del_init(&t->list);
	n2l_unlock(&register_lock);
}

static struct n2l_policy_type *get_once(enum n2l_policy_kind kind,
					const char *name)
{
	struct n2l_policy_type *t;

	n2l_lock(&register_lock);
	t = __find(kind, name);
	if (t && !try_module_get(t->owner))
		t = NULL;
	n2l_unlock(&register_lock);
	return t;
}

struct n2l_policy_type *n2l_policy_get(enum n2l_policy_kind kind,
				       const char *name)
{
	struct n2l_policy_type *t;

	if (!strcmp(name, "default"))
		name = default_names[kind];
	t = get_once(kind, name);
#ifdef __KERNEL__
	if (!t && !request_module("nswap2l-%s", name))
		t = get_once(kind, name);
#endif
	return t;
}

void n2l_policy_put(struct n2l_policy_type *t)
{
	module_put(t->owner);
}

/*
 * "a [b] c": every registered name of @kind in name order, @selected in
 * brackets, newline-terminated, the shape of a block queue's scheduler file.
 */
int n2l_policy_names(enum n2l_policy_kind kind, const char *selected,
		     char *buf, size_t len)
{
	struct n2l_policy_type *t, *next;
	const char *last = "";
	size_t used = 0;

	if (!len)
		return 0;
	buf[0] = '\0';
	n2l_lock(&register_lock);
	for (;;) {
		next = NULL;
		list_for_each_entry(t, &register_list, list)
			if (t->kind == kind && strcmp(t->name, last) > 0 &&
			    (!next || strcmp(t->name, next->name) < 0))
				next = t;
		if (!next)
			break;
		used += snprintf(buf + used, used < len ? len - used : 0,
				 strcmp(next->name, selected) ? "%s%s" : "%s[%s]",
				 used ? " " : "", next->name);
		last = next->name;
	}
	n2l_unlock(&register_lock);
	used += snprintf(buf + used, used < len ? len - used : 0, "\n");
	return (int)min(used, len - 1);
}
