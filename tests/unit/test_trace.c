// SPDX-License-Identifier: GPL-2.0
/* --trace: the linear-log histogram (flows.bpf.c bucket(), trace_collect.c) and percentiles. */
#include <stdint.h>

#include "trace.h"
#include "unit.h"

/* flows.bpf.c's bucket(), written for user space (log2_slot = floor(log2)). */
static int bucket(uint64_t v)
{
	int e, b;

	if (v < (1 << FL_SUB_BITS))
		return v;
	e = 63 - __builtin_clzll(v);
	b = (e - FL_SUB_BITS + 1) * (1 << FL_SUB_BITS) +
	    ((v >> (e - FL_SUB_BITS)) & ((1 << FL_SUB_BITS) - 1));
	return b < FL_NBUCKETS ? b : FL_NBUCKETS - 1;
}

TEST(trace_bucket_value_within_7_percent)
{
	uint64_t v;

	for (v = 0; v < 8; v++)
		CHECK_INT(fl_bucket_value(bucket(v)), v);
	for (v = 8; v < (1ull << 39); v = v * 21 / 20 + 1) {
		uint64_t got = fl_bucket_value(bucket(v));
		double err = got > v ? (double)(got - v) / v : (double)(v - got) / v;

		if (err > 0.0625)
			unit_fail(__FILE__, __LINE__, "value %llu -> bucket %d -> %llu", (unsigned long long)v,
				  bucket(v), (unsigned long long)got);
	}
	/* monotonic: a larger bucket never reports a smaller value */
	for (v = 1; v < FL_NBUCKETS; v++)
		CHECK(fl_bucket_value(v) > fl_bucket_value(v - 1));
}

TEST(trace_quantiles_of_a_known_histogram)
{
	static uint64_t h[FL_NBUCKETS];
	int i;

	CHECK_INT(fl_hist_quantile(h, FL_NBUCKETS, 0.5), 0);	/* empty */
	for (i = 0; i < 90; i++)
		h[bucket(10000)]++;	/* 90 messages of 10 µs */
	for (i = 0; i < 9; i++)
		h[bucket(100000)]++;	/* 9 of 100 µs */
	h[bucket(5000000)]++;		/* one of 5 ms */
	CHECK_INT(fl_hist_quantile(h, FL_NBUCKETS, 0.50), fl_bucket_value(bucket(10000)));
	CHECK_INT(fl_hist_quantile(h, FL_NBUCKETS, 0.90), fl_bucket_value(bucket(10000)));
	CHECK_INT(fl_hist_quantile(h, FL_NBUCKETS, 0.99), fl_bucket_value(bucket(100000)));
	CHECK_INT(fl_hist_quantile(h, FL_NBUCKETS, 1.00), fl_bucket_value(bucket(5000000)));
}
