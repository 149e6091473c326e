// SPDX-License-Identifier: GPL-2.0-only
/*
 * n2l-pattern: write or check a reproducible pattern on a block device,
 * 4 KiB block by block, with O_DIRECT so that the page cache hides nothing.
 *
 *   n2l-pattern write <dev> <offset> <length> <seed>
 *   n2l-pattern check <dev> <offset> <length> <seed>
 *   n2l-pattern zero  <dev> <offset> <length> <seed>   (seed ignored)
 *   n2l-pattern scan  <dev> <offset> <length> <seed>
 *
 * Every block carries its own byte offset and the seed, then bytes derived
 * from both, so a block read from the wrong place or an old run is caught.
 * check and zero print "<bad> <blocks>" and exit 1 when any block is bad;
 * any I/O error exits 2 with the offset and the errno text on stderr.
 * scan reads block by block and tells apart blocks that hold the pattern,
 * blocks that hold anything else (wrong data: never acceptable) and blocks
 * that fail with EIO (lost data, reported as such): it prints
 * "<good> <wrong> <eio>" and exits 1 if any block is wrong.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLOCK 4096u
#define CHUNK (1u << 20)

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void fill_block(uint64_t *w, uint64_t offset, uint64_t seed)
{
	uint64_t state = offset * 31 + seed;
	unsigned int i;

	w[0] = offset;
	w[1] = seed;
	for (i = 2; i < BLOCK / 8; i++)
		w[i] = splitmix(&state);
}

static int block_ok(const uint64_t *w, uint64_t offset, uint64_t seed,
		    uint64_t *expect)
{
	fill_block(expect, offset, seed);
	return !memcmp(w, expect, BLOCK);
}

static int block_zero(const uint64_t *w)
{
	unsigned int i;

	for (i = 0; i < BLOCK / 8; i++)
		if (w[i])
			return 0;
	return 1;
}

static uint64_t parse_u64(const char *s, const char *what)
{
	char *end;
	uint64_t v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || end == s) {
		fprintf(stderr, "n2l-pattern: bad %s '%s'\n", what, s);
		exit(2);
	}
	return v;
}

static int scan(int fd, uint64_t offset, uint64_t length, uint64_t seed)
{
	uint64_t good = 0, wrong = 0, eio = 0, pos, *buf, *expect;

	if (posix_memalign((void **)&buf, BLOCK, BLOCK) ||
	    posix_memalign((void **)&expect, BLOCK, BLOCK))
		return 2;
	for (pos = offset; pos < offset + length; pos += BLOCK) {
		ssize_t r = pread(fd, buf, BLOCK, (off_t)pos);

		if (r < 0 && errno == EIO) {
			eio++;
		} else if (r != BLOCK) {
			fprintf(stderr, "n2l-pattern: scan at %" PRIu64 ": %s\n",
				pos, r < 0 ? strerror(errno) : "short read");
			return 2;
		} else if (block_ok(buf, pos, seed, expect)) {
			good++;
		} else {
			wrong++;
		}
	}
	printf("%" PRIu64 " %" PRIu64 " %" PRIu64 "\n", good, wrong, eio);
	free(buf);
	free(expect);
	return wrong ? 1 : 0;
}

int main(int argc, char **argv)
{
	uint64_t offset, length, seed, pos, bad = 0, blocks = 0;
	uint64_t *buf, *expect;
	const char *mode;
	size_t n, i;
	ssize_t r;
	int fd, writing;

	if (argc != 6) {
		fprintf(stderr, "usage: n2l-pattern write|check|zero|scan <dev> <offset> <length> <seed>\n");
		return 2;
	}
	mode = argv[1];
	writing = !strcmp(mode, "write");
	if (!writing && strcmp(mode, "check") && strcmp(mode, "zero") &&
	    strcmp(mode, "scan")) {
		fprintf(stderr, "n2l-pattern: unknown mode '%s'\n", mode);
		return 2;
	}
	offset = parse_u64(argv[3], "offset");
	length = parse_u64(argv[4], "length");
	seed = parse_u64(argv[5], "seed");
	if (offset % BLOCK || length % BLOCK) {
		fprintf(stderr, "n2l-pattern: offset and length must be multiples of %u\n", BLOCK);
		return 2;
	}
	fd = open(argv[2], (writing ? O_WRONLY : O_RDONLY) | O_DIRECT);
	if (fd < 0) {
		perror(argv[2]);
		return 2;
	}
	if (!strcmp(mode, "scan"))
		return scan(fd, offset, length, seed);
	if (posix_memalign((void **)&buf, BLOCK, CHUNK) ||
	    posix_memalign((void **)&expect, BLOCK, BLOCK)) {
		fprintf(stderr, "n2l-pattern: out of memory\n");
		return 2;
	}

	for (pos = offset; pos < offset + length; pos += n) {
		n = offset + length - pos < CHUNK ? offset + length - pos : CHUNK;
		if (writing) {
			for (i = 0; i < n; i += BLOCK)
				fill_block(buf + i / 8, pos + i, seed);
			r = pwrite(fd, buf, n, (off_t)pos);
		} else {
			r = pread(fd, buf, n, (off_t)pos);
		}
		if (r != (ssize_t)n) {
			fprintf(stderr, "n2l-pattern: %s at %" PRIu64 " failed: %s\n",
				mode, pos, r < 0 ? strerror(errno) : "short transfer");
			return 2;
		}
		if (writing)
			continue;
		for (i = 0; i < n; i += BLOCK) {
			const uint64_t *w = buf + i / 8;
			int ok = !strcmp(mode, "zero") ? block_zero(w) :
				 block_ok(w, pos + i, seed, expect);

			blocks++;
			if (!ok)
				bad++;
		}
	}
	if (writing && fsync(fd)) {
		perror("fsync");
		return 2;
	}
	if (!writing)
		printf("%" PRIu64 " %" PRIu64 "\n", bad, blocks);
	free(buf);
	free(expect);
	close(fd);
	return bad ? 1 : 0;
}
