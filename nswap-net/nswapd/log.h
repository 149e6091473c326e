/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * One line per event on stderr, level first ("info: ..."). Under systemd
 * (stderr is the journal stream) each line also starts with a "<N>"
 * priority prefix, which journald strips and turns into the priority.
 */
#ifndef NSWAPD_LOG_H
#define NSWAPD_LOG_H

#include <stdbool.h>

enum log_level { LOG_QUIET = -1, LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

struct logger {
	enum log_level level;
	bool journal;		/* prefix lines with <priority> */
};

void log_init(struct logger *lg, enum log_level level);
int log_level_parse(const char *s, enum log_level *out);
void log_msg(const struct logger *lg, enum log_level lvl, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define log_err(lg, ...)	log_msg(lg, LOG_ERROR, __VA_ARGS__)
#define log_warn(lg, ...)	log_msg(lg, LOG_WARN, __VA_ARGS__)
#define log_info(lg, ...)	log_msg(lg, LOG_INFO, __VA_ARGS__)
#define log_debug(lg, ...)	do { if ((lg)->level >= LOG_DEBUG) \
		log_msg(lg, LOG_DEBUG, __VA_ARGS__); } while (0)

#endif
