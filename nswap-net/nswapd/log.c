// SPDX-License-Identifier: GPL-2.0-only
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const level_names[] = { "error", "warn", "info", "debug" };
static const int syslog_prio[] = { 3, 4, 6, 7 };

/* stderr is journald's stream if JOURNAL_STREAM names its device:inode. */
static bool stderr_is_journal(void)
{
	const char *js = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!js || sscanf(js, "%llu:%llu", &dev, &ino) != 2)
		return false;
	if (fstat(STDERR_FILENO, &st))
		return false;
	return (unsigned long long)st.st_dev == dev &&
	       (unsigned long long)st.st_ino == ino;
}

void log_init(struct logger *lg, enum log_level level)
{
	lg->level = level;
	lg->journal = stderr_is_journal();
}

int log_level_parse(const char *s, enum log_level *out)
{
	for (unsigned int i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (!strcmp(s, level_names[i])) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	if (!strcmp(s, "warning")) {
		*out = LOG_WARN;
		return 0;
	}
	return -1;
}

void log_msg(const struct logger *lg, enum log_level lvl, const char *fmt, ...)
{
	char line[1024];
	int n = 0;
	va_list ap;

	if (lvl > lg->level)
		return;
	if (lg->journal)
		n = snprintf(line, sizeof(line), "<%d>", syslog_prio[lvl]);
	n += snprintf(line + n, sizeof(line) - n, "%s: ", level_names[lvl]);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	va_end(ap);
	/* One write per line, so that lines of concurrent writers never mix. */
	n = strlen(line);
	for (int i = 0; i < n; i++)
		if (line[i] == '\n')
			line[i] = ' ';
	if (n >= (int)sizeof(line) - 1)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, n) < 0) {
		/* nothing sensible to do */
	}
}
