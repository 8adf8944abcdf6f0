// SPDX-License-Identifier: GPL-2.0
/* --if-unix (predict.c): a TCP flow's prediction over AF_UNIX from a calibration file, worked
 * out by hand for each case of the model (docs/PREDICT.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "predict.h"
#include "unit.h"

/* Every run, kind and size alike: the differences are exact, the noise 0. Columns: send, wake,
 * recv per transport (unix, tcp), then the untraced latencies; a connection's: its latencies,
 * then its messages' send, wake, recv, which cost TCP first_extra ns more in send() than the
 * ping-pong's, then the client's connect(); the close()s cost TCP close_extra ns more, on
 * average over the two sides. */
static int write_calibration(char *path, size_t len, int first_extra, int close_extra)
{
	static const char *const pl[] = { "same", "split" }, *const kind[] = { "corrected", "traced" };
	static const unsigned long sizes[] = { 16, 256, 4096, 65536 };
	int fd, r, k, p, s;
	FILE *f;

	snprintf(path, len, "/tmp/udsprobe-predict-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0 || !(f = fdopen(fd, "w")))
		return -1;
	fprintf(f, "kernel\tk\ncpu\tc\ndate\t2026-11-27T00:00:00Z\nattach\ttracepoint\n"
		"probe_ns\t50\n");
	for (r = 1; r <= 3; r++)
		for (k = 0; k < 2; k++)
			for (p = 0; p < 2; p++)
				for (s = 0; s < 4; s++)
					fprintf(f, "%d\t%s\t%lu\t%s\t%s\n", r, pl[p], sizes[s], kind[k],
						p ? "2000\t1900\t3000\t7000\t6000\t2000\t6000\t9000" :
						"1000\t900\t1500\t4000\t3000\t1000\t3000\t5000");
	for (r = 1; r <= 3; r++)
		fprintf(f, "%d\tsame\tconnect\t10000\t20000\t1000\t900\t1500\t%d\t%d\t1000\t3000\t"
			"15000\n%d\tsplit\tconnect\t20000\t40000\t2000\t1900\t3000\t%d\t%d\t2000\t"
			"5000\t25000\n", r,
			4000 + first_extra, 3000 + first_extra, r, 7000 + first_extra,
			6000 + first_extra);
	for (r = 1; r <= 3; r++)
		fprintf(f, "%d\tclose\t2000\t3000\t%d\t%d\n", r, 2000 + close_extra,
			3000 + close_extra);
	return fclose(f);
}

static struct flow tcp_flow(const char *from, const char *to, uint64_t msgs, uint64_t cross,
			    uint64_t waited, double send, double busy, double recv, double mean)
{
	struct flow fl = { .transport = FL_TCP, .messages = msgs, .bytes = msgs * 41,
			   .cross_cpu = cross, .conns = msgs, .mean = mean, .p50 = mean, .p99 = 2 * mean };

	snprintf(fl.sender.comm, sizeof(fl.sender.comm), "%s", from);
	snprintf(fl.receiver.comm, sizeof(fl.receiver.comm), "%s", to);
	fl.sender.n_pids = fl.receiver.n_pids = 1;
	fl.stages[FS_SEND].ns_per_msg = send;
	fl.stages[FS_EPOLL].count = waited;
	fl.stages[FS_BUSY].ns_per_msg = busy;
	fl.stages[FS_RECV].ns_per_msg = recv;
	fl.stages[FS_RECV].count = msgs;
	return fl;
}

TEST(predict_worked_examples)
{
	char path[64];
	struct flow flows[4];
	struct trace_run run = { .flows = flows, .n_flows = 4, .duration_ns = 1000000000,
				 .detail = "syscall" };

	CHECK_INT(write_calibration(path, sizeof(path), 0, 0), 0);
	/* waiting on another CPU: the send() up to the wakeup (6000 - 1900) and the copy
	 * (2000 - 3000) */
	flows[0] = tcp_flow("a", "b", 1000, 1000, 1000, 8000, 0, 1000, 12000);
	/* read on the sender's CPU: the whole send() (4000 - 1000) and the copy (1000 - 1500) */
	flows[1] = tcp_flow("c", "d", 1000, 0, 0, 8000, 0, 1000, 12000);
	/* a receiver (srv) busy with other messages: it saves (100k x 4100 as the sender of the
	 * flow below + 100k x -500 as this one's receiver) / 1 s = 0.36 of its time */
	flows[2] = tcp_flow("cli", "srv", 100000, 0, 0, 8000, 50000, 1000, 70000);
	flows[2].conns_to_srv = flows[2].conns;	/* cli connected: srv saves nothing of that */
	flows[3] = tcp_flow("srv", "cli", 100000, 100000, 100000, 8000, 0, 1000, 12000);
	/* a unix flow is not predicted; a too-short one says why */
	CHECK_INT(predict_from_file(&run, path), 0);
	unlink(path);

	CHECK(flows[0].if_unix.predicted);
	CHECK_DBL(flows[0].if_unix.saved, 3100, 1e-6);
	CHECK_DBL(flows[0].if_unix.mean, 8900, 1e-6);
	CHECK_DBL(flows[0].if_unix.noise_ns, 0, 1e-9);
	CHECK_DBL(flows[0].if_unix.mean_lo, 8900, 1e-6);
	CHECK_DBL(flows[0].if_unix.mean_hi, 8900, 1e-6);
	/* the kernel's CPU: the whole send() and the copy, split placement: 5000 - 1000 */
	CHECK_DBL(flows[0].if_unix.path_ns, 9000, 1e-6);
	CHECK_DBL(flows[0].if_unix.path_unix_ns, 5000, 1e-6);
	CHECK_DBL(flows[0].if_unix.p99, 24000 - 3100, 1e-6);

	CHECK_DBL(flows[1].if_unix.saved, 2500, 1e-6);
	CHECK_DBL(flows[1].if_unix.mean, 9500, 1e-6);

	CHECK_DBL(flows[2].if_unix.waits_saved, 50000 * 0.36, 1e-6);
	CHECK_DBL(flows[2].if_unix.saved, 2500 + 18000, 1e-6);
	/* the waits' model error: half of them either way */
	CHECK_DBL(flows[2].if_unix.mean_lo, 70000 - 20500 - 9000, 1e-6);
	CHECK_DBL(flows[2].if_unix.mean_hi, 70000 - 20500 + 9000, 1e-6);
	CHECK_DBL(flows[3].if_unix.saved, 3100, 1e-6);
	/* a connection beyond what its two messages are credited with, from --mode connect's
	 * run: 40000 - 20000 - 2 x ((6000 - 1900) + (2000 - 3000)) on two CPUs, 20000 - 10000 -
	 * 2 x ((4000 - 1000) + (1000 - 1500)) on one */
	CHECK_DBL(flows[0].if_unix.conn_saved, 13800, 1e-6);
	CHECK_DBL(flows[1].if_unix.conn_saved, 5000, 1e-6);
	CHECK_STR(run.basis.date, "2026-11-27T00:00:00Z");
	CHECK_INT(run.basis.n_sizes, 4);
}

/* A connection's first message costs TCP 2000 ns more in send() than a warm one: a flow with
 * a connection per two messages saves half of that more per message, and its connection
 * 2 x 2000 less beyond its messages (they carry it). */
TEST(predict_first_message_of_a_connection)
{
	char path[64];
	struct flow flows[1];
	struct trace_run run = { .flows = flows, .n_flows = 1, .duration_ns = 1000000000,
				 .detail = "syscall" };

	CHECK_INT(write_calibration(path, sizeof(path), 2000, 0), 0);
	flows[0] = tcp_flow("c", "d", 1000, 0, 0, 8000, 0, 1000, 12000);
	flows[0].conns = 500;
	CHECK_INT(predict_from_file(&run, path), 0);
	unlink(path);
	/* read on the sender's CPU: the whole send() (4000 - 1000 + 0.5 x 2000), the copy
	 * (1000 - 1500) */
	CHECK_DBL(flows[0].if_unix.saved, 3500, 1e-6);
	CHECK_DBL(flows[0].if_unix.mean, 8500, 1e-6);
	/* 20000 - 10000 - 2 x ((6000 - 1000) + (1000 - 1500)) */
	CHECK_DBL(flows[0].if_unix.conn_saved, 1000, 1e-6);
}

/* A client that opens a connection per request and reads the replies while busy: it saves,
 * over the run, what its messages save, the connect()s of the connections it opened and its
 * close()s (each connection carries a request and a reply: half in each flow), and the
 * replies' waits shrink by that share of its time. */
TEST(predict_connections_shrink_the_connecting_side)
{
	char path[64];
	struct flow flows[2];
	struct trace_run run = { .flows = flows, .n_flows = 2, .duration_ns = 100000000,
				 .detail = "syscall" };

	CHECK_INT(write_calibration(path, sizeof(path), 0, 4000), 0);
	flows[0] = tcp_flow("cl", "sv", 1000, 0, 0, 8000, 100000, 1000, 120000);
	flows[0].conns_to_srv = 1000;
	flows[1] = tcp_flow("sv", "cl", 1000, 0, 0, 8000, 100000, 1000, 120000);
	CHECK_INT(predict_from_file(&run, path), 0);
	unlink(path);
	/* one CPU: a connection saves 20000 - 10000 - 2 x (3000 - 500) = 5000 beyond its
	 * messages, its connect() 15000 - 3000, each end's close() 4000; cl: 1000 x 3000 (its
	 * requests' send) + 1000 x -500 (the replies' copy) + 2 x 1000 x 12000 / 2 (its
	 * connect()s, half in each flow) + 2 x 1000 x 4000 / 2 (its close()s) = 18.5 ms of 100 ms */
	CHECK_DBL(flows[0].if_unix.conn_saved, 5000, 1e-6);
	CHECK_DBL(flows[1].if_unix.waits_saved, 100000 * 0.185, 1e-6);
	CHECK_DBL(flows[1].if_unix.saved, 3000 - 500 + 18500, 1e-6);
	/* sv opened none: its requests' waits shrink by its messages and its close()s,
	 * (1000 x 3000 + 1000 x -500 + 2 x 1000 x 4000 / 2) / 100 ms */
	CHECK_DBL(flows[0].if_unix.waits_saved, 100000 * 0.065, 1e-6);
	CHECK_DBL(flows[0].if_unix.saved, 2500 + 6500, 1e-6);
}

TEST(predict_says_why_not)
{
	char path[64];
	struct flow flows[3];
	struct trace_run run = { .flows = flows, .n_flows = 3, .duration_ns = 1000000000,
				 .detail = "syscall" };

	CHECK_INT(write_calibration(path, sizeof(path), 0, 0), 0);
	flows[0] = tcp_flow("a", "b", 99, 0, 0, 8000, 0, 1000, 12000);
	flows[1] = tcp_flow("a", "b", 1000, 0, 0, 8000, 0, 1000, 12000);
	flows[1].bytes = 1000 * 100000ull;
	flows[2] = tcp_flow("a", "b", 1000, 0, 0, 8000, 0, 1000, 12000);
	flows[2].transport = FL_UNIX;
	CHECK_INT(predict_from_file(&run, path), 0);
	CHECK(!flows[0].if_unix.predicted);
	CHECK_STR(flows[0].if_unix.why, "99 messages: too few for a mean");
	CHECK(!flows[1].if_unix.predicted);
	CHECK(strstr(flows[1].if_unix.why, "beyond the calibration's largest (65536 bytes)"));
	CHECK(!flows[2].if_unix.predicted && !*flows[2].if_unix.why);
	/* a file with a point missing is not a calibration */
	CHECK_INT(truncate(path, 200), 0);
	CHECK(predict_from_file(&run, path) < 0);
	unlink(path);
}

/* --detail full: the TCP-only kernel-stage programs' cost per hit (measured during the trace)
 * and the probe around each (probe_ns) go with the switch: TCP/IP output, the device queue,
 * the softirq's entry, netif_receive_skb before the receiver's wakeup, the softirq's exit after
 * it; sk_data_ready is on both paths. */
TEST(predict_full_detail_probes)
{
	char path[64];
	struct flow flows[2];
	struct trace_run run = { .flows = flows, .n_flows = 2, .duration_ns = 1000000000,
				 .detail = "full", .kstages = (1u << FK__COUNT) - 1 };
	int k;

	for (k = 0; k < FK__COUNT; k++)
		run.kstage_hit_ns[k] = 100;
	CHECK_INT(write_calibration(path, sizeof(path), 0, 0), 0);
	flows[0] = tcp_flow("a", "b", 1000, 1000, 1000, 8000, 0, 1000, 12000);
	flows[1] = tcp_flow("c", "d", 1000, 0, 0, 8000, 0, 1000, 12000);
	CHECK_INT(predict_from_file(&run, path), 0);
	CHECK_DBL(flows[0].if_unix.saved, 3100 + 4 * 150, 1e-6);
	CHECK_DBL(flows[1].if_unix.saved, 2500 + 5 * 150, 1e-6);
	/* the kernel's CPU: every such hit */
	CHECK_DBL(flows[0].if_unix.path_unix_ns, 9000 - 4000 - 5 * 150, 1e-6);
	/* a run time not measured: the traced stages stand in (the same numbers here) */
	run.kstage_hit_ns[FK_DEV_QUEUE] = 0;
	CHECK_INT(predict_from_file(&run, path), 0);
	CHECK_DBL(flows[1].if_unix.saved, 2500, 1e-6);
	unlink(path);
}
