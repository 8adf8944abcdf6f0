// SPDX-License-Identifier: GPL-2.0
/* user/compare/workload.c: latency_summary (nearest-rank percentiles), names; compare.c defaults. */
#include <stdlib.h>

#include "compare.h"
#include "unit.h"
#include "workload.h"

TEST(latency_summary_empty)
{
	struct wl_latency l = { .p50 = 9, .mean = 9 };
	uint64_t s[1] = { 5 };

	latency_summary(s, 0, 1, &l);
	CHECK_U64(l.p50, 0);
	CHECK_U64(l.p90, 0);
	CHECK_U64(l.p99, 0);
	CHECK_U64(l.mean, 0);
	CHECK_U64(l.min, 0);
	CHECK_U64(l.max, 0);
}

TEST(latency_summary_one)
{
	struct wl_latency l;
	uint64_t s[1] = { 42 };

	latency_summary(s, 1, 1, &l);
	CHECK_U64(l.p50, 42);
	CHECK_U64(l.p90, 42);
	CHECK_U64(l.p99, 42);
	CHECK_U64(l.mean, 42);
	CHECK_U64(l.min, 42);
	CHECK_U64(l.max, 42);
}

TEST(latency_summary_nearest_rank_100)
{
	struct wl_latency l;
	uint64_t s[100];
	int i;

	/* 1..100 shuffled: nearest rank ceil(p * n) gives exactly p */
	for (i = 0; i < 100; i++)
		s[i] = (uint64_t)((i * 37) % 100) + 1;
	latency_summary(s, 100, 1, &l);
	CHECK_U64(l.p50, 50);
	CHECK_U64(l.p90, 90);
	CHECK_U64(l.p99, 99);
	CHECK_U64(l.mean, 50);	/* 50.5 truncated */
	CHECK_U64(l.min, 1);
	CHECK_U64(l.max, 100);
	for (i = 1; i < 100; i++)	/* sorted in place, as documented */
		CHECK(s[i] >= s[i - 1]);
}

TEST(latency_summary_nearest_rank_small)
{
	struct wl_latency l;
	uint64_t s3[3] = { 30, 10, 20 };
	uint64_t s10[10] = { 100, 90, 80, 70, 60, 50, 40, 30, 20, 10 };
	uint64_t s2[2] = { 7, 3 };

	latency_summary(s3, 3, 1, &l);	/* ranks ceil(1.5)=2, ceil(2.7)=3, ceil(2.97)=3 */
	CHECK_U64(l.p50, 20);
	CHECK_U64(l.p90, 30);
	CHECK_U64(l.p99, 30);
	CHECK_U64(l.mean, 20);
	latency_summary(s10, 10, 1, &l);	/* ranks 5, 9, 10 */
	CHECK_U64(l.p50, 50);
	CHECK_U64(l.p90, 90);
	CHECK_U64(l.p99, 100);
	CHECK_U64(l.mean, 55);
	latency_summary(s2, 2, 1, &l);	/* rank 1 is the lower one: no interpolation */
	CHECK_U64(l.p50, 3);
	CHECK_U64(l.p90, 7);
	CHECK_U64(l.mean, 5);
}

TEST(latency_summary_nearest_rank_1000)
{
	struct wl_latency l;
	uint64_t *s = malloc(1001 * sizeof(*s));
	int i;

	REQUIRE(s);
	for (i = 0; i < 1001; i++)
		s[i] = 1000 - i;	/* 0..1000 reversed */
	latency_summary(s, 1001, 1, &l);	/* ranks ceil(500.5)=501, 901, 991 */
	CHECK_U64(l.p50, 500);
	CHECK_U64(l.p90, 900);
	CHECK_U64(l.p99, 990);
	CHECK_U64(l.mean, 500);
	CHECK_U64(l.min, 0);
	CHECK_U64(l.max, 1000);
	free(s);
}

TEST(latency_summary_divisor)
{
	struct wl_latency l;
	uint64_t s[4] = { 4000, 2001, 3000, 1000 };

	/* pingpong passes 2: samples are round trips, the summary is one-way */
	latency_summary(s, 4, 2, &l);
	CHECK_U64(l.p50, 1000);	/* rank 2 = 2001, /2 truncated */
	CHECK_U64(l.p90, 2000);
	CHECK_U64(l.p99, 2000);
	CHECK_U64(l.mean, 1250);	/* 10001 / 4 / 2 */
	CHECK_U64(l.min, 500);
	CHECK_U64(l.max, 2000);
}

TEST(latency_summary_no_overflow)
{
	struct wl_latency l;
	uint64_t s[4] = { UINT64_MAX - 1, UINT64_MAX - 1, UINT64_MAX - 1, UINT64_MAX - 1 };

	latency_summary(s, 4, 1, &l);	/* the sum exceeds 64 bits */
	CHECK_U64(l.p50, UINT64_MAX - 1);
	CHECK(l.mean >= UINT64_MAX / 2);
}

TEST(workload_names)
{
	CHECK_STR(transport_names[TR_UNIX], "unix");
	CHECK_STR(transport_names[TR_TCP], "tcp");
	CHECK_STR(mode_names[WL_PINGPONG], "pingpong");
	CHECK_STR(mode_names[WL_STREAM], "stream");
	CHECK_STR(mode_names[WL_CONNECT], "connect");
	CHECK_STR(place_names[CPU_SAME], "same");
	CHECK_STR(place_names[CPU_SPLIT], "split");
	CHECK_STR(place_names[CPU_NONE], "none");
}

TEST(compare_default_warmup)
{
	/* documented in --help: min(count/10, 1000); connect 200; at least 1 */
	CHECK_U64(default_warmup(WL_PINGPONG, 20000), 1000);
	CHECK_U64(default_warmup(WL_PINGPONG, 5000), 500);
	CHECK_U64(default_warmup(WL_STREAM, 200000), 1000);
	CHECK_U64(default_warmup(WL_CONNECT, 4000), 200);
	CHECK_U64(default_warmup(WL_CONNECT, 100), 10);
	CHECK_U64(default_warmup(WL_PINGPONG, 5), 1);
	CHECK_U64(default_warmup(WL_PINGPONG, 1), 1);
	CHECK_U64(default_warmup(WL_PINGPONG, 0), 1000);
	CHECK_U64(default_warmup(WL_CONNECT, 0), 200);
	/* --duration runs warm up as the default count of their size does (compare.c run_pair):
	 * a 16 MiB pingpong 3 round trips, not 1000 (~10 s of a 0.3 s --sweep run) */
	CHECK_U64(default_warmup(WL_PINGPONG, default_count(WL_PINGPONG, 16 << 20, 0)), 3);
	CHECK_U64(default_warmup(WL_STREAM, default_count(WL_STREAM, 16 << 20, 0)), 25);
	CHECK_U64(default_warmup(WL_PINGPONG, default_count(WL_PINGPONG, 64, 0)), 1000);
}

TEST(compare_default_count)
{
	CHECK_U64(default_count(WL_PINGPONG, 64, 0), 200000);
	CHECK_U64(default_count(WL_STREAM, 64, 0), 1000000);
	CHECK_U64(default_count(WL_CONNECT, 64, 0), 20000);
	/* large messages: a run moves at most 512 MiB (pingpong) or 4 GiB (stream), 16 at least */
	CHECK_U64(default_count(WL_PINGPONG, 1 << 20, 0), 512);
	CHECK_U64(default_count(WL_STREAM, 1 << 20, 0), 4096);
	CHECK_U64(default_count(WL_STREAM, 16 << 20, 0), 256);
	CHECK_U64(default_count(WL_PINGPONG, 16 << 20, 0), 32);
	CHECK_U64(default_count(WL_CONNECT, 16 << 20, 0), 20000);
	/* --think: at most 2 s of the client's think time per run */
	CHECK_U64(default_count(WL_PINGPONG, 64, 10000), 200000);
	CHECK_U64(default_count(WL_PINGPONG, 64, 1000000), 2000);
	CHECK_U64(default_count(WL_PINGPONG, 64, 100000000), 20);
	CHECK_U64(default_count(WL_PINGPONG, 16 << 20, 1000000), 32);
}
