// SPDX-License-Identifier: GPL-2.0
/* --trace: the linear-log histogram (flows.bpf.c bucket(), trace_collect.c) and percentiles;
 * --slower-than's outliers in text and JSON lines (trace_report.c). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace.h"
#include "trace_live.h"
#include "trace_metrics.h"
#include "trace_report.h"
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

/* ---- --slower-than: the outliers' text and JSON (trace_report.c) ---- */

static struct trace_outlier outlier(uint64_t lat_ms, uint32_t bytes)
{
	struct trace_outlier x = {
		.time_ns = 1795462348464089114ull, .transport = FL_UNIX, .endpoint = "/run/a.sock",
		.s_comm = "client", .r_comm = "server", .s_pid = 10, .s_tid = 11, .r_pid = 20,
		.r_tid = 21, .bytes = bytes, .latency_ns = lat_ms * 1000000,
		.stages = 1 << FS_SEND | 1 << FS_BUSY | 1 << FS_RECV,
	};

	x.stage_ns[FS_SEND] = 1000;
	x.stage_ns[FS_RECV] = 2000;
	x.stage_ns[FS_BUSY] = x.latency_ns - 3000;
	return x;
}

static char *render(void (*fn)(const struct trace_run *, FILE *), const struct trace_run *run)
{
	static size_t len;
	char *buf = NULL;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return strdup("");
	fn(run, f);
	fclose(f);
	return buf;
}

static void text_of(const struct trace_run *run, FILE *f)
{
	struct trace_opts o = {};

	trace_report_text(run, &o, f);
}

/* Flows keep their histograms sparse: merging kernel histograms in any order gives the
 * dense sums' percentiles, buckets ascending, each once. */
TEST(trace_sparse_histogram_matches_dense)
{
	static __u32 a[FL_NBUCKETS], b[FL_NBUCKETS];
	uint64_t dense[FL_NBUCKETS] = { 0 };
	struct flow f;
	double q[] = { 0.01, 0.5, 0.9, 0.99, 1.0 };
	int i, k;

	memset(&f, 0, sizeof(f));
	for (i = 0; i < FL_NBUCKETS; i += 7)
		a[i] = i + 1;
	for (i = FL_NBUCKETS - 1; i >= 0; i -= 11)
		b[i] = 3;
	b[0] = 5;
	REQUIRE(trace_hist_merge(&f.lat_hist, b) == 0);
	REQUIRE(trace_hist_merge(&f.lat_hist, a) == 0);
	REQUIRE(trace_hist_merge(&f.lat_hist, b) == 0);
	for (i = 0; i < FL_NBUCKETS; i++)
		dense[i] = a[i] + 2ull * b[i];
	for (k = 0; k < (int)(sizeof(q) / sizeof(q[0])); k++)
		CHECK_INT(trace_hist_quantile(&f.lat_hist, q[k]), fl_hist_quantile(dense, FL_NBUCKETS, q[k]));
	for (i = 1; i < f.lat_hist.n; i++)
		CHECK(f.lat_hist.bucket[i - 1] < f.lat_hist.bucket[i]);
	for (i = 0, k = 0; i < FL_NBUCKETS; i++)
		k += dense[i] != 0;
	CHECK_INT(f.lat_hist.n, k);
	CHECK_INT(trace_hist_quantile(&f.st_hist[0], 0.5), 0);	/* empty */
	trace_flow_free(&f);
}

TEST(trace_outlier_json_line)
{
	struct trace_outlier x = outlier(30, 3005);
	struct trace_run run = { .outliers = &x, .n_outliers = 1, .slower_than_ns = 10000000,
				 .attach_mode = "tracepoint" };
	char *s;

	x.unseen = FU_RECV_ENTRY;
	s = render(trace_outliers_jsonl, &run);
	CHECK_STR(s, "{\"time\":\"2026-11-23T19:32:28.464089Z\",\"time_ns\":1795462348464089114,"
		  "\"transport\":\"unix\",\"endpoint\":\"/run/a.sock\","
		  "\"sender\":{\"comm\":\"client\",\"pid\":10,\"tid\":11},"
		  "\"receiver\":{\"comm\":\"server\",\"pid\":20,\"tid\":21},\"bytes\":3005,"
		  "\"latency_ns\":30000000,\"stages\":[{\"name\":\"send;call\",\"ns\":1000},"
		  "{\"name\":\"wait;busy\",\"ns\":29997000},{\"name\":\"recv;copy+return\",\"ns\":2000}],"
		  "\"kernel_stages\":[],\"not_seen\":[\"recv_entry\"]}\n");
	free(s);
}

/* --detail full: a TCP outlier's stages cut as the flows' are, the last part of each what
 * remains of it, in the text timeline in place of the stage they cut. */
TEST(trace_outlier_kernel_stages)
{
	struct trace_outlier x = outlier(30, 64);
	struct trace_run run = { .outliers = &x, .n_outliers = 1, .slower_than_ns = 10000000,
				 .attach_mode = "tracepoint" };
	const uint64_t k[FK__COUNT] = { 100, 200, 100, 100, 200, 200, 100 };
	char *s;

	x.transport = FL_TCP;
	x.stages = 1 << FS_SEND | 1 << FS_RECV_BLOCKED;
	x.stage_ns[FS_RECV_BLOCKED] = x.latency_ns - 1000;
	memcpy(x.k, k, sizeof(k));
	x.rk[FR_BLOCKED_RUN] = 29000000;
	x.rk[FR_BLOCKED_COPY] = 500000;
	x.kseen = (1u << FK__COUNT) - 1;
	x.rkseen = FRS_RUN | FRS_COPY;
	s = render(text_of, &run);
	CHECK(strstr(s, "send;syscall 100 ns + send;sock+tcp_ip_out 200 ns + send;dev_xmit 100 ns + "
		      "rx_softirq;backlog 100 ns + rx_softirq;ip_tcp_in 200 ns + deliver;enqueue_wakeup "
		      "200 ns + send;return 100 ns + sched;wait_cpu 29.00 ms + recv;copy 500.0 us + "
		      "recv;return 499.0 us\n") != NULL);
	free(s);
	s = render(trace_outliers_jsonl, &run);
	CHECK(strstr(s, "{\"name\":\"sched;wait_cpu\",\"of\":\"recv;blocked\",\"ns\":29000000},"
		      "{\"name\":\"recv;copy\",\"of\":\"recv;blocked\",\"ns\":500000},"
		      "{\"name\":\"recv;return\",\"of\":\"recv;blocked\",\"ns\":499000}]") != NULL);
	free(s);
}

/* A flow whose messages pass every stage, some sliced under each of the four stages slices
 * go to: every kernel stage fits (TR_MAX_KSTAGES), those of one stage add up to it, the
 * slices sit before each receiver stage's rest, and wait;busy's rest is app;busy. */
TEST(trace_kstages_with_slices_under_every_stage)
{
	const uint64_t k[FK__COUNT] = { 100, 200, 100, 100, 200, 200, 100 };
	const uint64_t rk[FR__COUNT] = { 300, 400, 50, 200 };
	const uint64_t bk[FBO__COUNT][FBK__COUNT] = {
		{ 1000, 2000, 30, 40 }, { 10, 20, 0, 5 }, { 100, 200, 0, 50 }, { 60, 70, 0, 0 } };
	const uint64_t st[FS__COUNT] = { 1000 + 3070, 400, 100, 2000, 600 };
	struct kstage_in in = { FL_TCP, (1u << FK__COUNT) - 1, FRS_RUN | FRS_COPY, k, rk, bk, st,
				(1u << FS__COUNT) - 1, 1 };
	struct flow_kstage out[TR_MAX_KSTAGES + 1];
	double sum[FS__COUNT] = { 0 };
	int n, i;

	memset(out, 0, sizeof(out));
	n = trace_kstages_cut(&in, out);
	CHECK(n == TR_MAX_KSTAGES);	/* every parent cut: the bound is exact */
	CHECK(out[TR_MAX_KSTAGES].name[0] == 0);	/* nothing past it */
	for (i = 0; i < n; i++)
		sum[out[i].of] += out[i].ns_per_msg;
	for (i = 0; i < FS__COUNT; i++)
		CHECK(sum[i] == (double)st[i]);
	for (i = 0; i < n && strcmp(out[i].name, "app;busy"); i++)
		;
	CHECK(i < n && out[i].of == FS_BUSY && out[i].ns_per_msg == st[FS_BUSY] - 35);
	CHECK(!strcmp(out[i - 4].name, "bulk;send_copy") && out[i - 4].of == FS_BUSY);
	CHECK(!strcmp(out[n - 1].name, EPOLL_RETURN_STAGE));
}

TEST(trace_outliers_text_slowest_first_capped)
{
	struct trace_outlier xs[TR_TEXT_OUTLIERS + 5];
	struct trace_run run = { .outliers = xs, .n_outliers = TR_TEXT_OUTLIERS + 5,
				 .slower_than_ns = 10000000, .outliers_dropped = 7,
				 .attach_mode = "tracepoint" };
	char *s, *a, *b;
	int i;

	for (i = 0; i < run.n_outliers; i++)
		xs[i] = outlier(11 + i, 100 + i);	/* the last one is the slowest */
	s = render(text_of, &run);
	CHECK(strstr(s, "Messages slower than 10.00 ms: 25 (the slowest first)\n") != NULL);
	a = strstr(s, "35.00 ms  unix /run/a.sock: client [10/11] -> server [20/21], 124 bytes");
	b = strstr(s, "34.00 ms  unix");
	CHECK(a && b && a < b);
	CHECK(strstr(s, "send;call 1.00 us + wait;busy 35.00 ms + recv;copy+return 2.00 us") != NULL);
	CHECK(strstr(s, "  and 5 more (all of them in --json's \"outliers\"") != NULL);
	CHECK(strstr(s, "15.00 ms  unix") == NULL);	/* the 21st slowest: not shown */
	CHECK(strstr(s, "7 outliers dropped (ring buffer full)") != NULL);
	free(s);
}

/* The value of the first metrics line that starts with prefix, -1 if none. */
static double metric(const char *text, const char *prefix)
{
	const char *p = text;

	char line[1024];

	while (p && *p) {
		if (!strncmp(p, prefix, strlen(prefix))) {
			snprintf(line, sizeof(line), "%.*s", (int)strcspn(p, "\n"), p);
			return strtod(strrchr(line, ' ') + 1, NULL);
		}
		p = strchr(p, '\n');
		p = p ? p + 1 : NULL;
	}
	return -1;
}

/* --trace --metrics: beyond the busiest TR_METRICS_FLOWS flows, one "other" series per
 * transport holds the rest, counted; histograms and stage counters add up per series. */
TEST(trace_metrics_fold_beyond_the_bound)
{
	enum { N = TR_METRICS_FLOWS + 3 };
	struct trace_run run;
	static __u32 h[FL_NBUCKETS];
	char *text = NULL, name[32];
	size_t len = 0;
	FILE *f;
	int i, series = 0;
	const char *p;

	memset(&run, 0, sizeof(run));
	run.flows = calloc(N, sizeof(*run.flows));
	REQUIRE(run.flows);
	run.n_flows = N;
	for (i = 0; i < N; i++) {
		struct flow *fl = &run.flows[i];

		fl->transport = i % 2 ? FL_TCP : FL_UNIX;
		snprintf(fl->endpoint, sizeof(fl->endpoint), "ep%d", i);
		snprintf(fl->sender.comm, sizeof(fl->sender.comm), "s%d", i);
		snprintf(fl->receiver.comm, sizeof(fl->receiver.comm), "r%d", i);
		fl->messages = fl->st_cnt[FS_SEND] = 1000 - i;
		fl->lat_sum = fl->st_sum[FS_SEND] = fl->messages * 10000;	/* 10 us each */
		memset(h, 0, sizeof(h));
		h[bucket(10000)] = fl->messages;
		REQUIRE(trace_hist_merge(&fl->lat_hist, h) == 0);
		REQUIRE(trace_hist_merge(&fl->st_hist[FS_SEND], h) == 0);
	}
	f = open_memstream(&text, &len);
	REQUIRE(f);
	trace_metrics_write(&run, f);
	fclose(f);
	for (p = text; (p = strstr(p, "\nudsprobe_trace_messages_total{")); p++)
		series++;
	CHECK_INT(series, TR_METRICS_FLOWS + 2);
	CHECK_INT(metric(text, "udsprobe_trace_flows_folded "), 3);
	CHECK_INT(metric(text, "udsprobe_trace_flows "), N);
	/* flows 200 and 202 are unix, 201 TCP */
	CHECK_INT(metric(text, "udsprobe_trace_messages_total{transport=\"unix\",endpoint=\"other\""),
		  800 + 798);
	CHECK_INT(metric(text, "udsprobe_trace_messages_total{transport=\"tcp\",endpoint=\"other\""),
		  799);
	CHECK_INT(metric(text, "udsprobe_trace_message_latency_seconds_count{transport=\"tcp\","
			 "endpoint=\"other\""), 799);
	snprintf(name, sizeof(name), "ep%d", TR_METRICS_FLOWS - 1);
	CHECK(strstr(text, name));
	snprintf(name, sizeof(name), "\"ep%d\"", TR_METRICS_FLOWS);
	CHECK(!strstr(text, name));
	/* 10 us: above the 8.192 us bound, at or under 16.384 us; one stage histogram per series */
	p = strstr(text, "udsprobe_trace_stage_latency_seconds_bucket{transport=\"unix\","
		   "endpoint=\"ep0\"");
	REQUIRE(p);
	CHECK(strstr(p, "le=\"8.192e-06\"} 0\n"));
	CHECK(strstr(p, "le=\"1.6384e-05\"} 1000\n"));
	CHECK(!strstr(text, "stage=\"wait;epoll\",le="));	/* no messages: no histogram */
	CHECK(strstr(text, "stage=\"send;call\",le="));
	CHECK(!strstr(text, "udsprobe_trace_kernel_stage_seconds_total{"));	/* not --detail full */
	for (i = 0; i < N; i++)
		trace_flow_free(&run.flows[i]);
	free(run.flows);
	free(text);
}

/* --trace --live: P50 and P99 are over the last interval's messages, not the run's. */
TEST(trace_live_percentiles_over_the_interval)
{
	struct trace_run snap;
	struct flow fl;
	struct trace_live *tl;
	struct trace_live_head head = { .attach_mode = "tracepoint" };
	static __u32 h[FL_NBUCKETS];
	char text[4096] = "", *second;
	FILE *out = tmpfile();
	int saved = dup(1);
	size_t n;

	REQUIRE(out && saved >= 0);
	fflush(stdout);
	REQUIRE(dup2(fileno(out), 1) == 1);	/* not a terminal: plain text on stdout */
	tl = trace_live_open();
	REQUIRE(tl);
	memset(&fl, 0, sizeof(fl));
	memset(&snap, 0, sizeof(snap));
	fl.transport = FL_UNIX;
	strcpy(fl.endpoint, "/run/x.sock");
	fl.messages = 1000;
	h[bucket(10000)] = 1000;		/* 1000 messages of 10 us */
	REQUIRE(trace_hist_merge(&fl.lat_hist, h) == 0);
	fl.p50 = fl.p99 = fl_bucket_value(bucket(10000));
	snap.flows = &fl;
	snap.n_flows = 1;
	head.elapsed_ns = 1000000000;
	trace_live_frame(tl, &snap, &head);
	memset(h, 0, sizeof(h));
	h[bucket(2000000)] = 100;		/* then 100 of 2 ms: the run's p50 stays 10 us */
	REQUIRE(trace_hist_merge(&fl.lat_hist, h) == 0);
	fl.messages = 1100;
	fl.p99 = fl_bucket_value(bucket(2000000));
	head.elapsed_ns = 2000000000;
	trace_live_frame(tl, &snap, &head);
	trace_live_close(tl);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	rewind(out);
	n = fread(text, 1, sizeof(text) - 1, out);
	text[n] = 0;
	fclose(out);
	second = strstr(text, "--- 2.0 s");
	REQUIRE(second);
	/* first frame: 10 us; second: 100 messages/s, all of 2 ms, p50 too */
	if (!strstr(text, "unix    1000  9.73 us  9.73 us"))
		unit_fail(__FILE__, __LINE__, "frames: %s", text);
	if (!strstr(second, "unix     100  2.03 ms  2.03 ms"))
		unit_fail(__FILE__, __LINE__, "frames: %s", text);
	trace_flow_free(&fl);
}

TEST(trace_flow_map_sized_by_cpus)
{
	/* 8 KiB per flow per CPU, at most 128 MiB by default: 2 CPUs keep 4096, 64 CPUs ~260 */
	CHECK_INT(trace_flow_map_entries(2, 0), TR_FLOW_MAP_DEFAULT);
	CHECK_INT(trace_flow_map_entries(0, 0), TR_FLOW_MAP_DEFAULT);
	CHECK_INT(trace_flow_map_entries(64, 0), TR_FLOW_MAP_BYTES / (64 * sizeof(struct fl_stats)));
	REQUIRE((uint64_t)trace_flow_map_entries(64, 0) * 64 * sizeof(struct fl_stats) <= TR_FLOW_MAP_BYTES);
	CHECK_INT(trace_flow_map_entries(4096, 0), TR_FLOW_MAP_MIN);
	CHECK_INT(trace_flow_map_entries(64, 9000), 9000);
}
