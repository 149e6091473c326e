// SPDX-License-Identifier: GPL-2.0-only
/*
 * One line of a trace, as the producers print nswap2l's tracepoints:
 *
 *   tracefs (trace, trace_pipe):
 *     n2l-pattern-123 [000] ..... 1234.567890: nswap2l_write: dev=254:0 ...
 *   trace-cmd report:
 *     n2l-pattern-123 [000]  1234.567890: nswap2l_write:  dev=254:0 ...
 *   perf script:
 *     n2l-pattern   123 [000]  1234.567890: nswap2l:nswap2l_write: dev=...
 *
 * The event name is the anchor: the timestamp is the nearest word before
 * it that ends in ':' (perf may put a sample count in between), and the
 * fields after it are the TP_printk() key=value pairs, each required once.
 * A line without an nswap2l event name is not ours; one with a name that
 * does not parse completely is malformed.
 */
#include <errno.h>

#include "sim.h"

#define SYSTEM_PREFIX	"nswap2l:"	/* perf script: <system>:<event> */

static const char *const ev_names[] = {
	[SIM_EV_WRITE] = "nswap2l_write",
	[SIM_EV_READ] = "nswap2l_read",
	[SIM_EV_FREE] = "nswap2l_free",
	[SIM_EV_MIGRATE] = "nswap2l_migrate",
};

enum field_kind {
	F_DEV,			/* <major>:<minor> */
	F_U32,
	F_MEDIUM,		/* show_n2l_medium() */
};

struct field {
	const char *key;
	enum field_kind kind;
	size_t off;		/* in struct sim_event */
};

/* TP_printk of the nswap2l_slots class: write, read, free. */
static const struct field slot_fields[] = {
	{ "dev", F_DEV, offsetof(struct sim_event, dev) },
	{ "slot", F_U32, offsetof(struct sim_event, slot) },
	{ "nr", F_U32, offsetof(struct sim_event, nr) },
	{ "medium", F_MEDIUM, offsetof(struct sim_event, medium) },
};

/* TP_printk of nswap2l_migrate. */
static const struct field migrate_fields[] = {
	{ "dev", F_DEV, offsetof(struct sim_event, dev) },
	{ "slot", F_U32, offsetof(struct sim_event, slot) },
	{ "nr", F_U32, offsetof(struct sim_event, nr) },
	{ "moved", F_U32, offsetof(struct sim_event, moved) },
	{ "from", F_MEDIUM, offsetof(struct sim_event, from) },
	{ "to", F_MEDIUM, offsetof(struct sim_event, to) },
};

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' ||
	       c == '\v' || c == '\f';
}

static bool is_ident(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_';
}

static bool word_starts(const char *line, const char *p)
{
	return p == line || is_blank(p[-1]);
}

/*
 * The first "nswap2l_<event>" standing as a word of its own, or right
 * after "nswap2l:"; in @head, where the words before it end.
 */
static const char *find_event(const char *line, u8 *type, const char **head)
{
	size_t plen = strlen(SYSTEM_PREFIX), len;
	const char *p;
	u8 t;

	for (p = strstr(line, "nswap2l_"); p; p = strstr(p + 1, "nswap2l_")) {
		for (t = 0; t < ARRAY_SIZE(ev_names); t++) {
			len = strlen(ev_names[t]);
			if (strncmp(p, ev_names[t], len) || is_ident(p[len]))
				continue;
			*head = p;
			if ((size_t)(p - line) >= plen &&
			    !memcmp(p - plen, SYSTEM_PREFIX, plen))
				*head = p - plen;
			if (!word_starts(line, *head))
				continue;
			*type = t;
			return p;
		}
	}
	return NULL;
}

/* The timestamp: the nearest word before @end that ends in ':'. */
static int parse_stamp(const char *line, const char *end, u64 *ns)
{
	const char *tok;
	u64 count;

	for (;;) {
		while (end > line && is_blank(end[-1]))
			end--;
		if (end == line)
			return -EINVAL;
		tok = end;
		while (tok > line && !is_blank(tok[-1]))
			tok--;
		if (end[-1] == ':')
			return sim_parse_time(tok, (size_t)(end - tok) - 1, ns);
		/* perf script may print a sample count before the event */
		if (sim_parse_u64(tok, (size_t)(end - tok), UINT64_MAX, &count))
			return -EINVAL;
		end = tok;
	}
}

static int parse_medium(const char *s, size_t len, u8 *out)
{
	u8 m;

	for (m = 0; m < N2L_NR_MEDIA; m++) {
		if (strlen(n2l_medium_name(m)) == len &&
		    !memcmp(s, n2l_medium_name(m), len)) {
			*out = m;
			return 0;
		}
	}
	return -EINVAL;
}

static int parse_value(const struct field *f, const char *s, size_t len,
		       struct sim_event *ev)
{
	void *dst = (char *)ev + f->off;

	switch (f->kind) {
	case F_DEV:
		return sim_parse_dev(s, len, dst);
	case F_U32:
		return sim_parse_u32(s, len, dst);
	default:
		return parse_medium(s, len, dst);
	}
}

/* Every key=value word of @p, each field once; NULL or what is wrong. */
static const char *parse_fields(const char *p, struct sim_event *ev)
{
	const struct field *fields = slot_fields, *f;
	size_t n = ARRAY_SIZE(slot_fields), i, klen, len;
	u32 seen = 0;
	const char *eq;

	if (ev->type == SIM_EV_MIGRATE) {
		fields = migrate_fields;
		n = ARRAY_SIZE(migrate_fields);
	}
	for (;;) {
		while (is_blank(*p))
			p++;
		if (!*p)
			break;
		for (len = 0; p[len] && !is_blank(p[len]); len++)
			;
		eq = memchr(p, '=', len);
		klen = eq ? (size_t)(eq - p) : len;
		for (i = 0, f = NULL; i < n && !f; i++)
			if (strlen(fields[i].key) == klen &&
			    !memcmp(p, fields[i].key, klen))
				f = &fields[i];
		if (!f || !eq)
			return "unknown field";
		if (seen & (1U << (f - fields)))
			return "field given twice";
		if (parse_value(f, eq + 1, len - klen - 1, ev))
			return "bad field value";
		seen |= 1U << (f - fields);
		p += len;
	}
	return seen == (1U << n) - 1 ? NULL : "missing field";
}

/* What is wrong with the event named at @p, or NULL. */
static const char *parse_event(const char *line, const char *head,
			       const char *p, struct sim_event *ev)
{
	const char *why;

	if (*p != ':')
		return "no ':' after the event name";
	if (parse_stamp(line, head, &ev->ns))
		return "no timestamp before the event name";
	why = parse_fields(p + 1, ev);
	if (why)
		return why;
	if ((u64)ev->slot + ev->nr > (u64)U32_MAX + 1)
		return "slot range past 2^32";
	if (ev->type == SIM_EV_MIGRATE && ev->moved > ev->nr)
		return "moved more slots than nr";
	return NULL;
}

enum sim_line sim_parse_line(const char *line, struct sim_event *ev,
			     const char **why)
{
	const char *name, *head;
	u8 type;

	while (is_blank(*line))
		line++;
	if (*line == '#')
		return SIM_LINE_OTHER;
	name = find_event(line, &type, &head);
	if (!name)
		return SIM_LINE_OTHER;
	memset(ev, 0, sizeof(*ev));
	ev->type = type;
	*why = parse_event(line, head, name + strlen(ev_names[type]), ev);
	return *why ? SIM_LINE_BAD : SIM_LINE_EVENT;
}
