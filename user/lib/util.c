// SPDX-License-Identifier: GPL-2.0
#include <argp.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (*end)
		return -EINVAL;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int parse_bytes(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char num[32];
	size_t len = s ? strlen(s) : 0;
	uint64_t mult = 1, v;
	int err;

	if (len == 0 || len >= sizeof(num))
		return -EINVAL;
	memcpy(num, s, len + 1);
	switch (num[len - 1]) {
	case 'k': case 'K': mult = 1024; num[--len] = 0; break;
	case 'm': case 'M': mult = 1024 * 1024; num[--len] = 0; break;
	}
	err = parse_u64(num, 0, UINT64_MAX / mult, &v);
	if (err)
		return err;
	v *= mult;
	if (v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int parse_seconds(const char *s, double max, double *out)
{
	char *end;
	double v;

	/* digits and a point only: strtod also takes hex ("0x10"), exponents, "inf" */
	if (!s || !(isdigit((unsigned char)*s) || *s == '.') || s[strspn(s, "0123456789.")])
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end)
		return -EINVAL;
	if (!(v > 0) || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int parse_duration_ns(const char *s, uint64_t max_ns, uint64_t *out)
{
	static const struct { const char *unit; double ns; } units[] = {
		{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 },
	};
	size_t num = s ? strspn(s, "0123456789.") : 0, i;
	char digits[32];
	double v;
	int err;

	if (!num || num >= sizeof(digits))
		return -EINVAL;
	for (i = 0; i < ARRAY_SIZE(units); i++)
		if (!strcmp(s + num, units[i].unit))
			break;
	if (i == ARRAY_SIZE(units))
		return -EINVAL;
	memcpy(digits, s, num);
	digits[num] = 0;
	err = parse_seconds(digits, (double)max_ns / units[i].ns, &v);
	if (err)
		return err;
	*out = (uint64_t)(v * units[i].ns + 0.5);
	return *out ? 0 : -ERANGE;
}

void *grow_array(void *p, int *cap, int n, size_t elem_size, int first)
{
	int ncap;

	if (n < *cap)
		return p;
	ncap = *cap ? *cap * 2 : first;
	p = realloc(p, (size_t)ncap * elem_size);
	if (p)
		*cap = ncap;
	return p;
}

int split_list(char *s, char **items, int max_items)
{
	int n = 0;
	char *save = NULL, *tok;
	size_t len = strlen(s);

	/* strtok would skip empty items: "1,,2" read as 1,2 while --mode took it as an error */
	if (!len || s[0] == ',' || s[len - 1] == ',' || strstr(s, ",,"))
		return -EINVAL;
	for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == max_items)
			return -E2BIG;
		items[n++] = tok;
	}
	return n;
}

/* "udsprobe: " + fmt + tail in one write: stderr is unbuffered, and a child's line must not
 * land inside this one */
static void say_line(const char *fmt, va_list ap, const char *tail)
{
	char *msg = NULL;

	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	fprintf(stderr, "udsprobe: %s%s", msg ? msg : fmt, tail);
	free(msg);
}

void say_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say_line(fmt, ap, "\n");
	va_end(ap);
}

const char *errno_text(int err)
{
	return err == -524 ? "not supported (ENOTSUPP)" : strerror(-err);
}

const char *bytes_text(uint64_t bytes, char *buf, size_t len)
{
	if (bytes < (1u << 20))
		snprintf(buf, len, "%.0f KiB", bytes / 1024.0);
	else if (bytes < (1ull << 30))
		snprintf(buf, len, "%.0f MiB", bytes / (double)(1 << 20));
	else
		snprintf(buf, len, "%.1f GiB", bytes / (double)(1ull << 30));
	return buf;
}

static const char try_help[] = "\nTry 'udsprobe --help' for more information.\n";

int usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say_line(fmt, ap, try_help);
	va_end(ap);
	return -EINVAL;
}

void usage_exit(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say_line(fmt, ap, try_help);
	va_end(ap);
	exit(2);
}

void option_once(const struct argp_option *table, int key, uint64_t *seen)
{
	int i;

	for (i = 0; i < 64 && (table[i].name || table[i].key || table[i].doc); i++) {
		if (table[i].key != key || !table[i].name || !table[i].arg)
			continue;
		if (*seen & (1ull << i))
			usage_exit("--%s is given twice: give it once", table[i].name);
		*seen |= 1ull << i;
		return;
	}
}

const char *fmt_dur(double ns, bool utf8, char *buf, size_t len)
{
	const char *us = utf8 ? "\u00b5s" : "us", *sign = ns <= -0.5 ? "-" : "";
	double a = fabs(ns);

	/* each unit up to where its rounding would print 1000 of it */
	if (a < 999.5)
		snprintf(buf, len, "%s%.0f ns", sign, a);
	else if (a < 9999.5)
		snprintf(buf, len, "%s%.2f %s", sign, a / 1e3, us);
	else if (a < 999999.5)
		snprintf(buf, len, "%s%.1f %s", sign, a / 1e3, us);
	else if (a < 999995000)
		snprintf(buf, len, "%s%.2f ms", sign, a / 1e6);
	else
		snprintf(buf, len, "%s%.2f s", sign, a / 1e9);
	return buf;
}

const char *fmt_rate(double v, char *buf, size_t len)
{
	if (v >= 1e9)
		snprintf(buf, len, "%.2f G", v / 1e9);
	else if (v >= 1e6)
		snprintf(buf, len, "%.2f M", v / 1e6);
	else if (v >= 1e3)
		snprintf(buf, len, "%.1f k", v / 1e3);
	else
		snprintf(buf, len, "%.1f", v);
	return buf;
}

/* Length of the valid UTF-8 sequence at s (at most n bytes) that is not a C1
 * control, or 0. Overlong forms and surrogates are invalid (RFC 3629). */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len, i;

	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4;
	else
		return 0;
	if (len > n)
		return 0;
	if (s[0] == 0xc2 || s[0] == 0xe0)
		lo = 0xa0;	/* c2: U+0080..U+009F are C1 controls (CSI is U+009B); e0: overlong */
	else if (s[0] == 0xed)
		hi = 0x9f;	/* surrogates */
	else if (s[0] == 0xf0)
		lo = 0x90;	/* overlong */
	else if (s[0] == 0xf4)
		hi = 0x8f;	/* beyond U+10FFFF */
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

char *str_escape(const void *s, size_t n, char *out, size_t len)
{
	const unsigned char *p = s;
	size_t i = 0, o = 0, k, adv;
	char esc[8];

	if (!len)
		return out;
	while (i < n) {
		adv = 1;
		if (p[i] == '\\') {
			memcpy(esc, "\\\\", k = 2);
		} else if (!p[i]) {
			memcpy(esc, "\\0", k = 2);
		} else if (p[i] >= 0x20 && p[i] < 0x7f) {
			esc[0] = p[i];
			k = 1;
		} else if ((adv = utf8_len(p + i, n - i))) {
			memcpy(esc, p + i, k = adv);
		} else {
			snprintf(esc, sizeof(esc), "\\x%02x", p[i]);
			k = 4;
			adv = 1;
		}
		if (o + k >= len)	/* never cut an escape or a character in half */
			break;
		memcpy(out + o, esc, k);
		o += k;
		i += adv;
	}
	out[o] = 0;
	return out;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int str_unescape(const char *s, void *out, size_t len)
{
	unsigned char *o = out, c;
	size_t n = 0;
	int h, l;

	while (*s) {
		if (*s != '\\') {
			c = *s++;
		} else if (s[1] == '\\' || s[1] == '0') {
			c = s[1] == '0' ? 0 : '\\';
			s += 2;
		} else if (s[1] == 'x' && (h = hexval(s[2])) >= 0 && (l = hexval(s[3])) >= 0) {
			c = h << 4 | l;
			s += 4;
		} else {
			return -EINVAL;
		}
		if (n == len)
			return -E2BIG;
		o[n++] = c;
	}
	return n;
}

void cpu_model(char *buf, size_t len)
{
	char line[256];
	FILE *f = fopen("/proc/cpuinfo", "r");

	snprintf(buf, len, "unknown");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (strncmp(line, "model name", 10) || !colon)
			continue;
		colon += 2;
		colon[strcspn(colon, "\n")] = 0;
		snprintf(buf, len, "%s", colon);
		break;
	}
	fclose(f);
}

const char *kernel_release(void)
{
	static struct utsname uts;

	if (!uts.release[0] && uname(&uts))
		return "unknown";
	return uts.release;
}

bool kernel_at_least(unsigned int major, unsigned int minor)
{
	unsigned int ma, mi;

	if (sscanf(kernel_release(), "%u.%u", &ma, &mi) != 2)
		return true;	/* unknown: assume new, the load error speaks for itself */
	return ma > major || (ma == major && mi >= minor);
}

int allowed_cpu_count(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	return CPU_COUNT(&set);
}

int allowed_cpu(int nth)
{
	cpu_set_t set;
	int cpu;

	if (sched_getaffinity(0, sizeof(set), &set))
		return -1;
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &set) && nth-- == 0)
			return cpu;
	return -1;
}

bool child_dies_with_parent(pid_t parent, int sig, bool pipe_default)
{
	prctl(PR_SET_PDEATHSIG, sig);
	if (getppid() != parent)	/* it died before prctl: the signal will never come */
		return false;
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	if (pipe_default)
		signal(SIGPIPE, SIG_DFL);
	return true;
}

int exit_code(int status)
{
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Parent and process group from /proc/PID/stat: after the name's ')', "S ppid pgrp". */
static bool stat_ids(const char *pid_dir, int *ppid, int *pgrp)
{
	char path[64], line[512], *p;
	bool ok = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%s/stat", pid_dir);
	f = fopen(path, "re");
	if (!f)
		return false;
	if (fgets(line, sizeof(line), f) && (p = strrchr(line, ')')))
		ok = sscanf(p + 1, " %*c %d %d", ppid, pgrp) == 2;
	fclose(f);
	return ok;
}

int proc_snapshot(struct proc_ids **out)
{
	struct proc_ids *all = NULL, *bigger;
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0, cap = 0;

	*out = NULL;
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		uint64_t pid;
		int ppid, pgrp;

		if (parse_u64(e->d_name, 1, INT32_MAX, &pid) || !stat_ids(e->d_name, &ppid, &pgrp))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 512;
			bigger = realloc(all, cap * sizeof(*all));
			if (!bigger) {
				free(all);
				closedir(d);
				return -ENOMEM;
			}
			all = bigger;
		}
		all[n++] = (struct proc_ids){ (int)pid, ppid, pgrp };
	}
	closedir(d);
	*out = all;
	return n;
}

/* Our own children. */
static int children(int *pids, int max)
{
	struct proc_ids *all;
	int n = 0, total = proc_snapshot(&all), i;

	for (i = 0; i < total && n < max; i++)
		if (all[i].ppid == getpid())
			pids[n++] = all[i].pid;
	free(all);
	return n;
}

static bool kept(pid_t pid, const pid_t *keep, int n_keep)
{
	int i;

	for (i = 0; i < n_keep; i++)
		if (pid == keep[i])
			return true;
	return false;
}

int stop_leftovers(const pid_t *keep, int n_keep)
{
	int pids[64], n, i, round, found = 0;

	/* a few rounds: a leftover's own children come to us when it dies */
	for (round = 0; round < 4; round++) {
		int sig = round < 2 ? SIGTERM : SIGKILL, left = 0;

		n = children(pids, (int)ARRAY_SIZE(pids));
		for (i = 0; i < n; i++)
			if (!kept(pids[i], keep, n_keep) && !kill(pids[i], sig))
				left++;
		if (!round)
			found = left;
		if (!left)
			return found;
		usleep(200000);
		for (i = 0; i < n; i++)
			if (!kept(pids[i], keep, n_keep))
				waitpid(pids[i], NULL, WNOHANG);
	}
	return found;
}
