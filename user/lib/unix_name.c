// SPDX-License-Identifier: GPL-2.0
/* Unix socket names as text and back (docs/BACKLOG.md, "Names"): --backlog's and --trace's. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "unix_name.h"
#include "util.h"

/*
 * The display form of a unix name, lossless and printable (docs/BACKLOG.md,
 * "Names"): a pathname as str_escape makes it, with a leading '@' written \x40
 * so it never reads as an abstract name; an abstract name as '@' and the escaped
 * bytes after its leading NUL (so "\0a\0b" is "@a\0b" and "\0a@b" is "@a@b").
 */
void fmt_unix_addr(const char *path, size_t len, char *out, size_t out_len)
{
	if (!len || out_len < 5) {
		if (out_len)
			out[0] = 0;
		return;
	}
	if (path[0] == '@') {
		snprintf(out, out_len, "\\x40");
		str_escape(path + 1, len - 1, out + 4, out_len - 4);
	} else if (path[0]) {
		str_escape(path, len, out, out_len);
	} else {
		out[0] = '@';
		str_escape(path + 1, len - 1, out + 1, out_len - 1);
	}
}

/* --unix ARG (the display form above) -> name bytes; -EINVAL if it is not one. */
int parse_unix_addr(const char *arg, char *path, uint32_t *len)
{
	char raw[UNIX_NAME_LEN + 1];
	int n;

	memset(path, 0, UNIX_NAME_LEN);
	if (arg[0] == '@') {	/* abstract: a leading NUL, then the name */
		n = str_unescape(arg + 1, raw, UNIX_NAME_LEN - 1);
		if (n < 0)
			return -EINVAL;
		memcpy(path + 1, raw, n);
		*len = n + 1;
		return 0;
	}
	n = str_unescape(arg, raw, UNIX_NAME_LEN);
	if (n <= 0 || memchr(raw, 0, n))	/* a pathname ends at its first NUL */
		return -EINVAL;
	memcpy(path, raw, n);
	*len = n;
	return 0;
}
