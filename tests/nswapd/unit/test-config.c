// SPDX-License-Identifier: GPL-2.0-only
/* Options, config files, tokens, and the capacity formula. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server.h"
#include "unit.h"

static int load(struct config *cfg, char **argv)
{
	char err[512];
	int argc = 0;

	while (argv[argc])
		argc++;
	return config_load(cfg, argc, argv, err, sizeof(err));
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
		      "--log-level", "debug", NULL };

	CHECK_EQ(load(&cfg, a), CONFIG_OK);
	CHECK_EQ(cfg.nlisten, 1);
	CHECK(!strcmp(cfg.listen[0], CFG_DEFAULT_LISTEN));
	CHECK_EQ(cfg.interval_ms, 1000);
	CHECK_EQ(cfg.client_timeout_s, 3600);
	CHECK_EQ(cfg.drain_timeout_s, 60);
	CHECK(!cfg.have_token && !cfg.require_mlock && !cfg.prealloc);
	CHECK_EQ(load(&cfg, b), CONFIG_OK);
	CHECK_EQ(cfg.max_mb, 64);
	CHECK_EQ(cfg.min_mb, 8);
	CHECK_EQ(cfg.npeers, 2);
	CHECK(!strcmp(cfg.peers[1], "[fe80::1]:9"));
	CHECK(cfg.require_mlock);
	CHECK_EQ(cfg.log_level, LOG_DEBUG);
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

TEST(config_token_raw_and_hex)
{
	uint8_t tok[N2L_TOKEN_LEN], raw[N2L_TOKEN_LEN];
	char hex[80], err[256], path[64];

	for (int i = 0; i < N2L_TOKEN_LEN; i++)
		raw[i] = (uint8_t)(i * 37 + 1);
	snprintf(path, sizeof(path), "%s", tmpfile_with((char *)raw, sizeof(raw)));
	CHECK_EQ(config_read_token(path, tok, err, sizeof(err)), 0);
	CHECK(!memcmp(tok, raw, sizeof(raw)));
	unlink(path);
	for (int i = 0; i < N2L_TOKEN_LEN; i++)
		sprintf(hex + 2 * i, "%02X", raw[i]);
	strcat(hex, "\n");
	snprintf(path, sizeof(path), "%s", tmpfile_with(hex, strlen(hex)));
	memset(tok, 0, sizeof(tok));
	CHECK_EQ(config_read_token(path, tok, err, sizeof(err)), 0);
	CHECK(!memcmp(tok, raw, sizeof(raw)));
	unlink(path);
	snprintf(path, sizeof(path), "%s", tmpfile_with("short", 5));
	CHECK_EQ(config_read_token(path, tok, err, sizeof(err)), -1);
	unlink(path);
	hex[10] = 'g';
	snprintf(path, sizeof(path), "%s", tmpfile_with(hex, strlen(hex)));
	CHECK_EQ(config_read_token(path, tok, err, sizeof(err)), -1);
	unlink(path);
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
