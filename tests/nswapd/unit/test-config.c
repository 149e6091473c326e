// SPDX-License-Identifier: GPL-2.0-only
/* Options, config files, psk files, and the capacity formula. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server.h"
#include "unit.h"

static char last_err[512];

/* Without --psk-file, --insecure is added (nswapd refuses to start else). */
static int load(struct config *cfg, char **argv)
{
	char *args[32];
	int argc = 0;
	bool psk = false;

	while (argv[argc] && argc < 30) {
		psk |= !strcmp(argv[argc], "--psk-file");
		args[argc] = argv[argc];
		argc++;
	}
	if (!psk)
		args[argc++] = "--insecure";
	args[argc] = NULL;
	return config_load(cfg, argc, args, last_err, sizeof(last_err));
}

static char *tmpfile_with(const char *text, size_t len)
{
	static char path[64];
	int fd;

	snprintf(path, sizeof(path), "/tmp/nswapd-unit-XXXXXX");
	fd = mkstemp(path);
	if (write(fd, text, len) != (ssize_t)len)
		path[0] = 0;
	close(fd);
	return path;
}

TEST(config_defaults_and_command_line)
{
	struct config cfg;
	char *a[] = { "nswapd", NULL };
	char *b[] = { "nswapd", "--max-mb", "64", "--min-mb=8", "--peer", "10.0.0.1:7077",
		      "--peer", "[fe80::1]:9", "--listen", "127.0.0.1:0", "--require-mlock",
		      "--log-level", "debug", "--unclaimed-timeout-s", "5", NULL };

	CHECK_EQ(load(&cfg, a), CONFIG_OK);
	CHECK_EQ(cfg.nlisten, 1);
	CHECK(!strcmp(cfg.listen[0], CFG_DEFAULT_LISTEN));
	CHECK_EQ(cfg.interval_ms, 1000);
	CHECK_EQ(cfg.client_timeout_s, 3600);
	CHECK_EQ(cfg.unclaimed_timeout_s, 60);
	CHECK_EQ(cfg.drain_timeout_s, 60);
	CHECK(cfg.insecure && !cfg.require_mlock && !cfg.prealloc);
	CHECK_EQ(cfg.max_conns, 512);
	CHECK_EQ(cfg.max_conns_per_addr, 32);
	CHECK_EQ(cfg.max_unauth_conns, 64);
	CHECK_EQ(cfg.auth_timeout_ms, 3000);
	CHECK_EQ(cfg.client_quota_mb, 0);
	CHECK_EQ(load(&cfg, b), CONFIG_OK);
	CHECK_EQ(cfg.max_mb, 64);
	CHECK_EQ(cfg.min_mb, 8);
	CHECK_EQ(cfg.npeers, 2);
	CHECK(!strcmp(cfg.peers[1], "[fe80::1]:9"));
	CHECK(cfg.require_mlock);
	CHECK_EQ(cfg.log_level, LOG_DEBUG);
	CHECK_EQ(cfg.unclaimed_timeout_s, 5);
}

TEST(config_bad_options)
{
	struct config cfg;
	char *bad[][4] = {
		{ "nswapd", "--nope", NULL }, { "nswapd", "--max-mb", "-1", NULL },
		{ "nswapd", "--max-mb", NULL }, { "nswapd", "--interval-ms", "5", NULL },
		{ "nswapd", "--peer", "host:1", NULL }, { "nswapd", "--peer", "1.2.3.4:0", NULL },
		{ "nswapd", "--listen", "1.2.3.4:65536", NULL }, { "nswapd", "--listen", "[::1]9", NULL },
		{ "nswapd", "stray", NULL }, { "nswapd", "--max_mb", "3", NULL },
		{ "nswapd", "--require-mlock=maybe", NULL },
	};

	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_EQ(load(&cfg, bad[i]), CONFIG_ERROR);
}

TEST(config_file_and_precedence)
{
	const char *text = "# nswapd\n\n  max_mb = 32\nmin-mb=4\npeer = 1.1.1.1:1\npeer = 2.2.2.2:2\n"
			   "require_mlock = yes\nprealloc = yes\nlog_level = warn\n";
	char path[64], *argv[] = { "nswapd", "--config", path, "--max-mb", "16", "--peer", "3.3.3.3:3", NULL };
	struct config cfg;

	snprintf(path, sizeof(path), "%s", tmpfile_with(text, strlen(text)));
	CHECK_EQ(load(&cfg, argv), CONFIG_OK);
	CHECK_EQ(cfg.max_mb, 16);
	CHECK_EQ(cfg.min_mb, 4);
	CHECK_EQ(cfg.npeers, 1);	/* the command line's list replaces the file's */
	CHECK(!strcmp(cfg.peers[0], "3.3.3.3:3"));
	CHECK(cfg.require_mlock && cfg.prealloc);
	CHECK_EQ(cfg.log_level, LOG_WARN);
	unlink(path);
}

TEST(config_file_errors)
{
	static const char *const bad[] = {
		"max_mb 3\n", "what = 1\n", "max_mb = 1x\n", "min_mb = 9\nmax_mb = 8\n",
		"peer = 1.2.3.4:5\npeer = 1.2.3.4:5\n", "require_mlock = perhaps\n",
	};

	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char path[64], *argv[] = { "nswapd", "--config", path, NULL };
		struct config cfg;

		snprintf(path, sizeof(path), "%s", tmpfile_with(bad[i], strlen(bad[i])));
		CHECK_EQ(load(&cfg, argv), CONFIG_ERROR);
		unlink(path);
	}
}

TEST(config_auth_options)
{
	struct config cfg;
	char *none[] = { "nswapd", NULL };
	char *token[] = { "nswapd", "--auth-token-file", "/x", NULL };
	char *both[] = { "nswapd", "--psk-file", "/x", "--insecure", NULL };
	char *ident[] = { "nswapd", "--identity", "me", NULL };
	char *id_long[] = { "nswapd", "--psk-file", "/x", "--identity",
			    "0123456789012345678901234567890123456789012345678901234567890123X", NULL };
	char *peers[] = { "nswapd", "--psk-file", "/x", "--peer", "1.2.3.4:5", NULL };
	char *ok[] = { "nswapd", "--psk-file", "/x", "--identity", "me", "--peer", "1.2.3.4:5",
		       "--max-conns", "9", "--max-conns-per-addr", "3", "--auth-timeout-ms", "250",
		       "--client-quota-mb", "7", "--max-unauth-conns", "5", NULL };

	CHECK_EQ(config_load(&cfg, 1, none, last_err, sizeof(last_err)), CONFIG_ERROR);
	CHECK(strstr(last_err, "--insecure"));
	CHECK_EQ(load(&cfg, token), CONFIG_ERROR);
	CHECK(strstr(last_err, "replaced by psk_file"));
	CHECK_EQ(load(&cfg, both), CONFIG_ERROR);
	CHECK_EQ(load(&cfg, ident), CONFIG_ERROR);
	CHECK_EQ(load(&cfg, id_long), CONFIG_ERROR);
	CHECK_EQ(load(&cfg, peers), CONFIG_ERROR);
	CHECK(strstr(last_err, "--identity"));
	CHECK_EQ(load(&cfg, ok), CONFIG_OK);
	CHECK(!strcmp(cfg.identity, "me") && !strcmp(cfg.psk_file, "/x") && !cfg.insecure);
	CHECK_EQ(cfg.max_conns, 9);
	CHECK_EQ(cfg.max_conns_per_addr, 3);
	CHECK_EQ(cfg.max_unauth_conns, 5);
	CHECK_EQ(cfg.auth_timeout_ms, 250);
	CHECK_EQ(cfg.client_quota_mb, 7);
}

static int psk_text(struct psk_table *t, const char *text, int mode, char *err, size_t errlen)
{
	char path[64];
	int rc;

	snprintf(path, sizeof(path), "%s", tmpfile_with(text, strlen(text)));
	chmod(path, (mode_t)mode);
	rc = psk_load(t, path, err, errlen);
	unlink(path);
	return rc;
}

TEST(psk_file_good)
{
	const char *text = "# keys\n\n  alice 5f1e3a9c07d2b84e61a3f0c95d27e8b4139a6c0fd5827be4A06C31F98D4E27B5\n"
			   "srv-b\tc39e05b7a2f4186d3b0e9c57f12a84d6e0b9734f28c65a1d97e3b06fc4185a2e  peer # b\n";
	struct psk_table t;
	char err[256], id[N2L_ID_LEN] = "alice";
	const struct psk_entry *e;

	CHECK_EQ(psk_text(&t, "# only a comment", 0600, err, sizeof(err)), -1);
	CHECK(strstr(err, "no identities"));
	/* "# b" after peer is a fourth word: refused */
	CHECK_EQ(psk_text(&t, text, 0600, err, sizeof(err)), -1);
	CHECK(strstr(err, ":4: "));
	text = "# keys\n\n  alice 5f1e3a9c07d2b84e61a3f0c95d27e8b4139a6c0fd5827be4A06C31F98D4E27B5\n"
	       "srv-b\tc39e05b7a2f4186d3b0e9c57f12a84d6e0b9734f28c65a1d97e3b06fc4185a2e  peer\n";
	CHECK_EQ(psk_text(&t, text, 0600, err, sizeof(err)), 0);
	CHECK_EQ(t.n, 2);
	e = psk_find(&t, id);
	CHECK(e && !e->peer && e->key[0] == 0x5f && e->key[31] == 0xb5);
	memset(id, 0, sizeof(id));
	memcpy(id, "srv-b", 5);
	e = psk_find(&t, id);
	CHECK(e && e->peer && e->key[5] == 0xf4);
	id[5] = 'x';
	CHECK(!psk_find(&t, id));
	psk_free(&t);
	CHECK_EQ(psk_text(&t, text, 0640, err, sizeof(err)), -1);
	CHECK(strstr(err, "chmod 600"));
	CHECK_EQ(psk_text(&t, text, 0604, err, sizeof(err)), -1);
	CHECK_EQ(psk_load(&t, "/nonexistent/psk", err, sizeof(err)), -1);
}

TEST(psk_file_errors_name_the_line)
{
	static const char *const bad[][2] = {
		{ "alice\n", ":1: expected" },
		{ "\n# x\nalice 0011\n", ":3: the key is not 64 hex digits" },
		{ "alice 5f1e3a9c07d2b84e61a3f0c95d27e8b4139a6c0fd5827be4a06c31f98d4e27bg\n", ":1: the key" },
		{ "alice 5f1e3a9c07d2b84e61a3f0c95d27e8b4139a6c0fd5827be4a06c31f98d4e27b5 client\n", ":1: third word" },
		{ "a 5f1e3a9c07d2b84e61a3f0c95d27e8b4139a6c0fd5827be4a06c31f98d4e27b5\n"
		  "a 5f1e3a9c07d2b84e61a3f0c95d27e8b4139a6c0fd5827be4a06c31f98d4e27b5\n", ":2: identity listed twice" },
	};
	struct psk_table t;
	char err[256];

	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CHECK_EQ(psk_text(&t, bad[i][0], 0600, err, sizeof(err)), -1);
		CHECK(strstr(err, bad[i][1]));
		CHECK(!strstr(err, "1e3a9c07d2"));	/* never the key */
		CHECK_EQ(t.n, 0);
	}
}

/* The file, the line, why, and the command that makes a good key; never the key. */
TEST(psk_file_refuses_weak_keys)
{
	static const char *const weak[][2] = {
		{ "0000000000000000000000000000000000000000000000000000000000000000",
		  "(its bytes take 8 or fewer distinct values)" },
		{ "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
		  "(the steps between neighbouring bytes take 8 or fewer distinct values)" },
		{ "6769dd1d41f41557db7cd1670e7149426769dd1d41f41557db7cd1670e714942",
		  "(it repeats itself every 16 bytes or fewer)" },
	};
	struct psk_table t;
	char text[256], err[512];

	for (unsigned int i = 0; i < sizeof(weak) / sizeof(weak[0]); i++) {
		snprintf(text, sizeof(text),
			 "alice 5f1e3a9c07d2b84e61a3f0c95d27e8b4139a6c0fd5827be4a06c31f98d4e27b5\n"
			 "bob %s peer\n", weak[i][0]);
		CHECK_EQ(psk_text(&t, text, 0600, err, sizeof(err)), -1);
		CHECK(strstr(err, ":2: the key is too weak "));
		CHECK(strstr(err, weak[i][1]));
		CHECK(strstr(err, "head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n'"));
		CHECK(!strstr(err, weak[i][0] + 8));
		CHECK_EQ(t.n, 0);
	}
}

TEST(capacity_formula)
{
	struct config cfg;
	char *a[] = { "nswapd", "--reserve-mb", "100", NULL };

	load(&cfg, a);
	/* MemAvailable 300 MB, reserve 100: 200 MB more than used */
	CHECK_EQ(capacity_target(1000, 300 * 1024, &cfg), 1000 + 200 * 256);
	/* short of the reserve: below used */
	CHECK_EQ(capacity_target(1000, 99 * 1024, &cfg), 1000 - 256);
	CHECK_EQ(capacity_target(100, 50 * 1024, &cfg), 0);
	cfg.min_mb = 1;
	CHECK_EQ(capacity_target(100, 50 * 1024, &cfg), 256);
	cfg.max_mb = 2;
	CHECK_EQ(capacity_target(0, 1 << 30, &cfg), 512);
	cfg.max_mb = 0;
	CHECK_EQ(capacity_target(0, UINT64_MAX, &cfg), UINT64_MAX / 4 - 100 * 256);
	CHECK_EQ(capacity_target(UINT64_MAX - 5, UINT64_MAX, &cfg), UINT64_MAX);
}

TEST(meminfo_parse)
{
	const char *text = "MemTotal:  1000 kB\nMemFree:   500 kB\nMemAvailable:   777 kB\n";
	char path[64];
	uint64_t kb = 0;

	snprintf(path, sizeof(path), "%s", tmpfile_with(text, strlen(text)));
	CHECK_EQ(meminfo_avail_kb(path, &kb), 0);
	CHECK_EQ(kb, 777);
	unlink(path);
	snprintf(path, sizeof(path), "%s", tmpfile_with("MemFree: 5 kB\n", 14));
	CHECK_EQ(meminfo_avail_kb(path, &kb), -1);
	unlink(path);
	CHECK_EQ(meminfo_avail_kb("/nonexistent/meminfo", &kb), -1);
}
