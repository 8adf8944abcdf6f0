// SPDX-License-Identifier: GPL-2.0
/*
 * --trace --if-unix: a TCP flow's messages over AF_UNIX, predicted (docs/PREDICT.md).
 *
 * What changes with the transport is the kernel's part of a message: the send() (on loopback
 * TCP runs TCP/IP output, the device and the receive softirq inside it) and the receive's copy
 * and return; where the receiver waits on another CPU, only the send() up to its wakeup counts
 * (TCP wakes it inside the softirq, and the rest of the send() overlaps its way to a CPU).
 * The differences per size come from udsprobe's own ping-pong on this host, both transports,
 * one CPU and two (a calibration, cached per kernel and CPU model); the flow gives its size,
 * its share of waiting receivers and of messages read on another CPU, and its latency.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include "compare.h"
#include "interrupt.h"
#include "json_writer.h"
#include "outfile.h"
#include "predict.h"
#include "stage_table.h"
#include "util.h"

enum { OPT_IF_UNIX = 1300 };

static const struct argp_option pr_options[] = {
	{ "if-unix", OPT_IF_UNIX, "MODE", 0,
	  "Predict each loopback TCP flow over a unix socket (--trace, --compare of programs): "
	  "auto (default, or $UDSPROBE_IF_UNIX: the calibration cached for this kernel and CPU, "
	  "else run one, ~30 s), cached (never run one), fresh (run one now, cache it), off "
	  "(docs/PREDICT.md)",
	  5 },
	{},
};

static enum if_unix_mode mode_of(const char *what, const char *arg)
{
	static const char *const names[] = { "auto", "cached", "fresh", "off" };
	unsigned i;

	for (i = 0; i < ARRAY_SIZE(names) && strcmp(arg, names[i]); i++)
		;
	if (i == ARRAY_SIZE(names))
		usage_exit("%s: '%s' is not a mode: auto, cached, fresh or off", what, arg);
	return i;
}

static error_t pr_parse(int key, char *arg, struct argp_state *state)
{
	struct predict_opts *o = state->input;
	static uint64_t given;
	const char *env;

	switch (key) {
	case ARGP_KEY_INIT:
		/* the default for scripts and test suites that do not ask for a prediction */
		env = getenv("UDSPROBE_IF_UNIX");
		if (env && *env)
			o->mode = mode_of("UDSPROBE_IF_UNIX", env);
		break;
	case OPT_IF_UNIX:
		option_once(pr_options, key, &given);
		o->mode = mode_of("--if-unix", arg);
		o->given = true;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp predict_argp = { .options = pr_options, .parser = pr_parse };

/* ------------------------------------------------------------------ calibration */

/* Message sizes calibrated: a flow's mean size is interpolated between them (log scale). */
static const uint64_t cal_sizes[] = { 16, 256, 4096, 65536 };
#define N_SIZES (int)ARRAY_SIZE(cal_sizes)
enum { CAL_RUNS = 3, CONN_SIZE = 64, CLOSE_CONNS = 1000 };
/* Each transport's run of each (size, placement) lasts this long, not a count: ~20,000 round
 * trips of 16 B here; under qemu TCG a count of 10,000 took over 10 minutes in all. */
#define CAL_RUN_S 0.25

/* One size, placement and run: per transport, ns per message. */
struct cal_point {
	double send[TR__COUNT];		/* the send() and what runs inside it */
	double wake[TR__COUNT];		/* of that, up to the receiver's wakeup (no send;return) */
	double recv[TR__COUNT];		/* the receiver's copy and return */
	double latency[TR__COUNT];	/* untraced mean one-way latency */
	double connect[TR__COUNT];	/* --mode connect only: the client's connect() */
};

enum { PL_SAME, PL_SPLIT, PL__COUNT };	/* --cpu same, split */
static const char *const pl_names[PL__COUNT] = { "same", "split" };
/* The stages with the calibrated probe cost taken off, and as traced: --trace --detail full
 * hits the same boundaries as --compare's tracer (one stage table), more of them on TCP, so a
 * flow traced in full carries that difference too; --detail syscall's hits are the same on
 * both transports. */
enum { K_CORRECTED, K_TRACED, K__COUNT };
static const char *const k_names[K__COUNT] = { "corrected", "traced" };

struct calibration {
	char kernel[128], cpu[128], date[32], attach[16];
	double probe_ns;	/* --compare's calibrated cost of one probe hit (median of the runs) */
	struct cal_point p[CAL_RUNS][K__COUNT][PL__COUNT][N_SIZES];
	/* --mode connect at CONN_SIZE bytes (connect, request, response, close), per run and
	 * placement: latency is the whole connection (untraced mean), send/wake/recv the path of
	 * its messages, each the first of its connection in its direction, connect the client's
	 * connect() (conn;connect; corrected) */
	struct cal_point conn[CAL_RUNS][PL__COUNT];
	/* close() of a connection after a request and a reply, per run and transport: the side
	 * that closes first, then the other (TCP: FIN, TIME_WAIT), mean ns */
	double close_first[CAL_RUNS][TR__COUNT], close_second[CAL_RUNS][TR__COUNT];
};

/* Where a --compare stage belongs: 1 the send path, 2 the receive copy, 0 neither (waiting for
 * a CPU, the application's gap, per-connection stages). */
static int path_part(const struct stage_stat *s)
{
	int slice = stage_bulk_slice(s->name);

	if (s->extra || slice == STAGE_BULK_WAIT_CPU || !strncmp(s->name, "app;", 4) ||
	    !strncmp(s->name, "sched;", 6))
		return 0;
	if (!strcmp(s->name, "recv;copy") || !strcmp(s->name, "recv;return") ||
	    slice == STAGE_BULK_RECV_COPY)
		return 2;
	return 1;
}

static const char *cache_dir(void)
{
	const char *d = getenv("UDSPROBE_CACHE_DIR");

	return d && *d ? d : "/var/cache/udsprobe";
}

static void cache_path(char *buf, size_t len, const char *cpu)
{
	uint32_t h = fnv1a32(FNV1A32_BASIS, cpu, strlen(cpu));	/* of the CPU model */

	snprintf(buf, len, "%s/if-unix-%s-%08x.tsv", cache_dir(), kernel_release(), h);
}

static int cal_load(const char *path, struct calibration *cal)
{
	char line[512], key[32], val[256], place[16], kind[16];
	bool seen[CAL_RUNS][K__COUNT][PL__COUNT][N_SIZES] = {}, cseen[CAL_RUNS][PL__COUNT] = {};
	bool closes_seen[CAL_RUNS] = {};
	double cl[4];
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), r, s, pl, k, n = 0, nc = 0, ncl = 0;
	struct cal_point c;
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;

	if (!f) {
		if (fd >= 0)
			close(fd);
		return -ENOENT;
	}
	while (fgets(line, sizeof(line), f)) {
		struct cal_point p;
		uint64_t size;

		if (line[0] == '#')
			continue;
		if (sscanf(line, "%d close %lf %lf %lf %lf", &r, &cl[0], &cl[1], &cl[2], &cl[3]) == 5) {
			if (r < 1 || r > CAL_RUNS || closes_seen[r - 1] || cl[0] <= 0 || cl[1] <= 0 ||
			    cl[2] <= 0 || cl[3] <= 0)
				continue;
			cal->close_first[r - 1][TR_UNIX] = cl[0];
			cal->close_second[r - 1][TR_UNIX] = cl[1];
			cal->close_first[r - 1][TR_TCP] = cl[2];
			cal->close_second[r - 1][TR_TCP] = cl[3];
			closes_seen[r - 1] = true;
			ncl++;
		} else if (sscanf(line, "%d %15s connect %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf", &r, place,
			   &c.latency[TR_UNIX], &c.latency[TR_TCP], &c.send[TR_UNIX], &c.wake[TR_UNIX],
			   &c.recv[TR_UNIX], &c.send[TR_TCP], &c.wake[TR_TCP], &c.recv[TR_TCP],
			   &c.connect[TR_UNIX], &c.connect[TR_TCP]) == 12) {
			for (pl = 0; pl < PL__COUNT && strcmp(place, pl_names[pl]); pl++)
				;
			if (r < 1 || r > CAL_RUNS || pl == PL__COUNT || cseen[r - 1][pl] ||
			    c.latency[TR_UNIX] <= 0 || c.latency[TR_TCP] <= 0 || c.send[TR_TCP] <= 0 ||
			    c.connect[TR_UNIX] <= 0 || c.connect[TR_TCP] <= 0)
				continue;
			cal->conn[r - 1][pl] = c;
			cseen[r - 1][pl] = true;
			nc++;
		} else if (sscanf(line, "%d %15s %lu %15s %lf %lf %lf %lf %lf %lf %lf %lf", &r, place,
			   &size, kind, &p.send[TR_UNIX], &p.wake[TR_UNIX], &p.recv[TR_UNIX],
			   &p.send[TR_TCP], &p.wake[TR_TCP], &p.recv[TR_TCP], &p.latency[TR_UNIX],
			   &p.latency[TR_TCP]) == 12) {
			for (s = 0; s < N_SIZES && cal_sizes[s] != size; s++)
				;
			for (pl = 0; pl < PL__COUNT && strcmp(place, pl_names[pl]); pl++)
				;
			for (k = 0; k < K__COUNT && strcmp(kind, k_names[k]); k++)
				;
			if (r < 1 || r > CAL_RUNS || s == N_SIZES || pl == PL__COUNT || k == K__COUNT ||
			    seen[r - 1][k][pl][s] || p.send[TR_TCP] <= 0 || p.latency[TR_TCP] <= 0)
				continue;
			cal->p[r - 1][k][pl][s] = p;
			seen[r - 1][k][pl][s] = true;
			n++;
		} else if (sscanf(line, "%31[^\t]\t%255[^\n]", key, val) == 2) {
			if (!strcmp(key, "kernel"))
				snprintf(cal->kernel, sizeof(cal->kernel), "%.*s", (int)sizeof(cal->kernel) - 1, val);
			else if (!strcmp(key, "cpu"))
				snprintf(cal->cpu, sizeof(cal->cpu), "%.*s", (int)sizeof(cal->cpu) - 1, val);
			else if (!strcmp(key, "date"))
				snprintf(cal->date, sizeof(cal->date), "%.*s", (int)sizeof(cal->date) - 1, val);
			else if (!strcmp(key, "attach"))
				snprintf(cal->attach, sizeof(cal->attach), "%.*s", (int)sizeof(cal->attach) - 1, val);
			else if (!strcmp(key, "probe_ns"))
				cal->probe_ns = atof(val);
		}
	}
	fclose(f);
	return n == CAL_RUNS * K__COUNT * PL__COUNT * N_SIZES && nc == CAL_RUNS * PL__COUNT &&
	       ncl == CAL_RUNS &&
	       cal->probe_ns > 0 ? 0 : -EINVAL;
}

static int cal_save(const char *path, const struct calibration *cal)
{
	struct outfile of;
	int r, s, pl, k, err;

	if (mkdir(cache_dir(), 0755) && errno != EEXIST)
		return -errno;
	err = outfile_begin(&of, "--if-unix", path);
	if (err)
		return err;
	fprintf(of.f, "# udsprobe --trace --if-unix calibration (docs/PREDICT.md)\n"
		"kernel\t%s\ncpu\t%s\ndate\t%s\nattach\t%s\nprobe_ns\t%.1f\n"
		"# run\tcpu\tsize\tstages\tunix_send_ns\tunix_wake_ns\tunix_recv_ns\ttcp_send_ns\t"
		"tcp_wake_ns\ttcp_recv_ns\tunix_latency_ns\ttcp_latency_ns\n", cal->kernel, cal->cpu, cal->date, cal->attach,
		cal->probe_ns);
	for (r = 0; r < CAL_RUNS; r++)
		for (k = 0; k < K__COUNT; k++)
			for (pl = 0; pl < PL__COUNT; pl++)
				for (s = 0; s < N_SIZES; s++) {
					const struct cal_point *p = &cal->p[r][k][pl][s];

					fprintf(of.f, "%d\t%s\t%lu\t%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t"
						"%.1f\t%.1f\t%.1f\n", r + 1, pl_names[pl],
						(unsigned long)cal_sizes[s], k_names[k],
						p->send[TR_UNIX], p->wake[TR_UNIX], p->recv[TR_UNIX],
						p->send[TR_TCP], p->wake[TR_TCP], p->recv[TR_TCP],
						p->latency[TR_UNIX], p->latency[TR_TCP]);
				}
	fprintf(of.f, "# run\tcpu\tconnect\tunix_connection_ns\ttcp_connection_ns (%d B each way)\t"
		"then its messages: unix_send_ns\tunix_wake_ns\tunix_recv_ns\ttcp_send_ns\t"
		"tcp_wake_ns\ttcp_recv_ns\tthen connect(): unix_connect_ns\ttcp_connect_ns\n",
		CONN_SIZE);
	for (r = 0; r < CAL_RUNS; r++)
		for (pl = 0; pl < PL__COUNT; pl++) {
			const struct cal_point *c = &cal->conn[r][pl];

			fprintf(of.f, "%d\t%s\tconnect\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t"
				"%.1f\t%.1f\t%.1f\n", r + 1, pl_names[pl], c->latency[TR_UNIX],
				c->latency[TR_TCP], c->send[TR_UNIX], c->wake[TR_UNIX], c->recv[TR_UNIX],
				c->send[TR_TCP], c->wake[TR_TCP], c->recv[TR_TCP], c->connect[TR_UNIX],
				c->connect[TR_TCP]);
		}
	fprintf(of.f, "# run\tclose\tunix_first_ns\tunix_second_ns\ttcp_first_ns\ttcp_second_ns\n");
	for (r = 0; r < CAL_RUNS; r++)
		fprintf(of.f, "%d\tclose\t%.1f\t%.1f\t%.1f\t%.1f\n", r + 1, cal->close_first[r][TR_UNIX],
			cal->close_second[r][TR_UNIX], cal->close_first[r][TR_TCP],
			cal->close_second[r][TR_TCP]);
	return outfile_commit(&of, 0);
}

/* One pair of a calibration run into its point, its stages taken as kind says. */
static int cal_point_of(const struct pair_result *pr, int kind, struct cal_point *p)
{
	int t, k;

	for (t = 0; t < TR__COUNT; t++) {
		const struct transport_result *x = &pr->tr[t];

		if (!x->trace.valid || !x->trace.messages || !x->untraced.has_latency)
			return -EPROTO;
		p->send[t] = p->wake[t] = p->recv[t] = 0;
		for (k = 0; k < x->trace.n_stages; k++) {
			const struct stage_stat *st = &x->trace.stages[k];
			double ns = MAX(kind == K_TRACED ? st->ns_per_msg : st->corrected_ns_per_msg, 0.0);

			if (path_part(st) == 1) {
				p->send[t] += ns;
				if (strcmp(st->name, "send;return"))
					p->wake[t] += ns;
			} else if (path_part(st) == 2) {
				p->recv[t] += ns;
			}
		}
		p->latency[t] = x->untraced.latency.mean;
	}
	return 0;
}

static double median3(double a, double b, double c)
{
	return MAX(MIN(a, b), MIN(MAX(a, b), c));
}

/* Which of v[0..2] is their median. */
static int median3_at(const double v[3])
{
	double m = median3(v[0], v[1], v[2]);

	return v[0] == m ? 0 : v[1] == m ? 1 : 2;
}

/* Run r's connections: --mode connect at CONN_SIZE bytes, one CPU and two, traced: the whole
 * connection untraced, its messages' path traced (a new connection's first message costs TCP
 * more than a warm one: accept, quick ACKs). */
static int cal_connections(struct calibration *cal, int r, enum attach_mode attach, int verbose)
{
	struct compare_opts co = {
		.duration_s = CAL_RUN_S, .trace = true, .attach = attach, .attach_once = true,
		.quiet = true, .verbose = verbose, .n_sizes = 1, .sizes = { CONN_SIZE },
	};
	struct comparison cmp = {};
	int i, err;

	co.modes[WL_CONNECT] = true;
	co.places[CPU_SAME] = co.places[CPU_SPLIT] = true;
	err = compare_run(&co, &cmp);
	if (!err && cmp.n_pairs != PL__COUNT)
		err = -EPROTO;
	for (i = 0; !err && i < cmp.n_pairs; i++) {
		struct cal_point *c = &cal->conn[r][cmp.pairs[i].place == CPU_SAME ? PL_SAME : PL_SPLIT];
		int t;

		err = cal_point_of(&cmp.pairs[i], K_CORRECTED, c);
		for (t = 0; !err && t < TR__COUNT; t++) {
			const struct trace_result *x = &cmp.pairs[i].tr[t].trace;
			int k;

			c->connect[t] = 0;
			for (k = 0; k < x->n_stages; k++)
				if (!strcmp(x->stages[k].name, "conn;connect"))
					c->connect[t] = MAX(x->stages[k].corrected_ns_per_msg, 0.0);
			if (!c->latency[t] || !c->connect[t])
				err = -EPROTO;
		}
	}
	comparison_free(&cmp);
	return err;
}

/* A listening socket of transport t on loopback (AF_UNIX: in dir), its address in sa. */
static int close_listener(int t, const char *dir, struct sockaddr_storage *sa, socklen_t *len)
{
	int fd = socket(t == TR_UNIX ? AF_UNIX : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	memset(sa, 0, sizeof(*sa));
	if (t == TR_UNIX) {
		struct sockaddr_un *un = (struct sockaddr_un *)sa;

		un->sun_family = AF_UNIX;
		snprintf(un->sun_path, sizeof(un->sun_path), "%s/close.sock", dir);
		*len = sizeof(*un);
	} else {
		struct sockaddr_in *in = (struct sockaddr_in *)sa;

		in->sin_family = AF_INET;
		in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		*len = sizeof(*in);
	}
	if (fd < 0 || bind(fd, (struct sockaddr *)sa, *len) || listen(fd, 64) ||
	    getsockname(fd, (struct sockaddr *)sa, len)) {
		int err = -errno;

		if (fd >= 0)
			close(fd);
		return err;
	}
	return fd;
}

/*
 * Run r's close()s: CLOSE_CONNS connections per transport on one CPU, each after a 64-byte
 * request and reply, closed by one side then the other and timed around each close(). On
 * loopback the FIN exchange runs inside the close()s, so this is what each side's close costs.
 */
static int cal_closes(struct calibration *cal, int r)
{
	char dir[] = "/tmp/udsprobe-close-XXXXXX", buf[CONN_SIZE] = "";
	cpu_set_t old, one;
	int t, i, err = 0;

	if (!mkdtemp(dir))
		return -errno;
	if (sched_getaffinity(0, sizeof(old), &old))
		CPU_ZERO(&old);
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu() < 0 ? 0 : sched_getcpu(), &one);
	sched_setaffinity(0, sizeof(one), &one);	/* no migration between the two ends */
	for (t = 0; t < TR__COUNT && !err; t++) {
		struct sockaddr_storage sa;
		socklen_t len;
		double first = 0, second = 0;
		int l = close_listener(t, dir, &sa, &len);

		if (l < 0) {
			err = l;
			break;
		}
		for (i = 0; i < CLOSE_CONNS && !err && !udsprobe_stop; i++) {
			int c = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), a = -1;
			uint64_t t0, t1, t2;

			if (c < 0 || connect(c, (struct sockaddr *)&sa, len) ||
			    (a = accept4(l, NULL, NULL, SOCK_CLOEXEC)) < 0 ||
			    write(c, buf, sizeof(buf)) != sizeof(buf) || read(a, buf, sizeof(buf)) <= 0 ||
			    write(a, buf, sizeof(buf)) != sizeof(buf) || read(c, buf, sizeof(buf)) <= 0)
				err = -errno ? -errno : -EIO;
			t0 = now_ns();
			if (c >= 0)
				close(c);
			t1 = now_ns();
			if (a >= 0)
				close(a);
			t2 = now_ns();
			first += t1 - t0;
			second += t2 - t1;
		}
		close(l);
		if (t == TR_UNIX)
			unlink(((struct sockaddr_un *)&sa)->sun_path);
		cal->close_first[r][t] = first / CLOSE_CONNS;
		cal->close_second[r][t] = second / CLOSE_CONNS;
	}
	if (CPU_COUNT(&old))
		sched_setaffinity(0, sizeof(old), &old);
	rmdir(dir);
	return udsprobe_stop ? -EINTR : err;
}

/* CAL_RUNS runs of udsprobe's own ping-pong, both transports, one CPU and two, traced. */
static int cal_run(struct calibration *cal, enum attach_mode attach, int verbose)
{
	struct compare_opts co = {
		.duration_s = CAL_RUN_S, .trace = true, .attach = attach, .attach_once = true,
		.quiet = true, .verbose = verbose, .n_sizes = N_SIZES,
	};
	time_t now = time(NULL);
	double probe[CAL_RUNS];
	int r, i, s, pl, k, err;

	co.modes[WL_PINGPONG] = true;
	co.places[CPU_SAME] = co.places[CPU_SPLIT] = true;
	for (i = 0; i < N_SIZES; i++)
		co.sizes[i] = cal_sizes[i];
	for (r = 0; r < CAL_RUNS; r++) {
		struct comparison cmp = {};

		err = compare_run(&co, &cmp);
		if (!err && cmp.n_pairs != N_SIZES * PL__COUNT)
			err = -EPROTO;
		for (i = 0; !err && i < cmp.n_pairs; i++) {
			const struct pair_result *pr = &cmp.pairs[i];

			for (s = 0; s < N_SIZES && cal_sizes[s] != pr->msg_size; s++)
				;
			pl = pr->place == CPU_SAME ? PL_SAME : PL_SPLIT;
			for (k = 0; k < K__COUNT && !err; k++)
				err = s == N_SIZES ? -EPROTO : cal_point_of(pr, k, &cal->p[r][k][pl][s]);
		}
		if (!err && !r) {
			snprintf(cal->attach, sizeof(cal->attach), "%s", cmp.attach_mode ?: "none");
			snprintf(cal->cpu, sizeof(cal->cpu), "%s", cmp.cpu_model);
		}
		probe[r] = cmp.probe_cost_ns;
		comparison_free(&cmp);
		if (!err)
			err = cal_connections(cal, r, attach, verbose);
		if (!err)
			err = cal_closes(cal, r);
		if (err)
			return err;
		say_error("--if-unix: calibration run %d of %d done", r + 1, CAL_RUNS);
	}
	cal->probe_ns = median3(probe[0], probe[1], probe[2]);
	if (cal->probe_ns <= 0)
		return -EPROTO;
	snprintf(cal->kernel, sizeof(cal->kernel), "%s", kernel_release());
	strftime(cal->date, sizeof(cal->date), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	return 0;
}

/* ------------------------------------------------------------------ the prediction */

/* TCP minus AF_UNIX at a flow's mean size in run r, placements weighted (split: the share
 * read on another CPU), interpolated in log2(size) between the neighbouring sizes: the send()
 * (send), the send() up to the receiver's wakeup (wake), the receive's copy and return (copy).
 * *nearest: the closest size. */
struct cal_diff {
	double send, wake, copy;
};

static struct cal_diff diff_at(const struct calibration *cal, int r, int kind, double size,
			       double split, int *nearest)
{
	struct cal_diff d = {};
	double w = 0;
	int s = 0, pl, k;

	if (size > cal_sizes[0]) {
		while (s < N_SIZES - 2 && size > cal_sizes[s + 1])
			s++;
		w = (log2(size) - log2(cal_sizes[s])) / (log2(cal_sizes[s + 1]) - log2(cal_sizes[s]));
		w = MIN(MAX(w, 0.0), 1.0);
	}
	for (pl = 0; pl < PL__COUNT; pl++)
		for (k = 0; k < 2; k++) {
			const struct cal_point *p = &cal->p[r][kind][pl][MIN(s + k, N_SIZES - 1)];
			double f = (pl == PL_SPLIT ? split : 1 - split) * (k ? w : 1 - w);

			d.send += f * (p->send[TR_TCP] - p->send[TR_UNIX]);
			d.wake += f * (p->wake[TR_TCP] - p->wake[TR_UNIX]);
			d.copy += f * (p->recv[TR_TCP] - p->recv[TR_UNIX]);
		}
	*nearest = w > 0.5 ? MIN(s + 1, N_SIZES - 1) : s;
	return d;
}

/* Run-to-run spread of the calibration's untraced latency at size index s, placement pl: half
 * the range over the runs, as a fraction of their median, the larger of the two transports'. */
static double noise_at(const struct calibration *cal, int pl, int s)
{
	double worst = 0;
	int t;

	for (t = 0; t < TR__COUNT; t++) {
		double a = cal->p[0][K_TRACED][pl][s].latency[t];
		double b = cal->p[1][K_TRACED][pl][s].latency[t];
		double c = cal->p[2][K_TRACED][pl][s].latency[t], m = median3(a, b, c);

		if (m > 0)
			worst = MAX(worst, (MAX(a, MAX(b, c)) - MIN(a, MIN(b, c))) / 2 / m);
	}
	return worst;
}

/* What a connection's first message saves beyond a warm one's, TCP minus AF_UNIX, run r,
 * placements weighted by split: --mode connect's message path minus the ping-pong's at
 * CONN_SIZE (the same sizes, corrected stages). */
static struct cal_diff first_extra(const struct calibration *cal, int r, double split)
{
	struct cal_diff warm, x = {};
	int pl, nearest;

	warm = diff_at(cal, r, K_CORRECTED, CONN_SIZE, split, &nearest);
	for (pl = 0; pl < PL__COUNT; pl++) {
		const struct cal_point *c = &cal->conn[r][pl];
		double f = pl == PL_SPLIT ? split : 1 - split;

		x.send += f * (c->send[TR_TCP] - c->send[TR_UNIX]);
		x.wake += f * (c->wake[TR_TCP] - c->wake[TR_UNIX]);
		x.copy += f * (c->recv[TR_TCP] - c->recv[TR_UNIX]);
	}
	x.send -= warm.send;
	x.wake -= warm.wake;
	x.copy -= warm.copy;
	return x;
}

/* What a connection costs beyond its two messages, TCP minus AF_UNIX, run r, placements
 * weighted by split: --mode connect's whole connection minus what the report credits its two
 * messages with (a first message's send, or its send up to the wakeup on another CPU, and
 * copy, as path_saving does), both from that one run: not the ping-pong's one-way latency,
 * which on another CPU differs by more than a connection's message does (docs/PREDICT.md). */
static double conn_saving(const struct calibration *cal, int r, double split)
{
	double d = 0;
	int pl;

	for (pl = 0; pl < PL__COUNT; pl++) {
		const struct cal_point *c = &cal->conn[r][pl];
		double f = pl == PL_SPLIT ? split : 1 - split;
		double send = pl == PL_SPLIT ? c->wake[TR_TCP] - c->wake[TR_UNIX] :
					       c->send[TR_TCP] - c->send[TR_UNIX];

		d += f * (c->latency[TR_TCP] - c->latency[TR_UNIX] -
			  2 * (send + c->recv[TR_TCP] - c->recv[TR_UNIX]));
	}
	return d;
}

/* What each side of a connection saves in its close(), TCP minus AF_UNIX, run r: the mean of
 * the first and the second close (which side closes first is not known). */
static double close_saving(const struct calibration *cal, int r)
{
	return (cal->close_first[r][TR_TCP] - cal->close_first[r][TR_UNIX] +
		cal->close_second[r][TR_TCP] - cal->close_second[r][TR_UNIX]) / 2;
}

/* What the side that opens a connection saves in it, TCP minus AF_UNIX, run r, placements
 * weighted by split: its connect() (on loopback the whole handshake runs inside it). */
static double open_saving(const struct calibration *cal, int r, double split)
{
	return (1 - split) * (cal->conn[r][PL_SAME].connect[TR_TCP] -
			      cal->conn[r][PL_SAME].connect[TR_UNIX]) +
	       split * (cal->conn[r][PL_SPLIT].connect[TR_TCP] - cal->conn[r][PL_SPLIT].connect[TR_UNIX]);
}

/* The two largest TCP-only kernel stages of the flow, in words for the sentence. */
static void mostly(const struct flow *fl, char *buf, size_t len)
{
	int i, a = -1, b = -1;

	for (i = 0; i < fl->n_kstages; i++) {
		if (!stage_tcp_only(fl->kstages[i].name) || fl->kstages[i].ns_per_msg <= 0)
			continue;
		if (a < 0 || fl->kstages[i].ns_per_msg > fl->kstages[a].ns_per_msg) {
			b = a;
			a = i;
		} else if (b < 0 || fl->kstages[i].ns_per_msg > fl->kstages[b].ns_per_msg) {
			b = i;
		}
	}
	if (a < 0)
		snprintf(buf, len, "the send() path (TCP/IP output, the loopback device and the "
			 "receive softirq run inside it; --detail full names them)");
	else if (b < 0)
		snprintf(buf, len, "%s", fl->kstages[a].name);
	else
		snprintf(buf, len, "%s and %s", fl->kstages[a].name, fl->kstages[b].name);
}

/* A flow's kernel path saving per message, per calibration run: its send() and its copy. */
struct path_saving {
	bool ok;
	int nearest;		/* the calibration size closest to its messages */
	double split;		/* share read on another CPU */
	double send[CAL_RUNS], copy[CAL_RUNS];
	double cpu[CAL_RUNS];	/* the whole send() and the copy: the kernel's CPU per message */
	double share[CAL_RUNS];	/* of its receiver's processes' time, what the switch saves */
	double conn[CAL_RUNS];	/* a connection's saving beyond its messages (conn_saving) */
	double open[CAL_RUNS];	/* of its opener's time, per connection (open_saving) */
	double close[CAL_RUNS];	/* of each end's time, per connection (close_saving) */
	double conn_weight;	/* of those connections, this flow's to count: 1/2 with its reverse */
};

/* --detail full's own probes on TCP's path that AF_UNIX's lacks, per message: all of them
 * (all) and those before the receiver's wakeup (wake); 0 when their cost is unknown. */
struct probe_extra {
	double all, wake;
};

static bool path_saving(struct flow *fl, const struct calibration *cal, int kind,
			const struct probe_extra *pe, struct path_saving *ps)
{
	struct flow_if_unix *u = &fl->if_unix;
	double n = fl->messages, size = n ? fl->bytes / n : 0, waited, first;
	int r;

	if (fl->messages < 100) {
		snprintf(u->why, sizeof(u->why), "%llu messages: too few for a mean",
			 (unsigned long long)fl->messages);
		return false;
	}
	if (size > cal_sizes[N_SIZES - 1]) {
		snprintf(u->why, sizeof(u->why), "messages of %.0f bytes on average, beyond the "
			 "calibration's largest (%lu bytes)", size,
			 (unsigned long)cal_sizes[N_SIZES - 1]);
		return false;
	}
	/* A receiver waiting on another CPU runs from its wakeup on, while the send() ends:
	 * what the message saves there is the send() up to the wakeup. Anywhere else (read
	 * later, or on the sender's CPU) it waits for the whole send(). */
	waited = MIN((fl->stages[FS_RECV_BLOCKED].count + fl->stages[FS_EPOLL].count) / n, 1.0);
	ps->split = MIN(fl->cross_cpu / n, 1.0);
	/* the first message of each connection saves more (first_extra) */
	first = MIN(fl->conns / n, 1.0);
	for (r = 0; r < CAL_RUNS; r++) {
		struct cal_diff d = diff_at(cal, r, kind, size, ps->split, &ps->nearest);
		struct cal_diff x = first_extra(cal, r, ps->split);

		d.send += first * x.send;
		d.wake += first * x.wake;
		d.copy += first * x.copy;
		ps->send[r] = waited * ps->split * (d.wake + pe->wake) +
			      (1 - waited * ps->split) * (d.send + pe->all);
		ps->copy[r] = d.copy;
		ps->cpu[r] = d.send + pe->all + d.copy;
		ps->conn[r] = fl->conns ? conn_saving(cal, r, ps->split) : 0;
		ps->open[r] = fl->conns ? open_saving(cal, r, ps->split) : 0;
		ps->close[r] = fl->conns ? close_saving(cal, r) : 0;
	}
	ps->conn_weight = 1;
	ps->ok = true;
	return true;
}

/* One end of a flow, sorted by process name: the flows of one name are neighbours. */
struct flow_end_ref {
	const char *comm;
	int flow;
	bool receiver;
};

static int by_comm(const void *a, const void *b)
{
	const struct flow_end_ref *x = a, *y = b;
	int c = strcmp(x->comm, y->comm);

	return c ? c : x->flow - y->flow;
}

/* A predicted flow by its endpoint and its two ends' names, the lower first: a flow and its
 * reverse are neighbours. */
struct flow_pair_ref {
	const struct flow *fl;
	int at;
};

static int by_pair(const void *a, const void *b)
{
	const struct flow *x = ((const struct flow_pair_ref *)a)->fl;
	const struct flow *y = ((const struct flow_pair_ref *)b)->fl;
	int sx = strcmp(x->sender.comm, x->receiver.comm) > 0;
	int sy = strcmp(y->sender.comm, y->receiver.comm) > 0;
	int c = strcmp(x->endpoint, y->endpoint);

	c = c ? c : strcmp(sx ? x->receiver.comm : x->sender.comm,
			   sy ? y->receiver.comm : y->sender.comm);
	return c ? c : strcmp(sx ? x->sender.comm : x->receiver.comm,
			      sy ? y->sender.comm : y->receiver.comm);
}

/* A connection that carried both a flow and its reverse (or a flow whose ends have one name:
 * both directions in it) counts in each at half. */
static void conn_weights(const struct trace_run *run, struct path_saving *ps)
{
	struct flow_pair_ref *refs = calloc((size_t)run->n_flows + 1, sizeof(*refs));
	int i, j, k, n = 0;

	if (!refs)
		return;
	for (i = 0; i < run->n_flows; i++)
		if (ps[i].ok && run->flows[i].conns)
			refs[n++] = (struct flow_pair_ref){ &run->flows[i], i };
	qsort(refs, n, sizeof(*refs), by_pair);
	for (i = 0; i < n; i = j) {
		bool fwd = false, rev = false;

		for (j = i; j < n && !by_pair(&refs[i], &refs[j]); j++) {
			int c = strcmp(refs[j].fl->sender.comm, refs[j].fl->receiver.comm);

			fwd |= c <= 0;
			rev |= c >= 0;
		}
		for (k = i; fwd && rev && k < j; k++)
			ps[refs[k].at].conn_weight = 0.5;
	}
	free(refs);
}

/* Each flow's ps.share: the share of its time the receiver's processes (by comm) would save,
 * per run: what their messages save in the TCP flows they send and read, the connect()s of
 * the connections they open (on loopback the handshake runs in the connecting process) and
 * their close()s (each end closes; the FIN exchange runs in the closing process),
 * over the run's duration per process of that name; at most 0.9. A message whose receiver
 * was busy with other messages (wait;busy) waits that much less: those messages' kernel work
 * shrinks too (redis-benchmark -c 20: 90 -> 65 us). One sort by name, not a scan of every
 * flow per flow. */
static void time_shares(const struct trace_run *run, struct path_saving *ps)
{
	struct flow_end_ref *ends = calloc(2 * (size_t)run->n_flows + 1, sizeof(*ends));
	int i, j, k, r, n = 0;

	if (!ends || !run->duration_ns) {	/* no share: the waits stay as measured */
		free(ends);
		return;
	}
	for (i = 0; i < run->n_flows; i++) {
		ends[n++] = (struct flow_end_ref){ run->flows[i].sender.comm, i, false };
		ends[n++] = (struct flow_end_ref){ run->flows[i].receiver.comm, i, true };
	}
	qsort(ends, n, sizeof(*ends), by_comm);
	for (i = 0; i < n; i = j) {
		double saved[CAL_RUNS] = {};
		int procs = 1;

		for (j = i; j < n && !strcmp(ends[j].comm, ends[i].comm); j++) {
			const struct flow *g = &run->flows[ends[j].flow];
			const struct path_saving *p = &ps[ends[j].flow];
			double opened;

			if (!p->ok)
				continue;
			/* of g's connections, those this end opened */
			opened = g->conns ? (double)(ends[j].receiver ? g->conns - g->conns_to_srv :
						     g->conns_to_srv) : 0;
			for (r = 0; r < CAL_RUNS; r++)
				saved[r] += g->messages * (ends[j].receiver ? p->copy[r] : p->send[r]) +
					    p->conn_weight * (opened * p->open[r] +
							      g->conns * p->close[r]);
			procs = MAX(procs, ends[j].receiver ? g->receiver.n_pids : g->sender.n_pids);
		}
		for (k = i; k < j; k++)
			for (r = 0; ends[k].receiver && r < CAL_RUNS; r++)
				ps[ends[k].flow].share[r] = MIN(MAX(saved[r] / ((double)run->duration_ns *
								       procs), 0.0), 0.9);
	}
	free(ends);
}

static void predict_flow(const struct trace_run *run, int at, const struct path_saving *ps,
			 const struct calibration *cal, int kind)
{
	struct flow *fl = &run->flows[at];
	struct flow_if_unix *u = &fl->if_unix;
	const struct path_saving *p = &ps[at];
	double n = fl->messages, saved[CAL_RUNS], cpu[CAL_RUNS], waits[CAL_RUNS], copy;
	double busy = fl->stages[FS_BUSY].ns_per_msg;
	int r;

	for (r = 0; r < CAL_RUNS; r++) {
		waits[r] = busy * p->share[r];
		saved[r] = p->send[r] + p->copy[r] + waits[r];
		cpu[r] = p->cpu[r];
	}
	/* the kernel's message path as measured: send() and the receive's copy and return
	 * (inside recv;blocked: its measured parts with --detail full, else the calibration's) */
	copy = fl->stages[FS_RECV].ns_per_msg;
	for (r = 0; r < fl->n_kstages; r++)
		if (fl->kstages[r].of == FS_RECV_BLOCKED &&
		    (!strcmp(fl->kstages[r].name, "recv;copy") ||
		     !strcmp(fl->kstages[r].name, "recv;return"))) {
			copy += fl->kstages[r].ns_per_msg;
			u->recv_measured = true;
		}
	if (!u->recv_measured && fl->stages[FS_RECV_BLOCKED].count)
		copy += MIN(cal->p[0][kind][p->split > 0.5][p->nearest].recv[TR_TCP] *
			    fl->stages[FS_RECV_BLOCKED].count / n, fl->stages[FS_RECV_BLOCKED].ns_per_msg);
	u->path_ns = fl->stages[FS_SEND].ns_per_msg + copy;
	u->path_unix_ns = MAX(u->path_ns - median3(cpu[0], cpu[1], cpu[2]), 0.0);
	u->waits_saved = median3(waits[0], waits[1], waits[2]);
	/* the run whose saving is the median: its stages add up to the predicted mean (the
	 * copy's saving split between recv;copy+return and recv;blocked by their messages) */
	r = median3_at(saved);
	u->saved = saved[r];
	{
		double in_recv = fl->stages[FS_RECV].count, in_blocked = fl->stages[FS_RECV_BLOCKED].count;
		double share = in_recv + in_blocked > 0 ? in_recv / (in_recv + in_blocked) : 1;
		int st;

		for (st = 0; st < FS__COUNT; st++)
			u->stage_ns[st] = fl->stages[st].ns_per_msg;
		u->stage_ns[FS_SEND] -= p->send[r];
		u->stage_ns[FS_RECV] -= p->copy[r] * share;
		u->stage_ns[FS_RECV_BLOCKED] -= p->copy[r] * (1 - share);
		u->stage_ns[FS_BUSY] -= waits[r];
	}
	/* the noise of a run at this latency, and the waits' share as a model error: half of it
	 * either way (the time per message of a process is estimated from the run's duration) */
	u->noise_ns = noise_at(cal, p->split > 0.5 ? PL_SPLIT : PL_SAME, p->nearest) * fl->mean;
	u->saved_lo = MIN(saved[0], MIN(saved[1], saved[2])) - u->noise_ns - u->waits_saved / 2;
	u->saved_hi = MAX(saved[0], MAX(saved[1], saved[2])) + u->noise_ns + u->waits_saved / 2;
	u->mean = fl->mean - u->saved;
	u->mean_lo = fl->mean - u->saved_hi;
	u->mean_hi = fl->mean - u->saved_lo;
	/* the difference is about the same for every message: the percentiles move by it */
	u->p50 = MAX((double)fl->p50 - u->saved, 0.0);
	u->p99 = MAX((double)fl->p99 - u->saved, 0.0);
	u->saved_frac = fl->mean > 0 ? u->saved / fl->mean : 0;
	u->size_used = cal_sizes[p->nearest];
	if (fl->conns) {
		u->conn_saved = median3(p->conn[0], p->conn[1], p->conn[2]);
		u->conn_saved_lo = MIN(p->conn[0], MIN(p->conn[1], p->conn[2]));
		u->conn_saved_hi = MAX(p->conn[0], MAX(p->conn[1], p->conn[2]));
	}
	mostly(fl, u->mostly, sizeof(u->mostly));
	u->predicted = true;
}

/* What --detail full's probes add to a TCP message and not to an AF_UNIX one: each TCP-only
 * kernel-stage program's run time per hit (measured during the trace) plus the calibrated
 * cost of a hit around it. 0 (and false) when the run times are unknown. */
static bool probe_extra_of(const struct trace_run *run, const struct calibration *cal,
			   struct probe_extra *pe)
{
	int k;

	memset(pe, 0, sizeof(*pe));
	for (k = 0; k < FK__COUNT; k++) {
		if (!(run->kstages & (1u << k)) || stage_marker(kstage_boundary[k], TR_UNIX, true))
			continue;	/* not attached, or on AF_UNIX's path too */
		if (run->kstage_hit_ns[k] <= 0) {
			memset(pe, 0, sizeof(*pe));
			return false;
		}
		pe->all += run->kstage_hit_ns[k] + cal->probe_ns;
		if (k <= FK_DATA_READY)	/* in path order: the receiver runs after data ready */
			pe->wake += run->kstage_hit_ns[k] + cal->probe_ns;
	}
	return true;
}

static void predict_flows(struct trace_run *run, const struct calibration *cal)
{
	bool full = run->detail && !strcmp(run->detail, "full");
	struct path_saving *ps = calloc(run->n_flows, sizeof(*ps));
	struct probe_extra pe = {};
	/* --detail full: the measured probes, else --compare's traced stages stand in for them */
	int kind = !full || probe_extra_of(run, cal, &pe) ? K_CORRECTED : K_TRACED, i;

	run->basis.tcp_probes_ns = pe.all;

	if (!ps) {
		for (i = 0; i < run->n_flows; i++)
			if (run->flows[i].transport == FL_TCP)
				snprintf(run->flows[i].if_unix.why, sizeof(run->flows[i].if_unix.why),
					 "out of memory");
		return;
	}
	for (i = 0; i < run->n_flows; i++)
		if (run->flows[i].transport == FL_TCP)
			path_saving(&run->flows[i], cal, kind, &pe, &ps[i]);
	conn_weights(run, ps);
	time_shares(run, ps);
	for (i = 0; i < run->n_flows; i++)
		if (ps[i].ok)
			predict_flow(run, i, ps, cal, kind);
	free(ps);
}

/* The run's basis from cal, and every TCP flow's prediction. */
static void predict_with(struct trace_run *run, const struct calibration *cal)
{
	struct if_unix_basis *b = &run->basis;
	int i;

	snprintf(b->date, sizeof(b->date), "%s", cal->date);
	snprintf(b->cpu, sizeof(b->cpu), "%s", cal->cpu);
	b->runs = CAL_RUNS;
	for (i = 0; i < N_SIZES; i++)
		b->sizes[i] = cal_sizes[i];
	b->n_sizes = N_SIZES;
	predict_flows(run, cal);
}

void predict_if_unix(struct trace_run *run, enum if_unix_mode mode, enum attach_mode attach,
		     int verbose)
{
	struct if_unix_basis *b = &run->basis;
	struct calibration cal = {};
	char cpu[128], why[200] = "";
	int i, err, n_tcp = 0;

	for (i = 0; i < run->n_flows; i++)
		n_tcp += run->flows[i].transport == FL_TCP;
	if (mode == IFU_OFF || (!n_tcp && mode != IFU_FRESH))
		return;
	b->asked = true;
	cpu_model(cpu, sizeof(cpu));
	cache_path(b->file, sizeof(b->file), cpu);
	err = mode == IFU_FRESH ? -ENOENT : cal_load(b->file, &cal);
	if (!err && (strcmp(cal.kernel, kernel_release()) || strcmp(cal.cpu, cpu)))
		err = -ESTALE;
	if (err && mode == IFU_CACHED) {
		snprintf(why, sizeof(why), "no AF_UNIX calibration is cached for this kernel and "
			 "CPU and --if-unix cached runs none: run --trace --if-unix fresh once");
	} else if (err) {
		memset(&cal, 0, sizeof(cal));
		if (udsprobe_stop) {	/* the trace ended on Ctrl-C: that one ends nothing more */
			compare_rearm();
			say_error("--if-unix: Ctrl-C now skips the calibration (the "
				"report follows without a prediction)");
		}
		say_error("--if-unix: calibrating AF_UNIX and TCP on this host for "
			"the prediction: udsprobe's ping-pong at %d sizes on one CPU and two, %d runs "
			"(cached in %s)...", N_SIZES, CAL_RUNS, b->file);
		err = cal_run(&cal, attach, verbose);
		if (err) {
			snprintf(why, sizeof(why), "the AF_UNIX calibration failed (%s)",
				 err == -EINTR ? "interrupted" : strerror(-err));
		} else {
			b->fresh = true;
			if (cal_save(b->file, &cal))
				say_error("--if-unix: the calibration is used but not "
					"cached (%s not written)", b->file);
		}
	}
	if (*why) {
		for (i = 0; i < run->n_flows; i++)
			if (run->flows[i].transport == FL_TCP)
				snprintf(run->flows[i].if_unix.why, sizeof(run->flows[i].if_unix.why),
					 "%s", why);
		return;
	}
	predict_with(run, &cal);
}

int predict_from_file(struct trace_run *run, const char *path)
{
	struct calibration cal = {};
	int err = cal_load(path, &cal);

	if (err)
		return err;
	run->basis.asked = true;
	snprintf(run->basis.file, sizeof(run->basis.file), "%s", path);
	predict_with(run, &cal);
	return 0;
}

/* ------------------------------------------------------------------ reports */

/* A TCP flow's prediction over AF_UNIX, in words from its numbers (docs/PREDICT.md). */
void predict_flow_text(const struct flow *fl, FILE *f)
{
	const struct flow_if_unix *u = &fl->if_unix;
	char a[32], b[32], c[32], d[32], e[32];
	double pct = 100 * u->saved_frac;

	if (!u->predicted) {
		if (*u->why)
			fprintf(f, "  over a unix socket: no prediction: %s\n", u->why);
		return;
	}
	fprintf(f, "  over a unix socket: %s instead of %s per message (%s%.0f %%, range %+.0f to "
		"%+.0f %%)%s%s; the kernel's message path %s -> %s of CPU\n",
		fmt_dur(u->mean, false, a, sizeof(a)), fmt_dur(fl->mean, false, b, sizeof(b)),
		pct >= 0 ? "-" : "+", fabs(pct), -100 * u->saved_hi / fl->mean,
		-100 * u->saved_lo / fl->mean, u->saved > 0 ? ", mostly " : "",
		u->saved > 0 ? u->mostly : "", fmt_dur(u->path_ns, false, c, sizeof(c)),
		fmt_dur(u->path_unix_ns, false, d, sizeof(d)));
	if (u->saved <= u->noise_ns)
		fprintf(f, "  that difference (%s) is within this host's run-to-run noise (%s): too "
			"small to matter\n", fmt_dur(fabs(u->saved), false, a, sizeof(a)),
			fmt_dur(u->noise_ns, false, e, sizeof(e)));
	if (fl->mean > 0 && u->path_ns < 0.25 * fl->mean)
		fprintf(f, "  the kernel's message path is %.0f %% of the message time: the rest "
			"(the event loop, waiting for a CPU, the application) does not change with the "
			"transport\n", 100 * u->path_ns / fl->mean);
	predict_conn_text(fl, "  ", f);
}

void predict_conn_text(const struct flow *fl, const char *indent, FILE *f)
{
	const struct flow_if_unix *u = &fl->if_unix;
	char a[32], b[32], c[32], d[32];

	/* short-lived connections (one per 10 messages or fewer): their set-up too */
	if (!u->predicted || !fl->conns || fl->conns * 10 < fl->messages)
		return;
	/* the range is of the saving (negative: a cost); the median reads as more or less */
	fprintf(f, "%sits %llu connections (one per %.1f messages): each %s %s over a unix socket "
		"beyond its messages (connect, accept, close; saving %s to %s), %s %s over the run\n",
		indent, (unsigned long long)fl->conns, (double)fl->messages / fl->conns,
		fmt_dur(fabs(u->conn_saved), false, a, sizeof(a)), u->conn_saved < 0 ? "more" : "less",
		fmt_dur(u->conn_saved_lo, false, b, sizeof(b)),
		fmt_dur(u->conn_saved_hi, false, c, sizeof(c)),
		fmt_dur(fabs(u->conn_saved) * fl->conns, false, d, sizeof(d)),
		u->conn_saved < 0 ? "more" : "less");
}

/* A TCP flow's prediction over AF_UNIX (docs/PREDICT.md); nothing for a flow not asked about. */
void predict_flow_json(struct jw *w, const struct flow_if_unix *u)
{
	int i;

	if (!u->predicted && !*u->why)
		return;
	jw_obj_begin(w, "if_unix");
	if (!u->predicted) {
		jw_str(w, "none", u->why);
		jw_obj_end(w);
		return;
	}
	jw_obj_begin(w, "latency_ns");
	jw_double(w, "mean", u->mean);
	jw_double(w, "p50", u->p50);
	jw_double(w, "p99", u->p99);
	jw_obj_end(w);
	jw_double(w, "saved_ns_per_msg", u->saved);
	jw_double(w, "saved_fraction", u->saved_frac);
	jw_double(w, "waits_saved_ns", u->waits_saved);
	jw_obj_begin(w, "cpu_ns_per_msg");
	jw_double(w, "measured", u->path_ns);
	jw_double(w, "predicted", u->path_unix_ns);
	jw_double(w, "saved", u->path_ns - u->path_unix_ns);
	jw_obj_end(w);
	jw_obj_begin(w, "range");
	jw_double(w, "mean_low_ns", u->mean_lo);
	jw_double(w, "mean_high_ns", u->mean_hi);
	jw_double(w, "saved_low_ns", u->saved_lo);
	jw_double(w, "saved_high_ns", u->saved_hi);
	jw_double(w, "noise_ns", u->noise_ns);
	jw_obj_end(w);
	jw_obj_begin(w, "stages_ns");
	for (i = 0; i < FS__COUNT; i++)
		jw_double(w, fl_stage_names[i], u->stage_ns[i]);
	jw_obj_end(w);
	jw_obj_begin(w, "per_connection");
	jw_double(w, "saved_ns", u->conn_saved);
	jw_double(w, "saved_low_ns", u->conn_saved_lo);
	jw_double(w, "saved_high_ns", u->conn_saved_hi);
	jw_obj_end(w);
	jw_u64(w, "calibration_size", u->size_used);
	jw_str(w, "recv_blocked_copy", u->recv_measured ? "measured" : "calibration");
	jw_str(w, "mostly", u->mostly);
	jw_obj_end(w);
}

void predict_basis_json(struct jw *w, const struct if_unix_basis *b)
{
	int i;

	if (!b->asked || !b->runs)
		return;
	jw_obj_begin(w, "if_unix_basis");
	jw_str(w, "calibration", b->file);
	jw_str(w, "date", b->date);
	jw_str(w, "cpu_model", b->cpu);
	jw_str(w, "kernel", kernel_release());
	jw_bool(w, "fresh", b->fresh);
	jw_i64(w, "runs", b->runs);
	jw_arr_begin(w, "sizes");
	for (i = 0; i < b->n_sizes; i++)
		jw_u64(w, NULL, b->sizes[i]);
	jw_arr_end(w);
	jw_double(w, "tcp_probes_ns", b->tcp_probes_ns);
	jw_obj_end(w);
}
