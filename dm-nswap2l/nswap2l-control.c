// SPDX-License-Identifier: GPL-2.0-only
/*
 * Runtime reconfiguration. A dmsetup message and the matching sysfs file
 * call the same function here. Changes serialise on the config_lock;
 * what status and sysfs read is read under the store's spinlock, so that
 * reading never waits for a change that may take seconds (a drain that
 * waits for a server, a policy learning a large device).
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
	lockdep_assert_held(&t->store->lock);
	return t->applied ? t->store->placement : t->placement;
}

/* "<name> <#args> [<key> <value>]*", as the table line has it. */
int n2l_emit_placement(struct n2l_target *t, char *buf, size_t len)
{
	struct n2l_placement *p;
	unsigned long flags;
	int n;

	spin_lock_irqsave(&t->store->lock, flags);
	p = __reported_placement(t);
	n = scnprintf(buf, len, "%s ", p->type->base.name);
	if (p->type->emit_config)
		n += p->type->emit_config(p, buf + n, len - n);
	else
		n += scnprintf(buf + n, len - n, "0");
	spin_unlock_irqrestore(&t->store->lock, flags);
	return n;
}

void n2l_placement_name(struct n2l_target *t, char *buf, size_t len)
{
	unsigned long flags;

	spin_lock_irqsave(&t->store->lock, flags);
	strscpy(buf, __reported_placement(t)->type->base.name, len);
	spin_unlock_irqrestore(&t->store->lock, flags);
}

/* The prefetch policy and knobs @t reports, as for placement. */
static struct n2l_prefetch *__reported_prefetch(struct n2l_target *t,
						struct n2l_mig_knobs *mk)
{
	lockdep_assert_held(&t->store->lock);
	*mk = t->applied ? t->store->mig.knobs : t->knobs;
	return t->applied ? t->store->mig.policy : t->prefetch;
}

/* "<name> <#args> [<key> <value>]*", as the table line has it. */
int n2l_emit_prefetch(struct n2l_target *t, char *buf, size_t len)
{
	struct n2l_mig_knobs mk;
	unsigned long flags;
	char name[32];
	int n;

	spin_lock_irqsave(&t->store->lock, flags);
	strscpy(name, __reported_prefetch(t, &mk)->type->base.name, sizeof(name));
	spin_unlock_irqrestore(&t->store->lock, flags);
	n = scnprintf(buf, len, "%s ", name);
	return n + n2l_emit_mig_args(&mk, buf + n, len - n);
}

void n2l_prefetch_name(struct n2l_target *t, char *buf, size_t len)
{
	struct n2l_mig_knobs mk;
	unsigned long flags;

	spin_lock_irqsave(&t->store->lock, flags);
	strscpy(buf, __reported_prefetch(t, &mk)->type->base.name, len);
	spin_unlock_irqrestore(&t->store->lock, flags);
}

/*----------------------------------------------------------------*/
/* Network RAM servers. */

/* Server @idx (or -errno) was just added to the client. */
static int server_added(struct n2l_store *s, int idx)
{
	if (idx < 0)
		return idx;
	spin_lock_irq(&s->lock);
	s->netram.present |= BIT_ULL(idx);
	s->netram.draining &= ~BIT_ULL(idx);
	atomic_set(&s->netram.unsettled[idx], 0);
	spin_unlock_irq(&s->lock);
	return 0;
}

/* A new server of the device; config_lock held. */
int __n2l_server_add(struct n2l_store *s, const char *name, char **error)
{
	lockdep_assert_held(&s->config_lock);
	return server_added(s, n2l_net_server_add(s->netram.net, name, error));
}

/*
 * A server of the device as its metadata names it, at the index its
 * slots' groups name; config_lock held.
 */
int __n2l_server_add_at(struct n2l_store *s, const struct sockaddr_storage *ss,
			unsigned int idx, char **error)
{
	lockdep_assert_held(&s->config_lock);
	return server_added(s, n2l_net_server_add_at(s->netram.net, ss, idx,
						     error));
}

/* Start or stop draining server @idx away; config_lock held. */
void __n2l_server_drain(struct n2l_store *s, unsigned int idx, bool drain)
{
	lockdep_assert_held(&s->config_lock);
	n2l_net_server_set_draining(s->netram.net, idx, drain);
	spin_lock_irq(&s->lock);
	if (drain)
		s->netram.draining |= BIT_ULL(idx);
	else
		s->netram.draining &= ~BIT_ULL(idx);
	spin_unlock_irq(&s->lock);
	n2l_repair_kick(s);
}

/* The device's server at @name (in any spelling), or -1. */
static int find_server(struct n2l_store *s, const char *name)
{
	int idx = n2l_net_server_find(s->netram.net, name);

	return idx >= 0 && (s->netram.present & BIT_ULL(idx)) ? idx : -1;
}

/* A server being removed is kept after all. */
int n2l_add_server(struct n2l_store *s, const char *name, char **error)
{
	int idx, r = 0;

	mutex_lock(&s->config_lock);
	idx = find_server(s, name);
	if (idx < 0) {
		r = __n2l_server_add(s, name, error);
	} else if (s->netram.draining & BIT_ULL(idx)) {
		__n2l_server_drain(s, idx, false);
	} else {
		*error = "Server already in use";
		r = -EEXIST;
	}
	mutex_unlock(&s->config_lock);
	return r;
}

/* Moves the server's slots elsewhere first; it leaves once none needs it. */
int n2l_remove_server(struct n2l_store *s, const char *name, char **error)
{
	int idx, r = 0;

	mutex_lock(&s->config_lock);
	idx = find_server(s, name);
	if (idx < 0) {
		*error = "No such server";
		r = -ENOENT;
	} else {
		__n2l_server_drain(s, idx, true);
	}
	mutex_unlock(&s->config_lock);
	return r;
}

/*
 * A server that is never coming back: its copies are lost now. Writes
 * that it stored and that are still in flight (their other copies went
 * to the slow path) would name it when they land: they do so first, and
 * lose that copy with the others. Its index is freed only then, so that
 * no write names a server added after it.
 */
int n2l_forget_server(struct n2l_store *s, const char *name, char **error)
{
	char canon[N2L_ADDR_LEN];
	u32 lost;
	int idx;

	mutex_lock(&s->config_lock);
	idx = find_server(s, name);
	if (idx < 0) {
		mutex_unlock(&s->config_lock);
		*error = "No such server";
		return -ENOENT;
	}
	n2l_net_server_name(s->netram.net, idx, canon, sizeof(canon));
	/* No new write goes to it from now on. */
	n2l_net_server_set_draining(s->netram.net, idx, true);
	if (!n2l_netram_wait_settled(s, idx)) {
		n2l_net_server_set_draining(s->netram.net, idx,
					    s->netram.draining & BIT_ULL(idx));
		mutex_unlock(&s->config_lock);
		*error = "Writes to the server are still in flight: try again";
		return -EBUSY;
	}
	spin_lock_irq(&s->lock);
	lost = __n2l_groups_drop_server(s, idx);
	s->netram.present &= ~BIT_ULL(idx);
	s->netram.draining &= ~BIT_ULL(idx);
	spin_unlock_irq(&s->lock);
	n2l_net_server_remove(s->netram.net, idx);
	mutex_unlock(&s->config_lock);
	DMERR("%s: server %s forgotten: its copies are gone (%u slots lost)",
	      dm_device_name(s->md), canon, lost);
	n2l_repair_kick(s);
	return 0;
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
	{ "replicas", KNOB_NETRAM,
	  offsetof(struct n2l_netram, replicas), 1, N2L_MAX_REPLICAS },
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
	if (!r && k->home == KNOB_NETRAM)
		n2l_net_set_timeouts(s->netram.net, s->netram.timeout_ms,
				     s->netram.dead_after_ms);
	mutex_unlock(&s->config_lock);
	if (!r && k->home == KNOB_MIG)
		n2l_mig_kick(s);
	if (!r && k->home == KNOB_NETRAM)
		n2l_repair_kick(s);
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

/* What status says of server @idx: state, slots held, free, capacity. */
static bool server_state(struct n2l_store *s, unsigned int idx,
			 struct n2l_net_info *info, const char **state, u32 *held)
{
	unsigned long flags;
	bool draining;

	spin_lock_irqsave(&s->lock, flags);
	*held = s->netram.srv_held[idx];
	draining = s->netram.draining & BIT_ULL(idx);
	spin_unlock_irqrestore(&s->lock, flags);
	if (!n2l_net_server_info(s->netram.net, idx, info))
		return false;
	*state = draining ? "draining" : n2l_net_state_name(info->state);
	return true;
}

/* The servers of the device, a bit each. */
static u64 servers_present(struct n2l_store *s, bool table)
{
	unsigned long flags;
	u64 present;

	spin_lock_irqsave(&s->lock, flags);
	present = s->netram.present & (table ? ~s->netram.draining : ~0ULL);
	spin_unlock_irqrestore(&s->lock, flags);
	return present;
}

/*
 * The servers, for the status line: "<#> [<name> <state> <held> <free>
 * <capacity>]*"; or, @table, those a new table line should name:
 * "<#> [<name>]*".
 */
int n2l_emit_servers(struct n2l_store *s, char *buf, size_t len, bool table)
{
	u64 present = servers_present(s, table);
	struct n2l_net_info info;
	char name[N2L_ADDR_LEN];
	const char *state;
	unsigned int i;
	size_t sz;
	u32 held;

	sz = scnprintf(buf, len, "%u", (unsigned int)hweight64(present));
	for (i = 0; i < N2L_NET_SERVERS; i++) {
		if (!(present & BIT_ULL(i)) ||
		    n2l_net_server_name(s->netram.net, i, name, sizeof(name)) < 0)
			continue;
		if (table) {
			sz += scnprintf(buf + sz, len - sz, " %s", name);
			continue;
		}
		if (!server_state(s, i, &info, &state, &held))
			info = (struct n2l_net_info){ 0 };
		sz += scnprintf(buf + sz, len - sz, " %s %s %u %llu %llu", name,
				state, held, info.free, info.capacity);
	}
	return sz;
}

/* The servers file's line for server @idx; false if there is none. */
bool n2l_server_line(struct n2l_store *s, unsigned int idx, char *buf,
		     size_t len)
{
	struct n2l_net_info info;
	char name[N2L_ADDR_LEN];
	const char *state;
	size_t n;
	u32 held;

	if (!(servers_present(s, false) & BIT_ULL(idx)) ||
	    n2l_net_server_name(s->netram.net, idx, name, sizeof(name)) < 0 ||
	    !server_state(s, idx, &info, &state, &held))
		return false;
	n = scnprintf(buf, len, "%s %s held=%u free=%llu capacity=%llu ", name,
		      state, held, info.free, info.capacity);
	n2l_net_emit_stats(s->netram.net, idx, buf + n, len - n);
	return true;
}
