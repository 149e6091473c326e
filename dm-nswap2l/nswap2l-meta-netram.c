// SPDX-License-Identifier: GPL-2.0-only
/*
 * The metadata's Network RAM block (nswap2l-meta.h): what a Network RAM
 * entry of the committed map means after a load. An entry names a group
 * and a version; the block names each group's servers, each server's
 * address at its index, and the version a loaded device goes on from.
 *
 * A load puts the groups back, keeps every Network RAM slot whose group
 * still has a server, adds the servers back at their indices and lets
 * reconciliation find out, server by server, which copies are still
 * there: those that are not are dropped from their slots, and a slot
 * left with none reads as -EIO and counts as lost. No copy is trusted
 * without a server's word, and no version is handed out twice: the
 * block's floor lies above every version used before the next commit,
 * and the engine hands out none at or above the committed floor.
 */
#include <linux/dm-bufio.h>
#include <linux/in.h>
#include <linux/in6.h>

#include "nswap2l.h"
#include "nswap2l-meta.h"

/*
 * Versions a device may hand out between two commits: a load goes on
 * from the last commit's next version plus this, 2^20 loads in 2^48.
 */
#define N2L_META_VERS_AHEAD	(1ULL << 28)

static_assert(sizeof(struct n2l_meta_netram_block) <= N2L_META_BLOCK);
static_assert(N2L_META_SERVERS == N2L_NET_SERVERS);
static_assert(N2L_META_GROUPS == SME_GROUPS);
static_assert(N2L_META_REPLICAS == N2L_MAX_REPLICAS);

static void server_to_meta(struct n2l_meta_server *ms,
			   const struct sockaddr_storage *ss)
{
	const struct sockaddr_in *in4 = (const void *)ss;
	const struct sockaddr_in6 *in6 = (const void *)ss;

	memset(ms, 0, sizeof(*ms));
	if (ss->ss_family == AF_INET) {
		ms->family = cpu_to_le16(AF_INET);
		ms->port = in4->sin_port;
		memcpy(ms->addr, &in4->sin_addr, sizeof(in4->sin_addr));
	} else if (ss->ss_family == AF_INET6) {
		ms->family = cpu_to_le16(AF_INET6);
		ms->port = in6->sin6_port;
		memcpy(ms->addr, &in6->sin6_addr, sizeof(in6->sin6_addr));
	}
}

/* The socket address of @ms; false if it names none or is malformed. */
static bool server_from_meta(const struct n2l_meta_server *ms,
			     struct sockaddr_storage *ss)
{
	struct sockaddr_in *in4 = (void *)ss;
	struct sockaddr_in6 *in6 = (void *)ss;

	memset(ss, 0, sizeof(*ss));
	switch (le16_to_cpu(ms->family)) {
	case AF_INET:
		in4->sin_family = AF_INET;
		in4->sin_port = ms->port;
		memcpy(&in4->sin_addr, ms->addr, sizeof(in4->sin_addr));
		return ms->port != 0;
	case AF_INET6:
		in6->sin6_family = AF_INET6;
		in6->sin6_port = ms->port;
		memcpy(&in6->sin6_addr, ms->addr, sizeof(in6->sin6_addr));
		return ms->port != 0;
	default:
		return false;
	}
}

/*
 * The servers' addresses as the client has them now, into @cache; once
 * the client is gone (the device closing), @cache keeps the last ones.
 */
static void refresh_servers(struct n2l_store *s, u64 present,
			    struct n2l_meta_server *cache)
{
	struct sockaddr_storage ss;
	unsigned int i;

	if (!s->netram.net)
		return;
	for (i = 0; i < N2L_META_SERVERS; i++) {
		if ((present & BIT_ULL(i)) &&
		    n2l_net_server_addr(s->netram.net, i, &ss))
			server_to_meta(&cache[i], &ss);
		else
			memset(&cache[i], 0, sizeof(cache[i]));
	}
}

/*
 * Fill @nb, the Network RAM block of the commit of @gen, from the store
 * as it is now; returns the floor it records.
 */
u64 n2l_meta_netram_fill(struct n2l_store *s, struct n2l_meta_netram_block *nb,
			 u64 gen, struct n2l_meta_server *cache)
{
	struct n2l_netram *nr = &s->netram;
	unsigned int g;
	u64 present, floor;

	memset(nb, 0, N2L_META_BLOCK);
	memset(nb->groups, N2L_META_NO_SERVER, sizeof(nb->groups));
	spin_lock_irq(&s->lock);
	for (g = 0; g < N2L_META_GROUPS; g++)
		memcpy(nb->groups[g], nr->groups[g].srv, nr->groups[g].nr);
	present = nr->present;
	floor = nr->next_version + N2L_META_VERS_AHEAD;
	spin_unlock_irq(&s->lock);
	refresh_servers(s, present, cache);
	memcpy(nb->server, cache, sizeof(nb->server));
	nb->servers = cpu_to_le32(N2L_META_SERVERS);
	nb->gen = cpu_to_le64(gen);
	nb->vers_floor = cpu_to_le64(floor);
	return floor;
}

/* The commit that recorded @floor is on the device: versions up to it. */
void n2l_meta_netram_committed(struct n2l_store *s, u64 floor)
{
	spin_lock_irq(&s->lock);
	s->netram.vers_limit = min_t(u64, floor, SME_VERS_MAX + 1);
	spin_unlock_irq(&s->lock);
}

/* Whether group @g's members in @nb are sorted servers that @nb names. */
static bool group_ok(const struct n2l_meta_netram_block *nb, unsigned int g,
		     unsigned int *nr)
{
	struct sockaddr_storage ss;
	unsigned int i;
	u8 m;

	for (*nr = 0, i = 0; i < N2L_META_REPLICAS; i++) {
		m = nb->groups[g][i];
		if (m == N2L_META_NO_SERVER)
			continue;
		if (i != *nr || m >= N2L_META_SERVERS ||
		    (i && m <= nb->groups[g][i - 1]) ||
		    !server_from_meta(&nb->server[m], &ss))
			return false;
		(*nr)++;
	}
	return true;
}

/*
 * Check @nb, the Network RAM block of the committed superblock of
 * generation @gen, and put its groups and next version into the store,
 * its servers into @cache. Before the map's entries are loaded.
 */
int n2l_meta_netram_load(struct n2l_store *s,
			 const struct n2l_meta_netram_block *nb, u64 gen,
			 struct n2l_meta_server *cache, char **error)
{
	struct n2l_netram *nr = &s->netram;
	struct sockaddr_storage ss;
	unsigned int g, i, n;
	u64 floor = le64_to_cpu(nb->vers_floor);

	if (le32_to_cpu(nb->csum) != n2l_meta_csum(nb) ||
	    le32_to_cpu(nb->servers) != N2L_META_SERVERS ||
	    le64_to_cpu(nb->gen) != gen || !floor || floor > SME_VERS_MAX) {
		DMERR("%s: the metadata's Network RAM block of generation %llu is corrupt (run n2lctl meta check)",
		      dm_device_name(s->md), gen);
		*error = "Metadata corrupt (the kernel log says where)";
		return -EINVAL;
	}
	for (i = 0; i < N2L_META_SERVERS; i++)
		if (nb->server[i].family && !server_from_meta(&nb->server[i], &ss))
			goto corrupt;
	for (g = 0; g < N2L_META_GROUPS; g++)
		if (!group_ok(nb, g, &n))
			goto corrupt;
	spin_lock_irq(&s->lock);
	for (g = 0; g < N2L_META_GROUPS; g++) {
		group_ok(nb, g, &n);
		nr->groups[g].nr = n;
		memcpy(nr->groups[g].srv, nb->groups[g], n);
	}
	nr->next_version = floor;
	spin_unlock_irq(&s->lock);
	memcpy(cache, nb->server, sizeof(nb->server));
	return 0;
corrupt:
	DMERR("%s: the metadata's Network RAM block of generation %llu names a server it does not hold (run n2lctl meta check)",
	      dm_device_name(s->md), gen);
	*error = "Metadata corrupt (the kernel log says where)";
	return -EINVAL;
}

/*
 * Whether the Network RAM entry @e of a loaded map can be kept: its
 * group has a server left and its version lies below the floor.
 */
bool __n2l_meta_netram_keeps(struct n2l_store *s, sme_t e)
{
	lockdep_assert_held(&s->lock);
	return s->netram.groups[sme_group(e)].nr &&
	       sme_vers(e) && sme_vers(e) < s->netram.next_version;
}

/*
 * After the entries: the servers of @cache come back at their indices,
 * and reconcile as they connect. A server that cannot be added leaves
 * its copies lost: no group names it any more.
 */
int n2l_meta_netram_reattach(struct n2l_store *s,
			     const struct n2l_meta_server *cache)
{
	struct sockaddr_storage ss;
	unsigned int i, back = 0;
	char *error;
	int r;

	mutex_lock(&s->config_lock);
	for (i = 0; i < N2L_META_SERVERS; i++) {
		if (!server_from_meta(&cache[i], &ss))
			continue;
		r = __n2l_server_add_at(s, &ss, i, &error);
		if (!r) {
			back++;
			continue;
		}
		DMERR("%s: server %pISpc of the metadata: %s: its copies are lost",
		      dm_device_name(s->md), &ss, error);
		spin_lock_irq(&s->lock);
		__n2l_groups_drop_server(s, i);
		spin_unlock_irq(&s->lock);
	}
	mutex_unlock(&s->config_lock);
	return back;
}
