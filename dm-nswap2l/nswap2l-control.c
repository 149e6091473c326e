// SPDX-License-Identifier: GPL-2.0-only
/*
 * Runtime reconfiguration. A dmsetup message and the matching sysfs file
 * call the same function here.
 */
#include "nswap2l.h"

/* "placement <name> [<key> <value>]*": argv starts at the name. */
int n2l_set_placement(struct n2l_store *s, unsigned int argc, char **argv,
		      char **error)
{
	struct n2l_placement *p, *old;

	p = n2l_placement_create(argc, argv, error);
	if (IS_ERR(p))
		return PTR_ERR(p);

	mutex_lock(&s->config_lock);
	spin_lock_irq(&s->lock);
	old = s->placement;
	s->placement = p;
	spin_unlock_irq(&s->lock);
	mutex_unlock(&s->config_lock);

	n2l_placement_destroy(old);
	return 0;
}

/*
 * The placement policy @t reports: the table's own until its first resume
 * hands it to the store, the store's (maybe changed since) afterwards.
 */
static struct n2l_placement *__reported_placement(struct n2l_target *t)
{
	lockdep_assert_held(&t->store->config_lock);
	return t->applied ? t->store->placement : t->placement;
}

/* "<name> <#args> [<key> <value>]*", as the table line has it. */
int n2l_emit_placement(struct n2l_target *t, char *buf, size_t len)
{
	struct n2l_placement *p;
	int n;

	mutex_lock(&t->store->config_lock);
	p = __reported_placement(t);
	n = scnprintf(buf, len, "%s ", p->type->base.name);
	if (p->type->emit_config)
		n += p->type->emit_config(p, buf + n, len - n);
	else
		n += scnprintf(buf + n, len - n, "0");
	mutex_unlock(&t->store->config_lock);
	return n;
}

void n2l_placement_name(struct n2l_target *t, char *buf, size_t len)
{
	mutex_lock(&t->store->config_lock);
	strscpy(buf, __reported_placement(t)->type->base.name, len);
	mutex_unlock(&t->store->config_lock);
}
