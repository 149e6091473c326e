// SPDX-License-Identifier: GPL-2.0-only
#include "config.h"
#include "netaddr.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum opt_type { OPT_U64, OPT_PATH, OPT_LISTEN, OPT_PEER, OPT_BOOL, OPT_LEVEL, OPT_IDENTITY,
		OPT_GONE };

struct opt {
	const char *name;	/* key in the file; "--name" with '-' on the command line */
	enum opt_type type;
	size_t off;
	uint64_t min, max;
	const char *help;
};

#define U64(n, f, lo, hi, h) { n, OPT_U64, offsetof(struct config, f), lo, hi, h }
static const struct opt opts[] = {
	{ "listen", OPT_LISTEN, 0, 0, 0,
	  "ADDR:PORT  listen here: a.b.c.d:port or [v6]:port (repeatable; default " CFG_DEFAULT_LISTEN ")" },
	U64("min_mb", min_mb, 0, 1ULL << 40, "MB  never donate less than this"),
	U64("max_mb", max_mb, 0, 1ULL << 40, "MB  never donate more than this (0: no limit)"),
	U64("reserve_mb", reserve_mb, 0, 1ULL << 40, "MB  MemAvailable kept for the node itself (default 512)"),
	U64("interval_ms", interval_ms, 10, 3600000, "MS  how often capacity follows the node (default 1000)"),
	{ "peer", OPT_PEER, 0, 0, 0, "ADDR:PORT  a peer server to move pages to (repeatable)" },
	{ "psk_file", OPT_PATH, offsetof(struct config, psk_file), 0, 0,
	  "FILE  pre-shared keys: lines '<identity> <64 hex digits> [peer]', mode 600" },
	{ "identity", OPT_IDENTITY, 0, 0, 0,
	  "NAME  our identity towards our peers (its key is in our psk file)" },
	{ "insecure", OPT_BOOL, offsetof(struct config, insecure), 0, 0,
	  "run without psk_file: anyone who can connect may store and read pages" },
	{ "auth_token_file", OPT_GONE, 0, 0, 0, NULL },
	U64("auth_timeout_ms", auth_timeout_ms, 10, 3600000,
	    "MS  close connections not authenticated by then (default 3000)"),
	U64("max_conns", max_conns, 1, 1000000, "N  connections at most (default 512)"),
	U64("max_conns_per_addr", max_conns_per_addr, 1, 1000000,
	    "N  connections from one address (an IPv6 /64) at most (default 32)"),
	U64("max_unauth_conns", max_unauth_conns, 1, 1000000,
	    "N  connections not authenticated yet at most; a new one closes the busiest address's oldest (default 64)"),
	U64("client_quota_mb", client_quota_mb, 0, 1ULL << 40,
	    "MB  what one identity may store, over all its devices (0: no limit)"),
	U64("client_timeout_s", client_timeout_s, 1, 1ULL << 32, "S  drop a gone client's pages after this (default 3600)"),
	U64("unclaimed_timeout_s", unclaimed_timeout_s, 1, 1ULL << 32,
	    "S  drop pages a peer moved here that their client did not claim after this (default 60)"),
	U64("drain_timeout_s", drain_timeout_s, 1, 1ULL << 32, "S  give up draining after this (default 60)"),
	U64("request_timeout_s", request_timeout_s, 1, 3600, "S  timeout of our own requests (default 10)"),
	{ "log_level", OPT_LEVEL, 0, 0, 0, "LEVEL  error|warn|info|debug (default info)" },
	{ "meminfo", OPT_PATH, offsetof(struct config, meminfo), 0, 0, "FILE  read MemAvailable here (default /proc/meminfo)" },
	{ "require_mlock", OPT_BOOL, offsetof(struct config, require_mlock), 0, 0,
	  "exit (or refuse pages) if memory cannot be locked" },
	{ "prealloc", OPT_BOOL, offsetof(struct config, prealloc), 0, 0,
	  "map and lock min_mb at start and keep it: the donation never waits for the node's memory" },
};
#define NOPTS (sizeof(opts) / sizeof(opts[0]))

void config_usage(const char *prog)
{
	printf("usage: %s [options]\n\n"
	       "Nswap2L Network RAM page server. Every option is also a\n"
	       "\"key = value\" line of the config file (dashes or underscores);\n"
	       "the command line wins.\n\n"
	       "  --config FILE  read options from FILE (SIGHUP reads it again)\n",
	       prog);
	for (size_t i = 0; i < NOPTS; i++) {
		char name[64];

		if (!opts[i].help)
			continue;
		snprintf(name, sizeof(name), "%s", opts[i].name);
		for (char *p = name; *p; p++)
			if (*p == '_')
				*p = '-';
		printf("  --%s %s\n", name, opts[i].help);
	}
	printf("  --help  this text\n");
}

static void set_defaults(struct config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->reserve_mb = 512;
	cfg->interval_ms = 1000;
	cfg->client_timeout_s = 3600;
	cfg->unclaimed_timeout_s = 60;
	cfg->drain_timeout_s = 60;
	cfg->request_timeout_s = 10;
	cfg->auth_timeout_ms = 3000;
	cfg->max_conns = 512;
	cfg->max_conns_per_addr = 32;
	cfg->max_unauth_conns = 64;
	cfg->log_level = LOG_INFO;
	snprintf(cfg->meminfo, sizeof(cfg->meminfo), "/proc/meminfo");
}

/* "max-mb" and "max_mb" are the same key. */
static const struct opt *find_opt(const char *name)
{
	char norm[64];
	size_t n = strlen(name);

	if (n >= sizeof(norm))
		return NULL;
	for (size_t i = 0; i <= n; i++)
		norm[i] = name[i] == '-' ? '_' : name[i];
	for (size_t i = 0; i < NOPTS; i++)
		if (!strcmp(opts[i].name, norm))
			return &opts[i];
	return NULL;
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno || *end ? -1 : 0;
}

static int parse_bool(const char *s, bool *v)
{
	static const char *const yes[] = { "1", "yes", "true", "on" };
	static const char *const no[] = { "0", "no", "false", "off" };

	for (int i = 0; i < 4; i++) {
		if (!strcasecmp(s, yes[i])) {
			*v = true;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*v = false;
			return 0;
		}
	}
	return -1;
}

/* where: "FILE:LINE" or "command line", for messages */
static int set_opt(struct config *cfg, const struct opt *o, const char *val,
		   const char *where, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	uint64_t v;

	switch (o->type) {
	case OPT_U64:
		if (parse_u64(val, &v) || v < o->min || v > o->max) {
			snprintf(err, errlen, "%s: %s: '%s' is not a number in %llu..%llu",
				 where, o->name, val, (unsigned long long)o->min,
				 (unsigned long long)o->max);
			return -1;
		}
		*(uint64_t *)((char *)cfg + o->off) = v;
		return 0;
	case OPT_PATH:
		if (!*val || strlen(val) >= PATH_MAX) {
			snprintf(err, errlen, "%s: %s: bad path '%s'", where, o->name, val);
			return -1;
		}
		snprintf((char *)cfg + o->off, PATH_MAX, "%s", val);
		return 0;
	case OPT_LISTEN:
		if (netaddr_parse(val, true, &ss, &sl)) {
			snprintf(err, errlen, "%s: listen: '%s' is not a.b.c.d:port or [v6]:port",
				 where, val);
			return -1;
		}
		if (cfg->nlisten >= CFG_MAX_LISTEN) {
			snprintf(err, errlen, "%s: more than %d listen addresses", where, CFG_MAX_LISTEN);
			return -1;
		}
		snprintf(cfg->listen[cfg->nlisten++], N2L_ADDR_LEN, "%s", val);
		return 0;
	case OPT_PEER:
		if (netaddr_parse(val, false, &ss, &sl)) {
			snprintf(err, errlen, "%s: peer: '%s' is not a.b.c.d:port or [v6]:port",
				 where, val);
			return -1;
		}
		for (unsigned int i = 0; i < cfg->npeers; i++) {
			if (!strcmp(cfg->peers[i], val)) {
				snprintf(err, errlen, "%s: peer %s given twice", where, val);
				return -1;
			}
		}
		if (cfg->npeers >= CFG_MAX_PEERS) {
			snprintf(err, errlen, "%s: more than %d peers", where, CFG_MAX_PEERS);
			return -1;
		}
		snprintf(cfg->peers[cfg->npeers++], N2L_ADDR_LEN, "%s", val);
		return 0;
	case OPT_BOOL:
		if (parse_bool(val, (bool *)((char *)cfg + o->off))) {
			snprintf(err, errlen, "%s: %s: '%s' is not yes or no", where, o->name, val);
			return -1;
		}
		return 0;
	case OPT_IDENTITY:
		if (!*val || strlen(val) > N2L_ID_LEN) {
			snprintf(err, errlen, "%s: identity: 1 to %d bytes", where, N2L_ID_LEN);
			return -1;
		}
		for (const char *p = val; *p; p++) {
			if (!isgraph((unsigned char)*p)) {
				snprintf(err, errlen, "%s: identity: printable characters only", where);
				return -1;
			}
		}
		snprintf(cfg->identity, sizeof(cfg->identity), "%s", val);
		return 0;
	case OPT_GONE:
		snprintf(err, errlen, "%s: %s was replaced by psk_file (per-identity keys, see nswapd.conf.example)",
			 where, o->name);
		return -1;
	case OPT_LEVEL:
		if (log_level_parse(val, &cfg->log_level)) {
			snprintf(err, errlen, "%s: log_level: '%s' is not error, warn, info or debug",
				 where, val);
			return -1;
		}
		return 0;
	}
	return -1;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = 0;
	return s;
}

static int load_file(struct config *cfg, const char *path, char *err, size_t errlen)
{
	char line[4096], where[PATH_MAX + 32];
	FILE *f = fopen(path, "re");
	int lineno = 0, rc = 0;

	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char *s, *eq, *key, *val;
		const struct opt *o;

		lineno++;
		snprintf(where, sizeof(where), "%s:%d", path, lineno);
		if (!strchr(line, '\n') && !feof(f)) {
			snprintf(err, errlen, "%s: line too long", where);
			rc = -1;
			break;
		}
		s = trim(line);
		if (!*s || *s == '#')
			continue;
		eq = strchr(s, '=');
		if (!eq) {
			snprintf(err, errlen, "%s: expected 'key = value'", where);
			rc = -1;
			break;
		}
		*eq = 0;
		key = trim(s);
		val = trim(eq + 1);
		o = find_opt(key);
		if (!o) {
			snprintf(err, errlen, "%s: unknown key '%s'", where, key);
			rc = -1;
			break;
		}
		if (set_opt(cfg, o, val, where, err, errlen)) {
			rc = -1;
			break;
		}
	}
	if (!rc && ferror(f)) {
		snprintf(err, errlen, "%s: read error", path);
		rc = -1;
	}
	fclose(f);
	return rc;
}

int config_load(struct config *cfg, int argc, char *const argv[],
		char *err, size_t errlen)
{
	const char *config_file = NULL;
	bool cl_listen = false, cl_peer = false;
	int i;

	set_defaults(cfg);
	/* Pass 1: --help and --config. */
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return CONFIG_HELP;
		if (!strcmp(argv[i], "--config")) {
			if (i + 1 >= argc) {
				snprintf(err, errlen, "--config needs a value");
				return CONFIG_ERROR;
			}
			config_file = argv[++i];
		} else if (!strncmp(argv[i], "--config=", 9)) {
			config_file = argv[i] + 9;
		}
	}
	if (config_file) {
		if (!*config_file || strlen(config_file) >= PATH_MAX) {
			snprintf(err, errlen, "--config: bad path");
			return CONFIG_ERROR;
		}
		snprintf(cfg->config_file, sizeof(cfg->config_file), "%s", config_file);
		if (load_file(cfg, config_file, err, errlen))
			return CONFIG_ERROR;
	}
	/* Pass 2: the command line wins. */
	for (i = 1; i < argc; i++) {
		const char *arg = argv[i], *val = NULL;
		char name[64];
		const struct opt *o;
		const char *eq;
		size_t nl;

		if (strncmp(arg, "--", 2)) {
			snprintf(err, errlen, "unexpected argument '%s'", arg);
			return CONFIG_ERROR;
		}
		arg += 2;
		eq = strchr(arg, '=');
		nl = eq ? (size_t)(eq - arg) : strlen(arg);
		if (nl >= sizeof(name)) {
			snprintf(err, errlen, "unknown option '%s'", argv[i]);
			return CONFIG_ERROR;
		}
		memcpy(name, arg, nl);
		name[nl] = 0;
		if (!strcmp(name, "config")) {
			if (!eq)
				i++;
			continue;
		}
		o = find_opt(name);
		if (!o || strchr(name, '_')) {
			snprintf(err, errlen, "unknown option '%s' (try --help)", argv[i]);
			return CONFIG_ERROR;
		}
		if (o->type == OPT_BOOL && !eq) {
			*(bool *)((char *)cfg + o->off) = true;
			continue;
		}
		if (eq) {
			val = eq + 1;
		} else if (i + 1 < argc) {
			val = argv[++i];
		} else {
			snprintf(err, errlen, "option --%s needs a value", name);
			return CONFIG_ERROR;
		}
		if (o->type == OPT_LISTEN && !cl_listen) {
			cl_listen = true;
			cfg->nlisten = 0;
		}
		if (o->type == OPT_PEER && !cl_peer) {
			cl_peer = true;
			cfg->npeers = 0;
		}
		if (set_opt(cfg, o, val, "command line", err, errlen))
			return CONFIG_ERROR;
	}
	if (!cfg->nlisten)
		snprintf(cfg->listen[cfg->nlisten++], N2L_ADDR_LEN, CFG_DEFAULT_LISTEN);
	if (cfg->max_mb && cfg->min_mb > cfg->max_mb) {
		snprintf(err, errlen, "min_mb (%llu) is above max_mb (%llu)",
			 (unsigned long long)cfg->min_mb, (unsigned long long)cfg->max_mb);
		return CONFIG_ERROR;
	}
	if (!cfg->psk_file[0] && !cfg->insecure) {
		snprintf(err, errlen, "no psk_file: give --psk-file FILE, or --insecure to run without authentication");
		return CONFIG_ERROR;
	}
	if (cfg->psk_file[0] && cfg->insecure) {
		snprintf(err, errlen, "--insecure and psk_file exclude each other");
		return CONFIG_ERROR;
	}
	if (cfg->identity[0] && !cfg->psk_file[0]) {
		snprintf(err, errlen, "identity needs a psk_file with its key");
		return CONFIG_ERROR;
	}
	if (cfg->npeers && cfg->psk_file[0] && !cfg->identity[0]) {
		snprintf(err, errlen, "peers with a psk_file need --identity (ours, with its key in the file)");
		return CONFIG_ERROR;
	}
	return CONFIG_OK;
}
