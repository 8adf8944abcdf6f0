// SPDX-License-Identifier: GPL-2.0
/* user/lib/stage_table.c: the boundary table, stage naming per mode, --list-stages. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stage_table.h"
#include "unit.h"
#include "workload.h"	/* transport_names */

static const char *name(enum transport t, int prev, int last, bool per_call, bool func)
{
	static char buf[STAGE_NAME_LEN];

	stage_name(t, prev, last, per_call, func, buf, sizeof(buf));
	return buf;
}

TEST(stage_table_every_stage_has_a_marker_or_is_always_seen)
{
	int b, t;

	for (b = B_SEND_ENTER + 1; b < B__COUNT; b++) {
		const struct stage_boundary *d = stage_boundary(b);

		REQUIRE(d);
		CHECK(d->doc && *d->doc);
		for (t = 0; t < TR__COUNT; t++) {
			if (!d->stage[t] || d->always)
				continue;
			/* fentry/kprobe see every boundary; tracepoint mode may merge some */
			if (!stage_marker(b, t, false))
				unit_fail(__FILE__, __LINE__, "boundary %d on %s has no function", b,
					  transport_names[t]);
			CHECK(strchr(d->stage[t], ';') != NULL);	/* "phase;stage" */
		}
	}
	CHECK(stage_boundary(-1) == NULL);
	CHECK(stage_boundary(B__COUNT) == NULL);
	CHECK(stage_marker(B__COUNT, TR_TCP, true) == NULL);
}

TEST(stage_table_markers_per_mode)
{
	CHECK_STR(stage_marker(B_PROTO, TR_TCP, false), "tcp_sendmsg");
	CHECK_STR(stage_marker(B_PROTO, TR_TCP, true), "tcp_sendmsg_locked");
	CHECK(stage_marker(B_PROTO, TR_UNIX, true) == NULL);	/* no tracepoint there */
	CHECK_STR(stage_marker(B_WAKE_END, TR_UNIX, true), "sock_send_length");
	CHECK_STR(stage_marker(B_WAKE_END, TR_TCP, true), "softirq_exit");
	CHECK(stage_boundary(B_T_XMIT)->stage[TR_UNIX] == NULL);	/* TCP only */
}

TEST(stage_table_names_one_boundary)
{
	CHECK_STR(name(TR_TCP, B_SEND_ENTER, B_PROTO, false, false), "send;syscall");
	CHECK_STR(name(TR_TCP, B_SEND_ENTER, B_PROTO, false, true), "send;syscall");	/* no leaf */
	CHECK_STR(name(TR_TCP, B_PROTO, B_T_LOCKED, false, true), "send;sock;tcp_sendmsg");
	CHECK_STR(name(TR_TCP, B_PROTO, B_T_LOCKED, false, false), "send;sock");
	CHECK_STR(name(TR_UNIX, B_PROTO, B_U_ALLOC, false, true), "send;sock;unix_stream_sendmsg");
	/* boundaries of the other transport in between do not count */
	CHECK_STR(name(TR_UNIX, B_U_QUEUE, B_DATA_READY, false, true), "send;sock;skb_queue_tail");
	CHECK_STR(name(TR_TCP, B_COPY_START, B_COPY_DONE, false, true),
		  "recv;copy;skb_copy_datagram_iter");
	CHECK_STR(name(TR_TCP, B_COPY_DONE, B_RECV_EXIT, false, true), "recv;return");
}

TEST(stage_table_names_merged_stages)
{
	/* 6.18 tracepoint mode: UDS has no tracepoint at unix_stream_sendmsg */
	CHECK_STR(name(TR_UNIX, B_SEND_ENTER, B_DATA_READY, false, false), "send;syscall+sock");
	/* ... and TCP none between tcp_sendmsg_locked and net_dev_queue */
	CHECK_STR(name(TR_TCP, B_PROTO, B_DEV_QUEUE, false, false), "send;sock+tcp_ip_out");
	/* a repeated leaf appears once */
	CHECK_STR(name(TR_TCP, B_T_LOCKED, B_T_TRANSMIT, false, true), "send;sock+tcp_ip_out");
	/* merged names never carry a function leaf */
	CHECK_STR(name(TR_TCP, B_SEND_ENTER, B_T_LOCKED, false, true), "send;syscall+sock");
}

TEST(stage_table_names_per_call)
{
	CHECK_STR(name(TR_UNIX, B_SEND_EXIT, B_RUN, true, true), "recv;wait");
	CHECK_STR(name(TR_TCP, B_SEND_EXIT, B_RUN, true, false), "recv;wait");
	CHECK_STR(name(TR_TCP, B_PROTO, B_T_LOCKED, true, true), "send;sock");	/* no leaf per call */
	CHECK_STR(name(TR_TCP, B_SEND_EXIT, B_RUN, false, false), "sched;wait_cpu");
}

TEST(stage_table_list_names_every_stage)
{
	char *buf = NULL, line[STAGE_NAME_LEN * 2];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int b, t;

	REQUIRE(f);
	stages_list(f);
	REQUIRE(!fclose(f));
	CHECK(strstr(buf, "\nAF_UNIX path ") != NULL);
	CHECK(strstr(buf, "\nTCP loopback path ") != NULL);
	CHECK(strstr(buf, "recv;wait") && strstr(buf, "conn;connect") && strstr(buf, "app;gap"));
	for (t = 0; t < TR__COUNT; t++)
		for (b = B_SEND_ENTER + 1; b < B__COUNT; b++) {
			const struct stage_boundary *d = stage_boundary(b);

			if (!d->stage[t])
				continue;
			snprintf(line, sizeof(line), "  %s%s%s ", d->stage[t], d->leaf[t] ? ";" : "",
				 d->leaf[t] ? d->leaf[t] : "");
			if (!strstr(buf, line))
				unit_fail(__FILE__, __LINE__, "--list-stages lacks '%s'", line);
			if (!strstr(buf, d->doc))
				unit_fail(__FILE__, __LINE__, "--list-stages lacks '%s'", d->doc);
		}
	/* the tracepoint column: the marker, or that the stage merges into the next */
	CHECK(strstr(buf, "sock_send_length") != NULL);
	CHECK(strstr(buf, "- (merged into next)") != NULL);
	free(buf);
}

TEST(stages_renamed_marker_has_older_name)
{
	/* every renamed marker is a marker of the table, and plain names have no older one */
	int b, t, found = 0;

	for (b = 0; b < B__COUNT; b++)
		for (t = 0; t < TR__COUNT; t++) {
			const char *f = stage_marker(b, t, false);

			if (f && stage_func_older(f))
				found++;
		}
	CHECK(found > 0);
	CHECK_STR(stage_func_older("__netif_rx"), "netif_rx");
	CHECK(stage_func_older("tcp_sendmsg") == NULL);
	CHECK(stage_func_older("netif_rx") == NULL);
}

/* Every name the table makes, in every mode and attribution: both transports, every boundary
 * pair, per call or not, function level or not; fn checks each; the number of names. */
static int each_stage_name(void (*fn)(const char *name, int t, int *marked), int *marked)
{
	char buf[STAGE_NAME_LEN];
	int t, p, l, pc, fl, n = 0;

	for (t = 0; t < TR__COUNT; t++)
		for (p = 0; p < B__COUNT; p++)
			for (l = p + 1; l < B__COUNT; l++)
				for (pc = 0; pc < 2; pc++)
					for (fl = 0; fl < 2; fl++) {
						stage_name(t, p, l, pc, fl, buf, sizeof(buf));
						if (!buf[0])
							continue;
						fn(buf, t, marked);
						n++;
					}
	return n;
}

/* What the names say: TCP/IP output, the loopback device, the receive softirq on TCP. */
static void check_tcp_only(const char *name, int t, int *marked)
{
	bool want = t == TR_TCP && (strstr(name, "tcp_ip_out") || strstr(name, "dev_xmit") ||
				    !strncmp(name, "rx_softirq;", 11));

	if (stage_tcp_only(name) != want)
		unit_fail(__FILE__, __LINE__, "%s (%s): tcp_only %d", name, t ? "tcp" : "unix", !want);
	*marked += want;
}

/* Which stages are TCP's alone comes from the table: every name the table makes agrees with
 * what the names say, and no UDS name is TCP's. */
TEST(stage_table_tcp_only_from_the_table)
{
	int marked = 0;

	CHECK(each_stage_name(check_tcp_only, &marked) > 100 && marked > 10);
	CHECK(stage_tcp_only(SOFTIRQ_DEFERRED_STAGE));
	CHECK(stage_tcp_only("rx_softirq;deferred;wait"));
	CHECK(stage_tcp_only("rx_softirq;ip_tcp_in+enqueue_wakeup"));
	CHECK(!stage_tcp_only("send;syscall+sock+enqueue_wakeup"));
	CHECK(!stage_tcp_only("deliver;enqueue_wakeup"));
	CHECK(!stage_tcp_only("bulk;send_copy"));
	CHECK(!stage_tcp_only("send;call"));
}

/* Which stages copy the payload comes from the table's copy column: every name the table
 * makes agrees with the names' own word ("copy" in the stage or its function), and so do the
 * bulk slices. */
static void check_copy(const char *name, int t, int *marked)
{
	bool want = strstr(name, "copy") != NULL;

	if (stage_is_copy(name) != want)
		unit_fail(__FILE__, __LINE__, "%s (%s): copy %d", name, t ? "tcp" : "unix", !want);
	*marked += want;
}

TEST(stage_table_copy_from_the_table)
{
	int i, marked = 0;

	CHECK(each_stage_name(check_copy, &marked) > 100 && marked > 10);
	for (i = 0; i < STAGE_NR_BULK; i++)
		CHECK(stage_is_copy(stage_bulk_names[i]) == (strstr(stage_bulk_names[i], "copy") != NULL));
	CHECK(stage_is_copy("recv;copy"));
	CHECK(stage_is_copy("recv;copy+return"));
	CHECK(!stage_is_copy("send;sock"));
	CHECK(!stage_is_copy("send;sock;sock_alloc_send_pskb"));
	CHECK(!stage_is_copy("send;call"));
	CHECK(!stage_is_copy(SOFTIRQ_DEFERRED_STAGE));
}
