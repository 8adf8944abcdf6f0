// SPDX-License-Identifier: GPL-2.0
/* user/lib/util.c: strict number parsing, lists, formatting, CPU helpers, child processes. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unit.h"
#include "util.h"

#define SENTINEL 0xdeadbeefull

/* parse_u64 result, and *out left alone on error */
static int u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	*out = SENTINEL;
	return parse_u64(s, min, max, out);
}

TEST(util_parse_u64_plain)
{
	uint64_t v;

	CHECK_INT(u64("0", 0, 10, &v), 0);
	CHECK_U64(v, 0);
	CHECK_INT(u64("7", 0, 10, &v), 0);
	CHECK_U64(v, 7);
	CHECK_INT(u64("007", 0, 10, &v), 0);	/* leading zeros are decimal, not octal */
	CHECK_U64(v, 7);
	CHECK_INT(u64("1000000000", 1, 1000000000, &v), 0);
	CHECK_U64(v, 1000000000);
}

TEST(util_parse_u64_signs_and_space)
{
	uint64_t v;

	CHECK_INT(u64("-1", 0, UINT64_MAX, &v), -EINVAL);	/* strtoull would wrap it */
	CHECK_INT(u64("+1", 0, UINT64_MAX, &v), -EINVAL);
	CHECK_INT(u64("-0", 0, UINT64_MAX, &v), -EINVAL);
	CHECK_INT(u64(" 1", 0, UINT64_MAX, &v), -EINVAL);
	CHECK_INT(u64("1 ", 0, UINT64_MAX, &v), -EINVAL);
	CHECK_INT(u64("\t1", 0, UINT64_MAX, &v), -EINVAL);
	CHECK_U64(v, SENTINEL);
}

TEST(util_parse_u64_junk)
{
	uint64_t v;

	CHECK_INT(u64(NULL, 0, 10, &v), -EINVAL);
	CHECK_INT(u64("", 0, 10, &v), -EINVAL);
	CHECK_INT(u64("abc", 0, 10, &v), -EINVAL);	/* bcc's "-p abc" = pid 0 bug */
	CHECK_INT(u64("12abc", 0, 100, &v), -EINVAL);
	CHECK_INT(u64("0x10", 0, 100, &v), -EINVAL);
	CHECK_INT(u64("1.5", 0, 100, &v), -EINVAL);
	CHECK_INT(u64("1e3", 0, 10000, &v), -EINVAL);
	CHECK_INT(u64("4K", 0, 10000, &v), -EINVAL);	/* suffixes are parse_bytes' job */
	CHECK_U64(v, SENTINEL);
}

TEST(util_parse_u64_overflow)
{
	uint64_t v;

	CHECK_INT(u64("18446744073709551615", 0, UINT64_MAX, &v), 0);
	CHECK_U64(v, UINT64_MAX);
	CHECK_INT(u64("18446744073709551616", 0, UINT64_MAX, &v), -ERANGE);
	CHECK_INT(u64("99999999999999999999999999", 0, UINT64_MAX, &v), -ERANGE);
	CHECK_U64(v, SENTINEL);
}

TEST(util_parse_u64_range)
{
	uint64_t v;

	CHECK_INT(u64("0", 1, 10, &v), -ERANGE);
	CHECK_INT(u64("11", 1, 10, &v), -ERANGE);
	CHECK_INT(u64("1000000001", 1, 1000000000, &v), -ERANGE);
	CHECK_U64(v, SENTINEL);
	CHECK_INT(u64("1", 1, 10, &v), 0);
	CHECK_U64(v, 1);
	CHECK_INT(u64("10", 1, 10, &v), 0);
	CHECK_U64(v, 10);
}

static int bytes(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	*out = SENTINEL;
	return parse_bytes(s, min, max, out);
}

TEST(util_parse_bytes_suffixes)
{
	uint64_t v;

	CHECK_INT(bytes("64", 1, 1 << 20, &v), 0);
	CHECK_U64(v, 64);
	CHECK_INT(bytes("4K", 1, 1 << 20, &v), 0);
	CHECK_U64(v, 4096);
	CHECK_INT(bytes("4k", 1, 1 << 20, &v), 0);
	CHECK_U64(v, 4096);
	CHECK_INT(bytes("1M", 1, 1 << 20, &v), 0);
	CHECK_U64(v, 1 << 20);
	CHECK_INT(bytes("1m", 1, 1 << 20, &v), 0);
	CHECK_U64(v, 1 << 20);
	CHECK_INT(bytes("1024K", 1, 1 << 20, &v), 0);
	CHECK_U64(v, 1 << 20);
}

TEST(util_parse_bytes_junk)
{
	uint64_t v;

	CHECK_INT(bytes(NULL, 1, 1 << 20, &v), -EINVAL);
	CHECK_INT(bytes("", 1, 1 << 20, &v), -EINVAL);
	CHECK_INT(bytes("K", 1, 1 << 20, &v), -EINVAL);
	CHECK_INT(bytes("12X", 1, 1 << 20, &v), -EINVAL);
	CHECK_INT(bytes("4KB", 1, 1 << 20, &v), -EINVAL);
	CHECK_INT(bytes("4KK", 1, 1 << 20, &v), -EINVAL);
	CHECK_INT(bytes("1.5K", 1, 1 << 20, &v), -EINVAL);
	CHECK_INT(bytes("-1K", 1, 1 << 20, &v), -EINVAL);
	CHECK_INT(bytes("+64", 1, 1 << 20, &v), -EINVAL);
	CHECK_INT(bytes(" 64", 1, 1 << 20, &v), -EINVAL);
	CHECK_INT(bytes("4 K", 1, 1 << 20, &v), -EINVAL);
	CHECK_INT(bytes("1G", 1, UINT64_MAX, &v), -EINVAL);	/* no G suffix */
	/* longer than the internal buffer, even if it were a number */
	CHECK_INT(bytes("000000000000000000000000000000000064", 1, 1 << 20, &v), -EINVAL);
	CHECK_U64(v, SENTINEL);
}

TEST(util_parse_bytes_range_and_overflow)
{
	uint64_t v;

	CHECK_INT(bytes("0", 1, 1 << 20, &v), -ERANGE);
	CHECK_INT(bytes("0K", 1, 1 << 20, &v), -ERANGE);
	CHECK_INT(bytes("2M", 1, 1 << 20, &v), -ERANGE);
	CHECK_INT(bytes("1025K", 1, 1 << 20, &v), -ERANGE);
	CHECK_INT(bytes("1048577", 1, 1 << 20, &v), -ERANGE);
	/* 2^54 K = 2^64: the multiplication must not wrap to 0 */
	CHECK_INT(bytes("18014398509481984K", 0, UINT64_MAX, &v), -ERANGE);
	CHECK_INT(bytes("17592186044416M", 0, UINT64_MAX, &v), -ERANGE);
	CHECK_U64(v, SENTINEL);
	CHECK_INT(bytes("18014398509481983K", 0, UINT64_MAX, &v), 0);
	CHECK_U64(v, 18014398509481983ull * 1024);
}

static int secs(const char *s, double max, double *out)
{
	*out = -1;
	return parse_seconds(s, max, out);
}

TEST(util_parse_seconds_ok)
{
	double v;

	CHECK_INT(secs("1", 3600, &v), 0);
	CHECK_DBL(v, 1.0, 0);
	CHECK_INT(secs("0.5", 3600, &v), 0);
	CHECK_DBL(v, 0.5, 0);
	CHECK_INT(secs(".25", 3600, &v), 0);
	CHECK_DBL(v, 0.25, 0);
	CHECK_INT(secs("2.", 3600, &v), 0);
	CHECK_DBL(v, 2.0, 0);
	CHECK_INT(secs("3600", 3600, &v), 0);
	CHECK_DBL(v, 3600.0, 0);
	CHECK_INT(secs("0.001", 3600, &v), 0);
	CHECK_DBL(v, 0.001, 1e-12);
}

TEST(util_parse_seconds_range)
{
	double v;

	CHECK_INT(secs("0", 3600, &v), -ERANGE);
	CHECK_INT(secs("0.0", 3600, &v), -ERANGE);
	CHECK_INT(secs("3600.5", 3600, &v), -ERANGE);
	CHECK_INT(secs("1000000", 3600, &v), -ERANGE);
	CHECK_DBL(v, -1, 0);
}

TEST(util_parse_seconds_junk)
{
	double v;

	CHECK_INT(secs(NULL, 3600, &v), -EINVAL);
	CHECK_INT(secs("", 3600, &v), -EINVAL);
	CHECK_INT(secs(".", 3600, &v), -EINVAL);
	CHECK_INT(secs("-1", 3600, &v), -EINVAL);
	CHECK_INT(secs("+1", 3600, &v), -EINVAL);
	CHECK_INT(secs(" 1", 3600, &v), -EINVAL);
	CHECK_INT(secs("1s", 3600, &v), -EINVAL);
	CHECK_INT(secs("1 ", 3600, &v), -EINVAL);
	CHECK_INT(secs("abc", 3600, &v), -EINVAL);
	CHECK_INT(secs("inf", 3600, &v), -EINVAL);
	CHECK_INT(secs("nan", 3600, &v), -EINVAL);
	CHECK_INT(secs("1,5", 3600, &v), -EINVAL);
	/* strtod reads hex floats: "0x10" would silently be 16 s */
	CHECK_INT(secs("0x10", 3600, &v), -EINVAL);
	CHECK_INT(secs("0x1p3", 3600, &v), -EINVAL);
	CHECK_INT(secs("1e3", 3600, &v), -EINVAL);
	CHECK_INT(secs("1..2", 3600, &v), -EINVAL);
	CHECK_DBL(v, -1, 0);
}

TEST(util_split_list)
{
	char buf[64], *items[4];

	strcpy(buf, "a,bb,c");
	CHECK_INT(split_list(buf, items, 4), 3);
	CHECK_STR(items[0], "a");
	CHECK_STR(items[1], "bb");
	CHECK_STR(items[2], "c");
	strcpy(buf, "one");
	CHECK_INT(split_list(buf, items, 4), 1);
	CHECK_STR(items[0], "one");
	/* an empty item is an error, the list untouched (--size 1,,2 was read as 1,2) */
	strcpy(buf, "1,,2");
	CHECK_INT(split_list(buf, items, 4), -EINVAL);
	CHECK_STR(buf, "1,,2");
	strcpy(buf, ",x");
	CHECK_INT(split_list(buf, items, 4), -EINVAL);
	strcpy(buf, "x,");
	CHECK_INT(split_list(buf, items, 4), -EINVAL);
	strcpy(buf, "");
	CHECK_INT(split_list(buf, items, 4), -EINVAL);
	strcpy(buf, ",,,");
	CHECK_INT(split_list(buf, items, 4), -EINVAL);
	strcpy(buf, "1,2,3,4");
	CHECK_INT(split_list(buf, items, 4), 4);
	strcpy(buf, "1,2,3,4,5");
	CHECK_INT(split_list(buf, items, 4), -E2BIG);
}

TEST(util_fmt_dur)
{
	char buf[32];

	CHECK_STR(fmt_dur(0, false, buf, sizeof(buf)), "0 ns");
	CHECK_STR(fmt_dur(999, false, buf, sizeof(buf)), "999 ns");
	CHECK_STR(fmt_dur(1000, false, buf, sizeof(buf)), "1.00 us");
	CHECK_STR(fmt_dur(1460, false, buf, sizeof(buf)), "1.46 us");
	CHECK_STR(fmt_dur(1460, true, buf, sizeof(buf)), "1.46 \u00b5s");
	CHECK_STR(fmt_dur(12345, false, buf, sizeof(buf)), "12.3 us");
	CHECK_STR(fmt_dur(1e6, false, buf, sizeof(buf)), "1.00 ms");
	CHECK_STR(fmt_dur(2.5e9, false, buf, sizeof(buf)), "2.50 s");
	/* rounding never prints 1000 of a unit */
	CHECK_STR(fmt_dur(999.7, false, buf, sizeof(buf)), "1.00 us");
	CHECK_STR(fmt_dur(9999.7, false, buf, sizeof(buf)), "10.0 us");
	CHECK_STR(fmt_dur(999999.7, false, buf, sizeof(buf)), "1.00 ms");
	CHECK_STR(fmt_dur(999996000, false, buf, sizeof(buf)), "1.00 s");
	/* signed: an overhead or a difference may be negative; no "-0 ns" */
	CHECK_STR(fmt_dur(-15871, false, buf, sizeof(buf)), "-15.9 us");
	CHECK_STR(fmt_dur(-812, true, buf, sizeof(buf)), "-812 ns");
	CHECK_STR(fmt_dur(-0.3, false, buf, sizeof(buf)), "0 ns");
	/* truncates, never overflows */
	CHECK_STR(fmt_dur(1460, false, buf, 4), "1.4");
}

TEST(util_allowed_cpus)
{
	int n = allowed_cpu_count(), i;

	REQUIRE(n >= 1);
	for (i = 0; i < n; i++)
		CHECK(allowed_cpu(i) >= 0);
	for (i = 1; i < n; i++)
		CHECK(allowed_cpu(i) > allowed_cpu(i - 1));
	CHECK_INT(allowed_cpu(n), -1);
}

TEST(util_now_ns_monotonic)
{
	uint64_t a = now_ns(), b = now_ns();

	CHECK(a > 0);
	CHECK(b >= a);
}

TEST(util_kernel_release)
{
	const char *r = kernel_release();

	REQUIRE(r != NULL);
	CHECK(r[0] >= '0' && r[0] <= '9');
	CHECK(kernel_release() == r);	/* cached */
}

/* str_escape / str_unescape: safe for terminals, JSON and Prometheus, and lossless */
static const char *esc(const char *s, size_t n)
{
	static char buf[256];

	return str_escape(s, n, buf, sizeof(buf));
}

TEST(util_escape_plain_and_utf8)
{
	CHECK_STR(esc("/run/php/php-fpm.sock", 21), "/run/php/php-fpm.sock");
	CHECK_STR(esc("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14),
		  "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
	CHECK_STR(esc("", 0), "");
}

TEST(util_escape_controls)
{
	CHECK_STR(esc("a\x1b]0;owned\x07z", 12), "a\\x1b]0;owned\\x07z");
	CHECK_STR(esc("row\nforged", 10), "row\\x0aforged");
	CHECK_STR(esc("\x7f\t\r", 3), "\\x7f\\x09\\x0d");
	CHECK_STR(esc("a\\b", 3), "a\\\\b");
	CHECK_STR(esc("a\0b", 3), "a\\0b");
	CHECK_STR(esc("\xc2\x9b" "2J", 4), "\\xc2\\x9b2J");	/* C1 CSI */
}

TEST(util_escape_invalid_utf8)
{
	CHECK_STR(esc("\xff\xfe", 2), "\\xff\\xfe");
	CHECK_STR(esc("\xc3", 1), "\\xc3");			/* truncated */
	CHECK_STR(esc("\xc0\xaf", 2), "\\xc0\\xaf");		/* overlong '/' */
	CHECK_STR(esc("\xed\xa0\x80", 3), "\\xed\\xa0\\x80");	/* surrogate */
	CHECK_STR(esc("\x80x", 2), "\\x80x");
}

TEST(util_escape_truncates_whole)
{
	char buf[6];

	CHECK_STR(str_escape("ab\x01", 3, buf, sizeof(buf)), "ab");	/* "\x01" does not fit */
	CHECK_STR(str_escape("abc\xc3\xa9", 5, buf, 5), "abc");
	CHECK_STR(str_escape("abcd", 4, buf, 5), "abcd");
}

TEST(util_unescape_round_trip)
{
	static const char *const in[] = { "\0a\0b", "\0a@b", "x\\y", "\x1b[2J\n", "\xff\xc3\xa9" };
	static const size_t len[] = { 4, 4, 3, 5, 3 };
	char back[64];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(in); i++) {
		const char *e = esc(in[i], len[i]);

		CHECK_INT(str_unescape(e, back, sizeof(back)), (int)len[i]);
		CHECK(!memcmp(back, in[i], len[i]));
	}
	CHECK_INT(str_unescape("bad\\q", back, sizeof(back)), -EINVAL);
	CHECK_INT(str_unescape("bad\\x4", back, sizeof(back)), -EINVAL);
	CHECK_INT(str_unescape("abc", back, 2), -E2BIG);
	CHECK_STR(esc("\0a\0b", 4), "\\0a\\0b");
	CHECK_STR(esc("\0a@b", 4), "\\0a@b");
}

TEST(util_parse_duration_ns)
{
	uint64_t v = 0;

	CHECK_INT(parse_duration_ns("50us", 100000000, &v), 0);
	CHECK_U64(v, 50000);
	CHECK_INT(parse_duration_ns("1.5ms", 100000000, &v), 0);
	CHECK_U64(v, 1500000);
	CHECK_INT(parse_duration_ns("200ns", 100000000, &v), 0);
	CHECK_U64(v, 200);
	CHECK_INT(parse_duration_ns("100ms", 100000000, &v), 0);
	CHECK_U64(v, 100000000);
	CHECK_INT(parse_duration_ns("101ms", 100000000, &v), -ERANGE);
	CHECK_INT(parse_duration_ns("0us", 100000000, &v), -ERANGE);
	CHECK_INT(parse_duration_ns("0.1ns", 100000000, &v), -ERANGE);
	CHECK_INT(parse_duration_ns("50", 100000000, &v), -EINVAL);
	CHECK_INT(parse_duration_ns("us", 100000000, &v), -EINVAL);
	CHECK_INT(parse_duration_ns("5 us", 100000000, &v), -EINVAL);
	CHECK_INT(parse_duration_ns("-5us", 100000000, &v), -EINVAL);
	CHECK_INT(parse_duration_ns("5usx", 100000000, &v), -EINVAL);
	CHECK_INT(parse_duration_ns(NULL, 100000000, &v), -EINVAL);
}

TEST(util_kernel_at_least)
{
	unsigned int ma, mi;

	CHECK_INT(sscanf(kernel_release(), "%u.%u", &ma, &mi), 2);
	CHECK(kernel_at_least(ma, mi));
	CHECK(kernel_at_least(ma, 0));
	CHECK(kernel_at_least(ma - 1, mi + 100));
	CHECK(!kernel_at_least(ma, mi + 1));
	CHECK(!kernel_at_least(ma + 1, 0));
}

TEST(util_exit_code)
{
	int status;
	pid_t pid = fork();

	REQUIRE(pid >= 0);
	if (pid == 0)
		_exit(3);
	REQUIRE(waitpid(pid, &status, 0) == pid);
	CHECK_INT(exit_code(status), 3);
	pid = fork();
	REQUIRE(pid >= 0);
	if (pid == 0) {
		raise(SIGKILL);
		_exit(0);
	}
	REQUIRE(waitpid(pid, &status, 0) == pid);
	CHECK_INT(exit_code(status), 128 + SIGKILL);	/* as a shell says it: 137 */
}

/* A grandchild that asked to die with its parent is gone soon after that parent exits; one
 * that names the wrong parent is told so. */
TEST(util_child_dies_with_parent)
{
	int fds[2], ready[2], status;
	pid_t mid, grandchild = 0;
	int i;

	REQUIRE(pipe(fds) == 0);
	REQUIRE(pipe(ready) == 0);
	mid = fork();
	REQUIRE(mid >= 0);
	if (mid == 0) {
		pid_t me = getpid(), g = fork();
		char c;

		if (g == 0) {
			if (!child_dies_with_parent(me, SIGKILL, false))
				_exit(1);
			if (write(ready[1], "r", 1) != 1)
				_exit(1);
			for (;;)
				pause();
		}
		close(ready[1]);
		/* the middle process exits only once the grandchild's prctl has run, whatever the load */
		if (read(ready[0], &c, 1) != 1 || write(fds[1], &g, sizeof(g)) != sizeof(g))
			_exit(1);
		_exit(0);
	}
	close(ready[0]);
	close(ready[1]);
	close(fds[1]);
	REQUIRE(read(fds[0], &grandchild, sizeof(grandchild)) == sizeof(grandchild));
	close(fds[0]);
	REQUIRE(grandchild > 0);
	REQUIRE(waitpid(mid, &status, 0) == mid);
	for (i = 0; i < 2000 && !kill(grandchild, 0); i++)	/* reaped by init: 20 s at most */
		usleep(10000);
	CHECK(kill(grandchild, 0) && errno == ESRCH);

	mid = fork();
	REQUIRE(mid >= 0);
	if (mid == 0)
		_exit(child_dies_with_parent(getppid() + 1, SIGKILL, false) ? 0 : 7);
	REQUIRE(waitpid(mid, &status, 0) == mid);
	CHECK_INT(exit_code(status), 7);
}
