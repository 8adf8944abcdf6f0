// SPDX-License-Identifier: GPL-2.0
/* --backlog's pure parts: names, filters, JSON lines and Prometheus text (open_memstream). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "capability.h"
#include <bpf/libbpf.h>

#include "backlog_bpf.h"
#include "backlog_out.h"
#include "backlog_table.h"
#include "unix_name.h"
#include "backlog.skel.h"
#include "util.h"

static const char *addr(const char *path, size_t len)
{
	static char buf[600];

	fmt_unix_addr(path, len, buf, sizeof(buf));
	return buf;
}

TEST(backlog_addr_forms)
{
	CHECK_STR(addr("/run/php/fpm.sock", 17), "/run/php/fpm.sock");
	CHECK_STR(addr("\0a\0b", 4), "@a\\0b");
	CHECK_STR(addr("\0a@b", 4), "@a@b");
	CHECK_STR(addr("@rel", 4), "\\x40rel");		/* a path, not an abstract name */
	CHECK_STR(addr("/t/\xff\x1b[2J\n", 9), "/t/\\xff\\x1b[2J\\x0a");
	CHECK_STR(addr("\0x\\y", 4), "@x\\\\y");
}

TEST(backlog_parse_addr_round_trip)
{
	static const struct { const char *bytes; size_t len; } in[] = {
		{ "/run/php/fpm.sock", 17 }, { "\0a\0b", 4 }, { "\0a@b", 4 }, { "@rel", 4 },
		{ "/t/\xff\x1b[2J\n", 9 }, { "\0", 1 },
	};
	char path[BL_PATH_LEN];
	uint32_t len;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(in); i++) {
		char text[600];

		fmt_unix_addr(in[i].bytes, in[i].len, text, sizeof(text));
		REQUIRE(parse_unix_addr(text, path, &len) == 0);
		CHECK_INT(len, in[i].len);
		CHECK(!memcmp(path, in[i].bytes, in[i].len));
	}
	CHECK_INT(parse_unix_addr("", path, &len), -EINVAL);
	CHECK_INT(parse_unix_addr("/a\\0b", path, &len), -EINVAL);	/* NUL ends a path */
	CHECK_INT(parse_unix_addr("/bad\\q", path, &len), -EINVAL);
}

/* A state with one unix and one tcp listener, as the sampler and counters leave it. */
#define CID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define CG "cgroup=\"/system.slice/docker-" CID ".scope\",container=\"" CID "\""

static void fixture(struct bl_state *s, const struct watch_filters *f, struct client *cl)
{
	struct listener *l;

	bl_state_init(s, f);
	s->netns = 4026531840u;
	s->run.attach_mode = "tracepoint";
	s->run.attach_reason = "fentry rejected: x; tracepoint works";
	s->somaxconn = 4096;
	l = bl_add_listener(s, BL_UNIX);
	memcpy(l->path, "\0php\0x", 6);
	l->path_len = 6;
	l->netns = 4026531840u;
	l->ino = 77;
	bl_set_addr(l, NULL);
	l->limit = 4;
	l->peak = 5;
	l->qlen = 5;
	l->tot.overflows = 15;
	l->present = true;
	l->holders[0] = 100;
	l->n_holders = 2;
	strcpy(l->owner_comm, "php-fpm\\x1b");
	strcpy(l->cgroup, "/system.slice/docker-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope");
	cgroup_container_id(l->cgroup, l->container, sizeof(l->container));
	l->somaxconn = 4096;
	memset(cl, 0, 2 * sizeof(*cl));
	cl[0].tgid = 200;
	cl[0].netns = 4026531840u;	/* its cgroup id unknown (0) */
	strcpy(cl[0].comm, "nginx");
	cl[0].v.overflows = 10;
	strcpy(cl[1].comm, "nginx");	/* exited nginx processes, per comm */
	cl[1].v.overflows = 5;
	l->clients = cl;
	l->n_clients = 2;
	/* accept waits: 1 of 8-16 us, 2 of 1-2 ms (max 1.5 ms); depths 0, 1 and 2 of 256-511
	 * (max 300) */
	l->h = calloc(1, sizeof(*l->h));
	if (l->h) {
		l->h->cur.wait_slots[3] = 1;
		l->h->cur.wait_slots[10] = 2;
		l->h->cur.accepted = 3;
		l->h->cur.wait_ns = 3010000;
		l->h->cur.wait_max_ns = 1500000;
		l->h->cur.depth_slots[0] = 1;
		l->h->cur.depth_slots[1] = 1;
		l->h->cur.depth_slots[20] = 2;
		l->h->cur.queued = 4;
		l->h->cur.depth_sum = 601;
		l->h->cur.depth_max = 300;
	}
	l = bl_add_listener(s, BL_TCP);
	l->port = 9000;
	l->netns = 4026532000u;		/* another netns, known from counts */
	bl_set_addr(l, NULL);
	l->tot.syn_retrans = 3;
	s->ls[0].watched = bl_match_filters(s, &s->ls[0]);
	s->ls[1].watched = bl_match_filters(s, &s->ls[1]);
}

static void unfixture(struct bl_state *s)
{
	s->ls[0].clients = NULL;	/* the fixture's, on the stack */
	bl_state_free(s);
}

TEST(backlog_filters)
{
	struct watch_filters f = {};
	struct bl_state s;
	struct client cl[2];

	fixture(&s, &f, cl);
	CHECK(s.ls[0].watched && s.ls[1].watched);		/* no filter: all */
	f.unix_paths[f.n_unix++] = "@php\\0x";
	CHECK(bl_match_filters(&s, &s.ls[0]));
	CHECK(!bl_match_filters(&s, &s.ls[1]));
	f.unix_paths[0] = "@php@x";				/* another name */
	CHECK(!bl_match_filters(&s, &s.ls[0]));
	f.n_unix = 0;
	f.ports[f.n_ports++] = 9000;
	CHECK(bl_match_filters(&s, &s.ls[1]) && !bl_match_filters(&s, &s.ls[0]));
	f.n_ports = 0;
	f.pids[f.n_pids++] = 100;				/* the holder */
	CHECK(bl_match_filters(&s, &s.ls[0]) && !bl_match_filters(&s, &s.ls[1]));
	f.n_pids = 0;
	f.netns = 4026532000u;					/* --netns narrows */
	CHECK(!bl_match_filters(&s, &s.ls[0]) && bl_match_filters(&s, &s.ls[1]));
	f.ports[f.n_ports++] = 9000;
	CHECK(bl_match_filters(&s, &s.ls[1]));
	f.ports[0] = 9001;					/* and-ed with the others */
	CHECK(!bl_match_filters(&s, &s.ls[1]));
	f.n_ports = 0;
	f.netns = 0;
	f.cgroup = "/sys/fs/cgroup/system.slice";		/* --cgroup: the subtree */
	strcpy(f.cgroup_rel, "/system.slice");
	CHECK(bl_match_filters(&s, &s.ls[0]) && !bl_match_filters(&s, &s.ls[1]));
	strcpy(f.cgroup_rel, "/system.slic");			/* a component, not a prefix */
	CHECK(!bl_match_filters(&s, &s.ls[0]));
	strcpy(f.cgroup_rel, "/");
	CHECK(bl_match_filters(&s, &s.ls[0]) && !bl_match_filters(&s, &s.ls[1]));
	unfixture(&s);
}

/* Container ids from the cgroup paths of the runtimes (docs/BACKLOG.md). */
TEST(backlog_container_id)
{
	static const struct { const char *cg, *id; } cases[] = {
		{ "/system.slice/docker-" CID ".scope", CID },
		{ "/docker/" CID, CID },
		{ "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1a2b.slice/"
		  "cri-containerd-" CID ".scope", CID },
		{ "/kubepods/besteffort/pod0f1e/" CID, CID },
		{ "/machine.slice/libpod-" CID ".scope/container", CID },
		{ "/kubepods.slice/crio-" CID ".scope", CID },
		{ "/machine.slice/libpod-conmon-" CID ".scope", "" },	/* the monitor */
		{ "/system.slice/php8.2-fpm.service", "" },
		{ "/docker/" CID "0", "" },				/* 65 digits */
		{ "", "" },
	};
	char out[CONTAINER_ID_LEN];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		cgroup_container_id(cases[i].cg, out, sizeof(out));
		CHECK_STR(out, cases[i].id);
	}
	CHECK(bl_cgroup_under("/a/b", "/a") && bl_cgroup_under("/a", "/a"));
	CHECK(!bl_cgroup_under("/ab", "/a") && !bl_cgroup_under("", "/"));
}

static char *capture(struct bl_state *s, int what)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	if (what == 0)
		bl_json_summary(s, f, 2.5);
	else if (what == 1)
		bl_prom_print(s, f, 1700000000);
	else
		bl_print_summary(s, f, 2.5);
	fclose(f);
	return buf;
}

TEST(backlog_json_summary)
{
	struct watch_filters f = {};
	struct bl_state s;
	struct client cl[2];
	char want[2048], *got;

	fixture(&s, &f, cl);
	got = capture(&s, 0);
	REQUIRE(got != NULL);
	snprintf(want, sizeof(want),
		 "{\"event\":\"summary\",\"family\":\"unix\",\"address\":\"@php\\\\0x\","
		 "\"netns\":4026531840,\"owner_pid\":100,\"owner_comm\":\"php-fpm\\\\x1b\","
		 "\"cgroup\":\"/system.slice/docker-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope\",\"container\":\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\","
		 "\"limit\":4,\"somaxconn\":4096,\"peak_queue\":5,\"overflows\":15,"
		 /* p50 and p99 in the 1-2 ms slot, capped at the max; depth p99 likewise */
		 "\"accepts\":3,\"accept_wait_p50_s\":0.0015,\"accept_wait_p99_s\":0.0015,"
		 "\"accept_wait_max_s\":0.0015,\"queued\":4,\"queue_depth_p50\":1,"
		 "\"queue_depth_p99\":300,\"queue_depth_max\":300,\"clients\":["
		 "{\"pid\":200,\"comm\":\"nginx\",\"count\":10,\"netns\":4026531840,"
		 "\"cgroup\":null,\"container\":null},"
		 "{\"pid\":null,\"comm\":\"nginx\",\"count\":5,\"netns\":null,\"cgroup\":null,"
		 "\"container\":null}]}\n"
		 "{\"event\":\"summary\",\"family\":\"tcp\",\"address\":\"*:9000\","
		 "\"netns\":4026532000,\"owner_pid\":null,\"owner_comm\":null,\"cgroup\":null,"
		 "\"container\":null,\"limit\":0,\"somaxconn\":null,"
		 "\"peak_queue\":0,\"overflows\":0,\"accepts\":0,\"accept_wait_p50_s\":0,"
		 "\"accept_wait_p99_s\":0,\"accept_wait_max_s\":0,\"queued\":0,"
		 "\"queue_depth_p50\":0,\"queue_depth_p99\":0,\"queue_depth_max\":0,"
		 "\"clients\":[]}\n"
		 "{\"event\":\"run\",\"attach_mode\":\"tracepoint\",\"attach_reason\":"
		 "\"fentry rejected: x; tracepoint works\",\"kernel\":\"%s\",\"duration_s\":2.5,"
		 "\"tcp_listen_overflow_reason\":false,\"tcp_overflows_counted\":true,"
		 "\"tcp_overflows_missing_reason\":null,\"unix_queue_depth_seen\":true,"
		 "\"unix_queue_depth_missing_reason\":null,\"missed\":0,\"dropped_events\":0,"
		 "\"wait_returns_missed\":0,"
		 "\"listeners_missed\":0,\"listeners_folded\":0,\"listeners_folded_overflows\":0,"
		 "\"somaxconn\":4096}\n", kernel_release());
	CHECK_STR(got, want);
	free(got);
	unfixture(&s);
}


TEST(backlog_prom_text)
{
	struct watch_filters f = {};
	struct bl_state s;
	struct client cl[2];
	char *got;

	fixture(&s, &f, cl);
	got = capture(&s, 1);
	REQUIRE(got != NULL);
	CHECK(strstr(got, "# TYPE udsprobe_backlog_overflows_total counter\n"
			  "udsprobe_backlog_overflows_total{family=\"unix\",address=\"@php\\\\0x\","
			  "owner_comm=\"php-fpm\\\\x1b\",owner_pid=\"100\",netns=\"4026531840\"," CG "} 15\n"
			  "udsprobe_backlog_overflows_total{family=\"tcp\",address=\"*:9000\","
			  "owner_comm=\"\",owner_pid=\"0\",netns=\"4026532000\",cgroup=\"\",container=\"\"} 0\n") != NULL);
	/* family-specific metrics only for their family */
	CHECK(strstr(got, "udsprobe_backlog_connect_waits_total{family=\"unix\"") != NULL);
	CHECK(!strstr(got, "udsprobe_backlog_connect_waits_total{family=\"tcp\""));
	CHECK(strstr(got, "udsprobe_backlog_syn_retransmits_total{family=\"tcp\",address=\"*:9000\","
			  "owner_comm=\"\",owner_pid=\"0\",netns=\"4026532000\",cgroup=\"\",container=\"\"} 3\n") != NULL);
	/* clients summed per comm: the live nginx and the exited ones */
	CHECK(strstr(got, "udsprobe_backlog_client_overflows_total{family=\"unix\",address="
			  "\"@php\\\\0x\",client_comm=\"nginx\",netns=\"4026531840\"," CG "} 15\n") != NULL);
	/* histograms: cumulative buckets, the open-ended last slot only as +Inf */
	CHECK(strstr(got, "# TYPE udsprobe_backlog_accept_wait_seconds histogram\n"
			  "udsprobe_backlog_accept_wait_seconds_bucket{family=\"unix\",address="
			  "\"@php\\\\0x\",owner_comm=\"php-fpm\\\\x1b\",owner_pid=\"100\","
			  "netns=\"4026531840\"," CG ",le=\"2e-06\"} 0\n") != NULL);
	CHECK(strstr(got, ",le=\"1.6e-05\"} 1\n") != NULL);
	CHECK(strstr(got, ",le=\"0.002048\"} 3\n") != NULL);
	CHECK(strstr(got, ",le=\"+Inf\"} 3\nudsprobe_backlog_accept_wait_seconds_sum{family="
			  "\"unix\",address=\"@php\\\\0x\",owner_comm=\"php-fpm\\\\x1b\","
			  "owner_pid=\"100\",netns=\"4026531840\"," CG "} 0.00301\n"
			  "udsprobe_backlog_accept_wait_seconds_count{") != NULL);
	CHECK(strstr(got, "udsprobe_backlog_queue_length_on_arrival_bucket{family=\"unix\","
			  "address=\"@php\\\\0x\",owner_comm=\"php-fpm\\\\x1b\",owner_pid=\"100\","
			  "netns=\"4026531840\"," CG ",le=\"511\"} 4\n") != NULL);
	CHECK(!strstr(got, "_bucket{family=\"tcp\""));	/* no connect seen queued there */
	CHECK(strstr(got, "udsprobe_backlog_dropped_events_total 0\n") != NULL);
	CHECK(strstr(got, "udsprobe_backlog_last_update_timestamp_seconds 1700000000\n") != NULL);
	free(got);
	unfixture(&s);
}

/* TCP overflows that cannot be counted (tracepoint mode before 5.17) and AF_UNIX arrival
 * depths that cannot be seen (before 6.6) are n/a in the text, null in JSON and no series in
 * Prometheus, never 0; the rest is unchanged. */
TEST(backlog_unseen_counts_are_not_zero)
{
	struct watch_filters f = {};
	struct bl_state s;
	struct client cl[2];
	char *got;

	fixture(&s, &f, cl);
	s.ls[1].prev_drops = 7;	/* sk_drops still shown */
	s.run.tcp_drops_missing = "no cmpxchg";
	s.run.unix_depth_missing = "no sk_data_ready";
	got = capture(&s, 0);
	REQUIRE(got != NULL);
	CHECK(strstr(got, "\"address\":\"@php\\\\0x\"") != NULL);
	CHECK(strstr(got, "\"peak_queue\":5,\"overflows\":15,") != NULL);
	CHECK(strstr(got, "\"peak_queue\":0,\"overflows\":null,") != NULL);
	CHECK(strstr(got, "\"tcp_overflows_counted\":false,\"tcp_overflows_missing_reason\":"
			  "\"no cmpxchg\",") != NULL);
	CHECK(strstr(got, "\"accept_wait_max_s\":0.0015,\"queued\":null,\"queue_depth_p50\":null,"
			  "\"queue_depth_p99\":null,\"queue_depth_max\":null,") != NULL);
	CHECK(strstr(got, "\"accept_wait_max_s\":0,\"queued\":0,\"queue_depth_p50\":0,") != NULL);
	CHECK(strstr(got, "\"unix_queue_depth_seen\":false,\"unix_queue_depth_missing_reason\":"
			  "\"no sk_data_ready\",") != NULL);
	free(got);
	got = capture(&s, 1);
	REQUIRE(got != NULL);
	CHECK(strstr(got, "udsprobe_backlog_overflows_total{family=\"unix\"") != NULL);
	CHECK(!strstr(got, "udsprobe_backlog_overflows_total{family=\"tcp\""));
	CHECK(strstr(got, "udsprobe_backlog_syn_retransmits_total{family=\"tcp\"") != NULL);
	CHECK(strstr(got, "\nudsprobe_backlog_tcp_overflows_counted 0\n") != NULL);
	CHECK(strstr(got, "udsprobe_backlog_accept_wait_seconds_count{family=\"unix\"") != NULL);
	CHECK(!strstr(got, "udsprobe_backlog_queue_length_on_arrival_count{"));
	CHECK(strstr(got, "\nudsprobe_backlog_unix_queue_depth_seen 0\n") != NULL);
	free(got);
	got = capture(&s, 2);
	REQUIRE(got != NULL);
	CHECK(strstr(got, " 4     5        15 ") != NULL);	/* unix: LIMIT PEAK OVERFLOWS */
	CHECK(strstr(got, " 0     0       n/a ") != NULL);	/* tcp */
	CHECK(strstr(got, "*:9000 (netns 4026532000): overflows n/a (not counted in this mode "
			  "here); the listener's own drop counter (sk_drops) +7;") != NULL);
	CHECK(strstr(got, "max 1.500 ms; queue depth on arrival n/a (not seen in this mode here; "
			  "limit 4)\n") != NULL);
	free(got);
	s.run.tcp_drops_missing = s.run.unix_depth_missing = NULL;
	got = capture(&s, 1);
	REQUIRE(got != NULL);
	CHECK(strstr(got, "udsprobe_backlog_overflows_total{family=\"tcp\"") != NULL);
	CHECK(strstr(got, "\nudsprobe_backlog_tcp_overflows_counted 1\n") != NULL);
	CHECK(strstr(got, "udsprobe_backlog_queue_length_on_arrival_count{family=\"unix\"") != NULL);
	CHECK(strstr(got, "\nudsprobe_backlog_unix_queue_depth_seen 1\n") != NULL);
	free(got);
	unfixture(&s);
}

/* w is one of the space-separated words of list; how many words list has (NULL: 0). */
static bool word_in(const char *w, const char *list)
{
	size_t n = strlen(w);
	const char *p;

	for (p = list; (p = strstr(p, w)); p += n)
		if ((p == list || p[-1] == ' ') && (!p[n] || p[n] == ' '))
			return true;
	return false;
}

static int words(const char *list)
{
	int n = list && *list;

	for (; list && *list; list++)
		n += *list == ' ';
	return n;
}

/* Each mode's programs come from skeleton fields: all present, of that mode's kind,
 * named fe_/fx_/kp_/kr_ and the function of their section (no name strings to drift). */
TEST(backlog_mode_programs)
{
	static const struct {
		enum attach_mode mode;
		const char *entry, *ret;	/* section prefixes */
		const char *also;		/* more programs' sections, each exactly once */
		int n_v6, n;
	} modes[] = {
		{ ATTACH_FENTRY, "fentry/", "fexit/", NULL, 19, 16 },
		/* connect's and accept's results at their syscall exits: no kretprobe on
		 * unix_stream_connect, unix_accept, inet_accept (maxactive, backlog.bpf.c) */
		{ ATTACH_KPROBE, "kprobe/", "kretprobe/", "tracepoint/syscalls/sys_exit_connect "
		  "tracepoint/syscalls/sys_exit_accept tracepoint/syscalls/sys_exit_accept4", 17, 14 },
		/* + tp_btf/sk_data_ready where the kernel has it (6.6+); - the two TCP drop
		 * programs where they cannot load (bl_tp_tcp_drops: before 5.17) */
		{ ATTACH_TRACEPOINT, "tracepoint/", "tp_btf/", NULL, 9, 9 },
	};
	struct backlog_bpf *skel = backlog_bpf__open();
	struct bpf_program *p[BL_MAX_PROGS];
	char why[160];
	bool drops = bl_tp_tcp_drops(why, sizeof(why));
	int tp_extra = btf_has_tracepoint("sk_data_ready") - 2 * !drops;
	size_t m;
	int i, n;

	REQUIRE(skel != NULL);
	for (m = 0; m < ARRAY_SIZE(modes); m++) {
		int extra = modes[m].mode == ATTACH_TRACEPOINT ? tp_extra : 0, also = 0;

		bl_mode_programs(skel, modes[m].mode, false, drops, p, &n);
		CHECK_INT(n, modes[m].n + extra);
		bl_mode_programs(skel, modes[m].mode, true, drops, p, &n);
		CHECK_INT(n, modes[m].n_v6 + extra);
		for (i = 0; i < n; i++) {
			const char *sec;

			REQUIRE(p[i] != NULL);
			sec = bpf_program__section_name(p[i]);
			sec += *sec == '?';	/* optional programs: "?fentry/..." */
			if (modes[m].also && word_in(sec, modes[m].also)) {
				also++;
				continue;
			}
			CHECK(!strncmp(sec, modes[m].entry, strlen(modes[m].entry)) ||
			      !strncmp(sec, modes[m].ret, strlen(modes[m].ret)));
			if (modes[m].mode != ATTACH_TRACEPOINT)	/* fe_f on "?fentry/f" etc. */
				CHECK_STR(strchr(sec, '/') + 1, bpf_program__name(p[i]) + 3);
		}
		CHECK_INT(also, words(modes[m].also));
	}
	backlog_bpf__destroy(skel);
}

/* Listener churn stays bounded: past BL_MAX_RETIRED closed listeners with counts, the
 * ones with the fewest overflows (retired an interval ago) are folded into two numbers. */
TEST(backlog_retired_listeners_bounded)
{
	struct watch_filters f = {};
	struct bl_state s;
	int i, n = BL_MAX_RETIRED + 6;
	uint64_t kept = 0;

	bl_state_init(&s, &f);
	for (i = 0; i < n; i++) {
		struct listener *l = bl_add_listener(&s, BL_UNIX);

		REQUIRE(l != NULL);
		l->ino = 1000 + i;
		l->tot.overflows = n - i;	/* the last ones have the fewest */
		l->watched = true;
		l->present = false;		/* closed */
	}
	bl_retire_closed(&s, NULL);		/* retired now: none foldable yet */
	CHECK_INT(s.n, n);
	CHECK_U64(s.folded, 0);
	bl_retire_closed(&s, NULL);		/* an interval later */
	CHECK_INT(s.n, BL_MAX_RETIRED);
	CHECK_U64(s.folded, 6);
	CHECK_U64(s.folded_overflows, 1 + 2 + 3 + 4 + 5 + 6);
	for (i = 0; i < s.n; i++) {
		CHECK(s.ls[i].retired);
		kept += s.ls[i].tot.overflows;
	}
	CHECK_U64(kept + s.folded_overflows, (uint64_t)n * (n + 1) / 2);
	bl_state_free(&s);
}

/* A closed listener keeps its 8 busiest clients by pid and the rest per command, once:
 * 300 exited clients (two commands) become 8 + 2 entries with the same totals. */
TEST(backlog_retired_clients_compacted)
{
	struct watch_filters f = {};
	struct bl_state s;
	struct listener *l;
	uint64_t sum = 0, kept = 0;
	int i;

	bl_state_init(&s, &f);
	l = bl_add_listener(&s, BL_UNIX);
	REQUIRE(l != NULL);
	l->ino = 5;
	l->watched = true;
	l->gone = calloc(300, sizeof(*l->gone));
	REQUIRE(l->gone != NULL);
	l->n_gone = l->cap_gone = 300;
	for (i = 0; i < 300; i++) {
		l->gone[i].tgid = 1000 + i;
		strcpy(l->gone[i].comm, i % 2 ? "nginx" : "curl");
		l->gone[i].v.overflows = i + 1;	/* pids 1299..1292 have the most */
		sum += i + 1;
	}
	l->tot.overflows = sum;
	bl_retire_closed(&s, NULL);		/* retired */
	CHECK(s.ls[0].retired && !s.ls[0].frozen);
	bl_retire_closed(&s, NULL);		/* an interval later: compacted, kept once */
	l = &s.ls[0];
	CHECK(l->frozen);
	CHECK_INT(l->n_gone, 0);
	CHECK_INT(l->n_clients, 10);
	CHECK_U64(s.clients_folded, 292);
	for (i = 0; i < l->n_clients; i++) {
		if (i < 8)
			CHECK_INT(l->clients[i].tgid, 1299 - i);
		else
			CHECK_INT(l->clients[i].tgid, 0);	/* per command */
		kept += l->clients[i].v.overflows;
	}
	CHECK_U64(kept, sum);
	CHECK_U64(l->tot.overflows, sum);
	bl_state_free(&s);
}
