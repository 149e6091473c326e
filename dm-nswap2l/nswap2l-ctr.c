// SPDX-License-Identifier: GPL-2.0-only
/*
 * Construction and destruction of an nswap2l target: the table line.
 */
#include <linux/ctype.h>

#include "nswap2l.h"

/*
 * Table line:
 *
 *   nswap2l <flash dev|-> <disk dev|-> <slot sectors>
 *           <#features> [<feature>]*
 *           <#servers> [<host>:<port>]*
 *           <placement policy> <#args> [<key> <value>]*
 *           <prefetch policy> <#args> [<key> <value>]*
 *
 * flash dev, disk dev: block devices holding slots, "-" for none
 * slot sectors:        8 (4 KiB)
 * features:            no_discard_passdown, replicas:<N> (1 to 3),
 *                      psk:<identity> (logon key nswap2l:<identity>),
 *                      encrypt:<logon key description>,
 *                      metadata:<dev> (keeps the slot map, nswap2l-meta.c)
 * servers:             Network RAM page servers, a.b.c.d:port or [v6]:port
 * placement policy:    by name (netram-first, default) with key/value args
 * prefetch policy:     by name (none, default; rr, random, lrs, mrs) with
 *                      the migration engine's knobs as key/value args:
 *                      interval_ms, amount, amount_mode, enabled, percent
 */

struct n2l_count {
	unsigned int max;
	const char *invalid;	/* missing, or not a number */
	const char *too_many;	/* above max */
	const char *too_few;	/* fewer words follow than announced */
};

/* A "<#n> <word>*" count, each way it can be wrong named apart. */
static int read_count(struct dm_arg_set *as, const struct n2l_count *c,
		      unsigned int *n, char **error)
{
	const char *arg = dm_shift_arg(as);

	if (!arg || kstrtouint(arg, 10, n)) {
		*error = (char *)c->invalid;
		return -EINVAL;
	}
	if (*n > c->max) {
		*error = (char *)c->too_many;
		return -EINVAL;
	}
	if (*n > as->argc) {
		*error = (char *)c->too_few;
		return -EINVAL;
	}
	return 0;
}

/*----------------------------------------------------------------*/

struct medium_errors {
	const char *missing;
	const char *open;
	const char *small;
	const char *lbs;
};

static const struct medium_errors flash_errors = {
	.missing = "Missing flash device",
	.open = "Error opening flash device",
	.small = "Flash device is smaller than one slot",
	.lbs = "Flash device has a logical block size above 4096",
};

static const struct medium_errors disk_errors = {
	.missing = "Missing disk device",
	.open = "Error opening disk device",
	.small = "Disk device is smaller than one slot",
	.lbs = "Disk device has a logical block size above 4096",
};

static int parse_medium(struct dm_target *ti, struct dm_arg_set *as,
			const struct medium_errors *e, struct dm_dev **dev)
{
	const char *arg = dm_shift_arg(as);
	int r;

	*dev = NULL;
	if (!arg) {
		ti->error = (char *)e->missing;
		return -EINVAL;
	}
	if (!strcmp(arg, "-"))
		return 0;
	r = dm_get_device(ti, arg, dm_table_get_mode(ti->table), dev);
	if (r) {
		ti->error = (char *)e->open;
		return r;
	}
	if (bdev_nr_sectors((*dev)->bdev) < N2L_SLOT_SECTORS) {
		ti->error = (char *)e->small;
		return -EINVAL;
	}
	if (bdev_logical_block_size((*dev)->bdev) > N2L_SLOT_SECTORS << SECTOR_SHIFT) {
		ti->error = (char *)e->lbs;
		return -EINVAL;
	}
	return 0;
}

static int parse_slot_size(struct dm_target *ti, struct dm_arg_set *as)
{
	const char *arg = dm_shift_arg(as);
	unsigned int sectors;

	if (!arg || kstrtouint(arg, 10, &sectors)) {
		ti->error = "Invalid slot size";
		return -EINVAL;
	}
	if (sectors != N2L_SLOT_SECTORS) {
		ti->error = "Unsupported slot size: only 8 sectors (4 KiB) is supported";
		return -EINVAL;
	}
	return 0;
}

static int feature_replicas(struct n2l_target *t, const char *v)
{
	if (kstrtouint(v, 10, &t->replicas) || !t->replicas ||
	    t->replicas > N2L_MAX_REPLICAS) {
		t->ti->error = "Invalid replicas: give 1 to 3";
		return -EINVAL;
	}
	return 0;
}

/* An identity: printable, no spaces, short enough for the wire. */
static bool good_identity(const char *v)
{
	size_t n = strlen(v), i;

	if (!n || n >= N2L_ID_LEN)
		return false;
	for (i = 0; i < n; i++)
		if (!isgraph(v[i]))
			return false;
	return true;
}

static int feature_psk(struct n2l_target *t, const char *v)
{
	char desc[N2L_ID_LEN + 16];

	if (!good_identity(v)) {
		t->ti->error = "Invalid psk identity: 1 to 63 printable characters";
		return -EINVAL;
	}
	strscpy(t->identity, v, sizeof(t->identity));
	snprintf(desc, sizeof(desc), "nswap2l:%s", v);
	return n2l_read_logon_key(desc, t->psk, sizeof(t->psk), &t->ti->error);
}

static int feature_encrypt(struct n2l_target *t, const char *v)
{
	if (!good_identity(v) || !strchr(v, ':')) {
		t->ti->error = "Invalid encrypt key description: a logon key, prefix:name";
		return -EINVAL;
	}
	strscpy(t->key_desc, v, sizeof(t->key_desc));
	return n2l_read_logon_key(v, t->page_key, sizeof(t->page_key),
				  &t->ti->error);
}

/* The metadata device; the store checks and loads it (nswap2l-meta.c). */
static int feature_metadata(struct n2l_target *t, const char *v)
{
	struct dm_target *ti = t->ti;
	int r;

	r = dm_get_device(ti, v, dm_table_get_mode(ti->table), &t->meta);
	if (r) {
		ti->error = "Cannot open the metadata device";
		return r;
	}
	if (bdev_logical_block_size(t->meta->bdev) > N2L_SLOT_SECTORS << SECTOR_SHIFT) {
		ti->error = "Metadata device's logical block size is above 4096";
		return -EINVAL;
	}
	return 0;
}

/*
 * Each feature at most once: a second "replicas:" or "psk:" would
 * silently override the first, and the line dm status gives back would
 * not be the line the user wrote.
 */
static bool feature_once(struct n2l_target *t, unsigned int *seen,
			 unsigned int bit)
{
	if (*seen & bit) {
		t->ti->error = "Duplicate feature";
		return false;
	}
	*seen |= bit;
	return true;
}

static int parse_feature(struct n2l_target *t, const char *arg,
			 unsigned int *seen)
{
	const char *v = strchr(arg, ':');
	size_t klen = v ? v - arg : strlen(arg);

	if (!strcasecmp(arg, "no_discard_passdown")) {
		if (!feature_once(t, seen, BIT(0)))
			return -EINVAL;
		t->discard_passdown = false;
		return 0;
	}
	if (v && klen == 8 && !strncasecmp(arg, "replicas", klen))
		return feature_once(t, seen, BIT(1)) ?
			feature_replicas(t, v + 1) : -EINVAL;
	if (v && klen == 3 && !strncasecmp(arg, "psk", klen))
		return feature_once(t, seen, BIT(2)) ?
			feature_psk(t, v + 1) : -EINVAL;
	if (v && klen == 7 && !strncasecmp(arg, "encrypt", klen))
		return feature_once(t, seen, BIT(3)) ?
			feature_encrypt(t, v + 1) : -EINVAL;
	if (v && klen == 8 && !strncasecmp(arg, "metadata", klen))
		return feature_once(t, seen, BIT(4)) ?
			feature_metadata(t, v + 1) : -EINVAL;
	t->ti->error = "Unrecognised feature requested";
	return -EINVAL;
}

static int parse_features(struct n2l_target *t, struct dm_arg_set *as)
{
	static const struct n2l_count count = {
		.max = N2L_MAX_FEATURES,
		.invalid = "Invalid number of feature arguments",
		.too_many = "Too many feature arguments",
		.too_few = "Fewer feature arguments than announced",
	};
	struct dm_target *ti = t->ti;
	unsigned int n, seen = 0;
	int r;

	t->discard_passdown = true;
	t->replicas = 1;
	r = read_count(as, &count, &n, &ti->error);
	while (!r && n--)
		r = parse_feature(t, dm_shift_arg(as), &seen);
	return r;
}

/* "<#features> [<feature>]*", as the table line has it. */
int n2l_emit_features(struct n2l_target *t, char *buf, size_t len)
{
	char words[N2L_MAX_FEATURES][N2L_ID_LEN + 24];
	unsigned int n = 0, i;
	int sz;

	if (!t->discard_passdown)
		strscpy(words[n++], "no_discard_passdown", sizeof(words[0]));
	if (t->replicas != 1)
		snprintf(words[n++], sizeof(words[0]), "replicas:%u", t->replicas);
	if (t->identity[0])
		snprintf(words[n++], sizeof(words[0]), "psk:%s", t->identity);
	if (t->key_desc[0])
		snprintf(words[n++], sizeof(words[0]), "encrypt:%s", t->key_desc);
	if (t->meta)
		snprintf(words[n++], sizeof(words[0]), "metadata:%s", t->meta->name);
	sz = scnprintf(buf, len, "%u", n);
	for (i = 0; i < n; i++)
		sz += scnprintf(buf + sz, len - sz, " %s", words[i]);
	return sz;
}

static int parse_servers(struct n2l_target *t, struct dm_arg_set *as)
{
	static const struct n2l_count count = {
		.max = N2L_TABLE_SERVERS,
		.invalid = "Invalid number of servers",
		.too_many = "Too many servers",
		.too_few = "Fewer servers than announced",
	};
	struct dm_target *ti = t->ti;
	struct sockaddr_storage ss;
	unsigned int n, i, j;
	const char *arg;
	int len, r;

	r = read_count(as, &count, &n, &ti->error);
	if (r)
		return r;
	for (i = 0; i < n; i++) {
		arg = dm_shift_arg(as);
		if (n2l_parse_addr(arg, &ss, &len)) {
			ti->error = "Invalid server address: use a.b.c.d:port or [v6]:port";
			return -EINVAL;
		}
		/* One spelling of each address, whatever the line said. */
		n2l_format_addr(&ss, t->servers[i], N2L_ADDR_LEN);
		for (j = 0; j < i; j++) {
			if (!strcmp(t->servers[j], t->servers[i])) {
				ti->error = "Duplicate server";
				return -EINVAL;
			}
		}
	}
	t->nr_servers = n;
	return 0;
}

/*----------------------------------------------------------------*/

void n2l_placement_destroy(struct n2l_placement *p)
{
	struct n2l_placement_type *type;

	if (!p)
		return;
	type = p->type;
	type->destroy(p);
	n2l_policy_put(&type->base);
}

/*
 * A placement policy from "<name> [<key> <value>]*", the form shared by
 * the table line (after its count) and the "placement" message.
 */
struct n2l_placement *n2l_placement_create(unsigned int argc, char **argv,
					   char **error)
{
	struct n2l_policy_type *pt;
	struct n2l_placement_type *type;
	struct n2l_placement *p;
	unsigned int i;

	if (!argc) {
		*error = "Missing placement policy";
		return ERR_PTR(-EINVAL);
	}
	if (!(argc & 1)) {
		*error = "Placement policy arguments must be key/value pairs";
		return ERR_PTR(-EINVAL);
	}
	pt = n2l_policy_get(N2L_POLICY_PLACEMENT, argv[0]);
	if (!pt) {
		*error = "Unknown placement policy";
		return ERR_PTR(-EINVAL);
	}
	type = to_placement_type(pt);
	p = type->create();
	if (!p) {
		n2l_policy_put(pt);
		*error = "Cannot allocate placement policy";
		return ERR_PTR(-ENOMEM);
	}
	p->type = type;
	for (i = 1; i < argc; i += 2) {
		if (!type->set_config ||
		    type->set_config(p, argv[i], argv[i + 1])) {
			n2l_placement_destroy(p);
			*error = "Invalid placement policy argument";
			return ERR_PTR(-EINVAL);
		}
	}
	return p;
}

static int parse_placement(struct n2l_target *t, struct dm_arg_set *as)
{
	static const struct n2l_count count = {
		.max = 64,
		.invalid = "Invalid number of placement policy arguments",
		.too_many = "Too many placement policy arguments",
		.too_few = "Fewer placement policy arguments than announced",
	};
	struct dm_target *ti = t->ti;
	char **argv = as->argv;
	unsigned int n;
	int r;

	if (!dm_shift_arg(as)) {
		ti->error = "Missing placement policy";
		return -EINVAL;
	}
	r = read_count(as, &count, &n, &ti->error);
	if (r)
		return r;
	/* argv: name, count, pairs; hand over name and pairs. */
	argv[1] = argv[0];
	t->placement = n2l_placement_create(n + 1, argv + 1, &ti->error);
	if (IS_ERR(t->placement)) {
		r = PTR_ERR(t->placement);
		t->placement = NULL;
		return r;
	}
	as->argc -= n;
	as->argv += n;
	return 0;
}

/*
 * The prefetch policy's words, "<name> [<key> <value>]*", into @pf; it is
 * made once the geometry is known to be sane (make_prefetch()).
 */
static int parse_prefetch(struct n2l_target *t, struct dm_arg_set *as,
			  struct dm_arg_set *pf)
{
	static const struct n2l_count count = {
		.max = 16,
		.invalid = "Invalid number of prefetch policy arguments",
		.too_many = "Too many prefetch policy arguments",
		.too_few = "Fewer prefetch policy arguments than announced",
	};
	struct dm_target *ti = t->ti;
	char **argv = as->argv;
	unsigned int n;
	int r;

	if (!dm_shift_arg(as)) {
		ti->error = "Missing prefetch policy";
		return -EINVAL;
	}
	r = read_count(as, &count, &n, &ti->error);
	if (r)
		return r;
	/* argv: name, count, pairs; hand over name and pairs. */
	argv[1] = argv[0];
	pf->argc = n + 1;
	pf->argv = argv + 1;
	as->argc -= n;
	as->argv += n;
	return 0;
}

static int make_prefetch(struct n2l_target *t, struct dm_arg_set *pf)
{
	struct dm_target *ti = t->ti;
	struct n2l_prefetch *p;

	t->knobs = n2l_mig_defaults;
	p = n2l_prefetch_create(pf->argc, pf->argv, ti->len >> N2L_SLOT_SHIFT,
				t->flash, &t->knobs, &ti->error);
	if (IS_ERR(p))
		return PTR_ERR(p);
	t->prefetch = p;
	return 0;
}

/*----------------------------------------------------------------*/

static int check_geometry(struct n2l_target *t)
{
	struct dm_target *ti = t->ti;

	if ((ti->begin | ti->len) & (N2L_SLOT_SECTORS - 1)) {
		ti->error = "Target start and length must be multiples of 8 sectors";
		return -EINVAL;
	}
	if ((ti->len >> N2L_SLOT_SHIFT) > U32_MAX) {
		ti->error = "Device too large: at most 2^32 slots";
		return -EINVAL;
	}
	if (!t->flash && !t->disk && !t->nr_servers) {
		ti->error = "No medium: give a flash device, a disk device or servers";
		return -EINVAL;
	}
	if (t->flash && t->disk && t->flash->bdev == t->disk->bdev) {
		ti->error = "Flash and disk must be different devices";
		return -EINVAL;
	}
	return 0;
}

static int parse_table(struct n2l_target *t, struct dm_arg_set *as)
{
	struct dm_target *ti = t->ti;
	struct dm_arg_set pf;
	int r;

	r = parse_medium(ti, as, &flash_errors, &t->flash);
	if (!r)
		r = parse_medium(ti, as, &disk_errors, &t->disk);
	if (!r)
		r = parse_slot_size(ti, as);
	if (!r)
		r = parse_features(t, as);
	if (!r)
		r = parse_servers(t, as);
	if (!r)
		r = parse_placement(t, as);
	if (!r)
		r = parse_prefetch(t, as, &pf);
	if (!r && as->argc) {
		ti->error = "Too many arguments";
		r = -EINVAL;
	}
	if (!r)
		r = check_geometry(t);
	if (!r)
		r = make_prefetch(t, &pf);
	return r;
}

/* Copes with a partly built target. */
static void target_destroy(struct n2l_target *t)
{
	if (t->store)
		n2l_store_put(t->store, t);
	n2l_placement_destroy(t->placement);
	n2l_prefetch_destroy(t->prefetch);
	memzero_explicit(t->psk, sizeof(t->psk));
	memzero_explicit(t->page_key, sizeof(t->page_key));
	if (t->flash)
		dm_put_device(t->ti, t->flash);
	if (t->disk)
		dm_put_device(t->ti, t->disk);
	if (t->meta)
		dm_put_device(t->ti, t->meta);
	kfree_sensitive(t);
}

int n2l_ctr(struct dm_target *ti, unsigned int argc, char **argv)
{
	struct dm_arg_set as = { .argc = argc, .argv = argv };
	struct n2l_target *t;
	int r;

	t = kzalloc(sizeof(*t), GFP_KERNEL);
	if (!t) {
		ti->error = "Cannot allocate nswap2l target";
		return -ENOMEM;
	}
	t->ti = ti;
	r = parse_table(t, &as);
	if (r)
		goto bad;
	t->store = n2l_store_get(t, &ti->error);
	if (IS_ERR(t->store)) {
		r = PTR_ERR(t->store);
		t->store = NULL;
		goto bad;
	}

	ti->private = t;
	ti->num_flush_bios = 2;
	ti->flush_supported = true;
	ti->num_discard_bios = 1;
	ti->discards_supported = true;
	ti->per_io_data_size = sizeof(struct n2l_io);
	n2l_want_stable_writes(ti);
	/*
	 * Not accounts_remapped_io: Network RAM bios, zero-filled reads and
	 * failed writes are completed here, never remapped, and must be
	 * accounted (in flight, completed, failed) all the same; dm starts
	 * the accounting when map returns, and a bio remapped later from the
	 * worker is not counted twice.
	 */
	return 0;

bad:
	target_destroy(t);
	return r;
}

void n2l_dtr(struct dm_target *ti)
{
	target_destroy(ti->private);
}
