// SPDX-License-Identifier: GPL-2.0-only
/*
 * The keys of a configuration: its psk file (none with --insecure), which
 * must hold our own --identity if we have peers to authenticate to.
 */
#include "server.h"

#include <stdio.h>
#include <string.h>

int keys_load(const struct config *cfg, struct psk_table *keys, char *err, size_t errlen)
{
	char id[N2L_ID_LEN] = { 0 };

	memset(keys, 0, sizeof(*keys));
	if (!cfg->psk_file[0])
		return 0;
	if (psk_load(keys, cfg->psk_file, err, errlen))
		return -1;
	if (!cfg->identity[0])
		return 0;
	memcpy(id, cfg->identity, strnlen(cfg->identity, N2L_ID_LEN));
	if (!psk_find(keys, id)) {
		snprintf(err, errlen, "psk file %s: our --identity is not in it", cfg->psk_file);
		psk_free(keys);
		return -1;
	}
	return 0;
}
