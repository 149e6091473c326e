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

/* The prefetch policy and knobs @t reports, as for placement. */
static struct n2l_prefetch *__reported_prefetch(struct n2l_target *t,
						const struct n2l_mig_knobs **mk)
{
	lockdep_assert_held(&t->store->config_lock);
	*mk = t->applied ? &t->store->mig.knobs : &t->knobs;
	return t->applied ? t->store->mig.policy : t->prefetch;
}

/* "<name> <#args> [<key> <value>]*", as the table line has it. */
int n2l_emit_prefetch(struct n2l_target *t, char *buf, size_t len)
{
	const struct n2l_mig_knobs *mk;
	struct n2l_prefetch *p;
	int n;

	mutex_lock(&t->store->config_lock);
	p = __reported_prefetch(t, &mk);
	n = scnprintf(buf, len, "%s ", p->type->base.name);
	n += n2l_emit_mig_args(mk, buf + n, len - n);
	mutex_unlock(&t->store->config_lock);
	return n;
}

void n2l_prefetch_name(struct n2l_target *t, char *buf, size_t len)
{
	const struct n2l_mig_knobs *mk;

	mutex_lock(&t->store->config_lock);
	strscpy(buf, __reported_prefetch(t, &mk)->type->base.name, len);
	mutex_unlock(&t->store->config_lock);
}

/*----------------------------------------------------------------*/
/* Network RAM servers and knobs. */

int n2l_add_server(struct n2l_store *s, const char *name, char **error)
{
	struct n2l_server *srv;
	int r = 0;

	mutex_lock(&s->config_lock);
	if (__n2l_server_find(&s->netram, name)) {
		*error = "Server already in use";
		r = -EEXIST;
	} else {
		srv = n2l_server_add(&s->netram, name, false, error);
		if (IS_ERR(srv))
			r = PTR_ERR(srv);
	}
	mutex_unlock(&s->config_lock);
	return r;
}

/* Moves the server's slots elsewhere first; it leaves once empty. */
int n2l_remove_server(struct n2l_store *s, const char *name, char **error)
{
	int r;

	mutex_lock(&s->config_lock);
	r = n2l_server_remove_start(&s->netram, name, error);
	mutex_unlock(&s->config_lock);
	return r;
}

/*
 * Knobs: "set <knob> <value>" and the sysfs file of the same name. The
 * prefetch ones are also the keys of the prefetch policy's arguments in
 * the table line, without their "prefetch_" prefix.
 */
enum knob_home { KNOB_NETRAM, KNOB_MIG };

struct n2l_knob {
	const char *name;
	enum knob_home home;
	size_t offset;			/* of an unsigned int in its home */
	unsigned int min, max;
	const char *const *choices;	/* names of the values 0..max */
};

static const char *const amount_modes[] = { "swapouts", "fixed", "netram" };

static const struct n2l_knob knobs[] = {
	{ "netram_timeout_ms", KNOB_NETRAM,
	  offsetof(struct n2l_netram, timeout_ms), 100, 600000 },
	{ "netram_dead_after_ms", KNOB_NETRAM,
	  offsetof(struct n2l_netram, dead_after_ms), 1000, 86400000 },
	{ "prefetch_interval_ms", KNOB_MIG,
	  offsetof(struct n2l_mig_knobs, interval_ms), 10, 3600000 },
	{ "prefetch_amount", KNOB_MIG,
	  offsetof(struct n2l_mig_knobs, amount), 0, 1U << 30 },
	{ "prefetch_amount_mode", KNOB_MIG,
	  offsetof(struct n2l_mig_knobs, amount_mode), 0,
	  ARRAY_SIZE(amount_modes) - 1, amount_modes },
	{ "prefetch_enabled", KNOB_MIG,
	  offsetof(struct n2l_mig_knobs, enabled), 0, 1 },
};

const struct n2l_knob *n2l_find_knob(const char *name)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(knobs); i++)
		if (!strcmp(knobs[i].name, name))
			return &knobs[i];
	return NULL;
}

bool n2l_knob_is_mig(const struct n2l_knob *k)
{
	return k->home == KNOB_MIG;
}

static unsigned int *knob_ptr(struct n2l_store *s, const struct n2l_knob *k)
{
	char *home = k->home == KNOB_MIG ? (char *)&s->mig.knobs :
					   (char *)&s->netram;

	return (unsigned int *)(home + k->offset);
}

unsigned int *n2l_mig_knob_ptr(struct n2l_mig_knobs *mk,
			       const struct n2l_knob *k)
{
	return (unsigned int *)((char *)mk + k->offset);
}

/* @value as @k takes it: a number in range, or one of its choices. */
int n2l_knob_parse(const struct n2l_knob *k, const char *value,
		   unsigned int *v, char **error)
{
	unsigned int i;

	if (k->choices) {
		for (i = 0; i <= k->max; i++) {
			if (!strcmp(value, k->choices[i])) {
				*v = i;
				return 0;
			}
		}
		*error = "Unknown knob value";
		return -EINVAL;
	}
	if (kstrtouint(value, 10, v) || *v < k->min || *v > k->max) {
		*error = "Knob value out of range";
		return -EINVAL;
	}
	return 0;
}

/* The knobs of the migration engine, together: a percent is at most 100. */
int n2l_mig_knobs_check(const struct n2l_mig_knobs *mk, char **error)
{
	if (mk->amount_mode != N2L_AMOUNT_FIXED && mk->amount > 100) {
		*error = "Prefetch amount is a percentage in this mode: at most 100";
		return -EINVAL;
	}
	return 0;
}

int n2l_set_knob(struct n2l_store *s, const char *name, const char *value,
		 char **error)
{
	const struct n2l_knob *k = n2l_find_knob(name);
	struct n2l_mig_knobs mk;
	unsigned int v;
	int r;

	if (!k) {
		*error = "Unknown knob";
		return -EINVAL;
	}
	r = n2l_knob_parse(k, value, &v, error);
	if (r)
		return r;
	mutex_lock(&s->config_lock);
	mk = s->mig.knobs;
	if (k->home == KNOB_MIG) {
		*n2l_mig_knob_ptr(&mk, k) = v;
		r = n2l_mig_knobs_check(&mk, error);
	}
	if (!r)
		WRITE_ONCE(*knob_ptr(s, k), v);
	mutex_unlock(&s->config_lock);
	if (!r && k->home == KNOB_MIG)
		n2l_mig_kick(s);
	return r;
}

/* The value of @name as "set" takes it, or with @all the choices too. */
int n2l_show_knob(struct n2l_store *s, const char *name, char *buf,
		  size_t len, bool all)
{
	const struct n2l_knob *k = n2l_find_knob(name);
	unsigned int v, i;
	int n = 0;

	if (!k)
		return -EINVAL;
	v = READ_ONCE(*knob_ptr(s, k));
	if (!k->choices)
		return scnprintf(buf, len, "%u", v);
	if (!all)
		return scnprintf(buf, len, "%s", k->choices[v]);
	for (i = 0; i <= k->max; i++)
		n += scnprintf(buf + n, len - n, i == v ? "%s[%s]" : "%s%s",
			       i ? " " : "", k->choices[i]);
	return n;
}

/* Slots on servers declared dead: data that is gone. */
u32 __n2l_lost_slots(struct n2l_store *s)
{
	struct n2l_server *srv;
	unsigned int i;
	u32 lost = 0;

	lockdep_assert_held(&s->lock);
	for (i = 0; i < N2L_MAX_SERVERS; i++) {
		srv = s->netram.servers[i];
		if (srv && srv->state == N2L_SRV_DEAD)
			lost += srv->held;
	}
	return lost;
}

/*
 * The servers, for the status line: "<#> [<name> <state> <held> <free>
 * <capacity>]*"; or, @table, those a new table line should name:
 * "<#> [<name>]*".
 */
int n2l_emit_servers(struct n2l_store *s, char *buf, size_t len, bool table)
{
	struct n2l_server *srv;
	unsigned int i, n = 0;
	size_t sz;
	u32 held;

	mutex_lock(&s->config_lock);
	for (i = 0; i < N2L_MAX_SERVERS; i++) {
		srv = s->netram.servers[i];
		if (srv && (!table || (srv->state != N2L_SRV_DEAD &&
				       srv->state != N2L_SRV_DRAINING)))
			n++;
	}
	sz = scnprintf(buf, len, "%u", n);
	for (i = 0; i < N2L_MAX_SERVERS; i++) {
		srv = s->netram.servers[i];
		if (!srv)
			continue;
		if (table) {
			if (srv->state != N2L_SRV_DEAD &&
			    srv->state != N2L_SRV_DRAINING)
				sz += scnprintf(buf + sz, len - sz, " %s", srv->name);
			continue;
		}
		spin_lock_irq(&s->lock);
		held = srv->held;
		spin_unlock_irq(&s->lock);
		sz += scnprintf(buf + sz, len - sz, " %s %s %u %llu %llu",
				srv->name, n2l_server_state_name(READ_ONCE(srv->state)),
				held,
				(unsigned long long)atomic64_read(&srv->free_reported),
				(unsigned long long)READ_ONCE(srv->capacity));
	}
	mutex_unlock(&s->config_lock);
	return sz;
}
