// SPDX-License-Identifier: GPL-2.0-only
/*
 * nswapd: the Nswap2L Network RAM page server. See n2l-proto.h for the
 * protocol and nswapd.conf.example for the options.
 */
#include "server.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	struct server *srv;
	struct config cfg;
	struct psk_table keys;
	char err[512];
	int rc;

	rc = config_load(&cfg, argc, argv, err, sizeof(err));
	if (rc == CONFIG_HELP) {
		config_usage(argv[0]);
		return 0;
	}
	if (rc != CONFIG_OK) {
		fprintf(stderr, "error: %s\n", err);
		return 2;
	}
	if (keys_load(&cfg, &keys, err, sizeof(err))) {
		fprintf(stderr, "error: %s\n", err);
		return 2;
	}
	srv = malloc(sizeof(*srv));
	if (!srv || server_init(srv, &cfg, POOL_CHUNK_PAGES, true)) {
		fprintf(stderr, "error: out of memory or no random bytes\n");
		psk_free(&keys);
		return 1;
	}
	server_set_keys(srv, &keys);
	if (cfg.insecure)
		log_warn(&srv->log, "--insecure: no authentication; anyone who can connect may store, read and drop pages");
	srv->argc = argc;
	srv->argv = argv;
	if (cfg.require_mlock && pool_reserve(&srv->store.pool, 1)) {
		log_err(&srv->log, "--require-mlock: cannot lock page memory");
		server_destroy(srv);
		free(srv);
		return 1;
	}
	if (cfg.prealloc && server_prealloc(srv)) {
		server_destroy(srv);
		free(srv);
		return 1;
	}
	if (loop_init(srv)) {
		loop_fini(srv);
		server_destroy(srv);
		free(srv);
		return 1;
	}
	server_capacity_update(srv);
	log_info(&srv->log, "nswapd started: capacity %" PRIu64 " pages, %u peers, %zu identities%s",
		 srv->store.capacity, srv->npeers, srv->psk.n, cfg.insecure ? " (insecure)" : "");
	rc = loop_run(srv);
	log_info(&srv->log, "exiting with status %d", rc);
	loop_fini(srv);
	server_destroy(srv);
	free(srv);
	return rc;
}
