// SPDX-License-Identifier: GPL-2.0-only
#include "keycheck.h"
#include "psk.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

bool psk_identity_valid(const char id[N2L_ID_LEN])
{
	size_t n = strnlen(id, N2L_ID_LEN);

	if (!n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isgraph((unsigned char)id[i]))
			return false;
	for (size_t i = n; i < N2L_ID_LEN; i++)
		if (id[i])
			return false;
	return true;
}

const struct psk_entry *psk_find(const struct psk_table *t, const char id[N2L_ID_LEN])
{
	for (size_t i = 0; i < t->n; i++)
		if (!memcmp(t->e[i].identity, id, N2L_ID_LEN))
			return &t->e[i];
	return NULL;
}

void psk_free(struct psk_table *t)
{
	if (t->e)
		OPENSSL_cleanse(t->e, t->n * sizeof(*t->e));
	free(t->e);
	t->e = NULL;
	t->n = 0;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static int parse_key(const char *s, uint8_t key[N2L_PSK_LEN])
{
	if (strlen(s) != 2 * N2L_PSK_LEN)
		return -1;
	for (unsigned int i = 0; i < N2L_PSK_LEN; i++) {
		int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		key[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

/* One non-comment line: "<identity> <key> [peer]" (words split in place). */
static int parse_line(char *s, struct psk_entry *e, char *why, size_t whylen)
{
	char *words[4];
	const char *weak;
	int n = 0;

	for (char *tok = strtok(s, " \t\r\n"); tok; tok = strtok(NULL, " \t\r\n")) {
		if (n == 4)
			break;
		words[n++] = tok;
	}
	if (n < 2 || n > 3) {
		snprintf(why, whylen, "expected '<identity> <64 hex digits> [peer]'");
		return -1;
	}
	memset(e, 0, sizeof(*e));
	if (strlen(words[0]) > N2L_ID_LEN) {
		snprintf(why, whylen, "identity longer than %d bytes", N2L_ID_LEN);
		return -1;
	}
	memcpy(e->identity, words[0], strlen(words[0]));
	if (!psk_identity_valid(e->identity)) {
		snprintf(why, whylen, "identity with a character that is not printable");
		return -1;
	}
	if (parse_key(words[1], e->key)) {
		snprintf(why, whylen, "the key is not 64 hex digits");
		return -1;
	}
	weak = keycheck_weakness(e->key, N2L_PSK_LEN);
	if (weak) {
		snprintf(why, whylen, "the key is too weak (%s): make a random one with: %s",
			 weak, KEYCHECK_MAKE_ONE);
		return -1;
	}
	if (n == 3 && strcmp(words[2], "peer")) {
		snprintf(why, whylen, "third word is not 'peer'");
		return -1;
	}
	e->peer = n == 3;
	return 0;
}

static int check_mode(int fd, const char *path, char *err, size_t errlen)
{
	struct stat st;

	if (fstat(fd, &st)) {
		snprintf(err, errlen, "psk file %s: %s", path, strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "psk file %s: not a regular file", path);
		return -1;
	}
	if (st.st_mode & (S_IRGRP | S_IWGRP | S_IROTH | S_IWOTH)) {
		snprintf(err, errlen, "psk file %s: group or others may read or write it (mode %03o): chmod 600 it",
			 path, (unsigned int)(st.st_mode & 0777));
		return -1;
	}
	return 0;
}

static int add_entry(struct psk_table *t, const struct psk_entry *e)
{
	struct psk_entry *ne = malloc((t->n + 1) * sizeof(*ne));

	if (!ne)
		return -1;
	if (t->n)
		memcpy(ne, t->e, t->n * sizeof(*ne));
	ne[t->n] = *e;
	if (t->e)
		OPENSSL_cleanse(t->e, t->n * sizeof(*t->e));
	free(t->e);
	t->e = ne;
	t->n++;
	return 0;
}

/* Every way out wipes the line and the entry: both may hold a key. */
static int load_lines(struct psk_table *t, FILE *f, const char *path, char *err, size_t errlen)
{
	char line[512], why[192];
	int lineno = 0, rc = 0;
	struct psk_entry e;

	while (!rc && fgets(line, sizeof(line), f)) {
		char *s = line;

		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			snprintf(err, errlen, "%s:%d: line too long", path, lineno);
			rc = -1;
			break;
		}
		while (isspace((unsigned char)*s))
			s++;
		if (!*s || *s == '#')
			continue;
		if (parse_line(s, &e, why, sizeof(why))) {
			snprintf(err, errlen, "%s:%d: %s", path, lineno, why);
			rc = -1;
		} else if (psk_find(t, e.identity)) {
			snprintf(err, errlen, "%s:%d: identity listed twice", path, lineno);
			rc = -1;
		} else if (add_entry(t, &e)) {
			snprintf(err, errlen, "%s: out of memory", path);
			rc = -1;
		}
	}
	OPENSSL_cleanse(line, sizeof(line));
	OPENSSL_cleanse(&e, sizeof(e));
	if (rc)
		return rc;
	if (ferror(f)) {
		snprintf(err, errlen, "%s: read error", path);
		return -1;
	}
	if (!t->n) {
		snprintf(err, errlen, "%s: no identities", path);
		return -1;
	}
	return 0;
}

int psk_load(struct psk_table *t, const char *path, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	FILE *f;
	int rc;

	memset(t, 0, sizeof(*t));
	if (fd < 0) {
		snprintf(err, errlen, "psk file %s: %s", path, strerror(errno));
		return -1;
	}
	if (check_mode(fd, path, err, errlen)) {
		close(fd);
		return -1;
	}
	f = fdopen(fd, "re");
	if (!f) {
		close(fd);
		snprintf(err, errlen, "psk file %s: %s", path, strerror(errno));
		return -1;
	}
	rc = load_lines(t, f, path, err, errlen);
	fclose(f);
	if (rc)
		psk_free(t);
	return rc;
}
