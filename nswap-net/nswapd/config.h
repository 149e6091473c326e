/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Options: defaults, then "key = value" lines of --config FILE, then the
 * command line (which wins; a repeatable option given on the command line
 * replaces the file's list). SIGHUP loads the same way again.
 */
#ifndef NSWAPD_CONFIG_H
#define NSWAPD_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../n2l-proto.h"
#include "log.h"

#define CFG_MAX_LISTEN	8
#define CFG_MAX_PEERS	16
#define CFG_DEFAULT_LISTEN	"[::]:7077"

struct config {
	char listen[CFG_MAX_LISTEN][N2L_ADDR_LEN];
	unsigned int nlisten;
	char peers[CFG_MAX_PEERS][N2L_ADDR_LEN];
	unsigned int npeers;
	char config_file[PATH_MAX];
	char psk_file[PATH_MAX];
	char identity[N2L_ID_LEN + 1];	/* ours, towards peers */
	char meminfo[PATH_MAX];
	uint64_t min_mb, max_mb, reserve_mb;	/* max_mb 0: no upper bound */
	uint64_t interval_ms;
	uint64_t client_timeout_s, unclaimed_timeout_s;
	uint64_t drain_timeout_s, request_timeout_s;
	uint64_t max_conns, max_conns_per_addr, max_unauth_conns, auth_timeout_ms;
	uint64_t client_quota_mb;
	enum log_level log_level;
	bool require_mlock;
	bool prealloc;		/* min_mb mapped and locked from the start */
	bool insecure;		/* no psk_file: no authentication, on purpose */
};

enum { CONFIG_OK = 0, CONFIG_HELP = 1, CONFIG_ERROR = -1 };

/* Fills cfg from defaults, the config file and argv; err gets a message. */
int config_load(struct config *cfg, int argc, char *const argv[],
		char *err, size_t errlen);
void config_usage(const char *prog);

#endif
