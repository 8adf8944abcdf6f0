// SPDX-License-Identifier: GPL-2.0
/*
 * Workload driver. The parent creates the listener, forks a server and a client,
 * pins them, lets them go together and collects results through a shared page.
 * The measured loops make only the socket syscalls plus one clock read per message:
 * buffers and the sample array exist before the loop starts.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"
#include "workload.h"
#include "workload_int.h"

static volatile sig_atomic_t interrupted;
/* The running workload's processes, for the signal handler (0: none). */
static volatile sig_atomic_t cur_client, cur_server;

void workload_interrupt(void)
{
	pid_t c = cur_client, s = cur_server;

	interrupted = 1;
	/* kill(2) is async-signal-safe: the run ends now, whatever the parent is doing */
	if (c > 0)
		kill(c, SIGKILL);
	if (s > 0)
		kill(s, SIGKILL);
}

void workload_interrupt_clear(void)
{
	interrupted = 0;
}

/* Publish a child to the handler; one that arrived before it was known is acted on now. */
static void track(volatile sig_atomic_t *slot, pid_t pid)
{
	*slot = pid;
	if (interrupted && pid > 0)
		kill(pid, SIGKILL);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void latency_summary(uint64_t *s, uint64_t n, uint64_t divisor, struct wl_latency *out)
{
	long double sum = 0;
	uint64_t i;

	memset(out, 0, sizeof(*out));
	if (!n)
		return;
	qsort(s, n, sizeof(*s), cmp_u64);
	for (i = 0; i < n; i++)
		sum += s[i];
	/* nearest-rank percentiles */
	out->p50 = s[(n * 50 + 99) / 100 - 1] / divisor;
	out->p90 = s[(n * 90 + 99) / 100 - 1] / divisor;
	out->p99 = s[(n * 99 + 99) / 100 - 1] / divisor;
	out->mean = (uint64_t)(sum / n / divisor);
	out->min = s[0] / divisor;
	out->max = s[n - 1] / divisor;
}

/* ---- orchestration ------------------------------------------------------- */

static int pick_cpus(enum cpu_place place, int *client_cpu, int *server_cpu)
{
	*client_cpu = *server_cpu = -1;
	if (place == CPU_NONE)
		return 0;
	*client_cpu = allowed_cpu(0);
	*server_cpu = place == CPU_SAME ? *client_cpu : allowed_cpu(1);
	if (*client_cpu < 0 || *server_cpu < 0) {
		say_error("--cpu %s needs %d usable CPU%s, this process may use %d "
			"(taskset, cgroup cpuset); use --cpu %s", place_names[place],
			place == CPU_SAME ? 1 : 2, place == CPU_SAME ? "" : "s", allowed_cpu_count(),
			place == CPU_SPLIT ? "same or none" : "none");
		return -EINVAL;
	}
	return 0;
}

int workload_check_place(enum cpu_place place)
{
	int c, s;

	return pick_cpus(place, &c, &s);
}

static void pin_self(int cpu, struct shared *sh, int *err_slot)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		child_fail(sh, err_slot, "sched_setaffinity");
}

/* Child start: die with the parent, then wait for the parent's go. */
static void child_start(pid_t parent, int go_fd)
{
	char c;

	/* SIGPIPE stays ignored: a peer gone mid-run is an error the child reports */
	if (!child_dies_with_parent(parent, SIGKILL, false))
		_exit(1);
	if (read(go_fd, &c, 1) != 1)
		_exit(1);	/* parent gave up before starting us */
	close(go_fd);
}

static pid_t spawn(pid_t parent, int go_fd, int close_fd)
{
	pid_t pid = fork();

	if (pid == 0) {
		if (close_fd >= 0)
			close(close_fd);
		child_start(parent, go_fd);
	}
	return pid;
}

/* ru: the child's CPU time is added to it */
static int reap(pid_t pid, const char *who, struct shared *sh, bool *failed, struct rusage *ru)
{
	struct rusage r = { 0 };
	int status;

	while (wait4(pid, &status, 0, &r) < 0) {
		if (errno != EINTR)
			return -errno;
		if (interrupted)
			kill(pid, SIGKILL);
	}
	timeradd(&ru->ru_utime, &r.ru_utime, &ru->ru_utime);
	timeradd(&ru->ru_stime, &r.ru_stime, &ru->ru_stime);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (!*failed && !interrupted) {
		const char *msg = !strcmp(who, "client") ? sh->client_msg : sh->server_msg;

		if (msg[0])
			say_error("workload %s failed: %s", who, msg);
		else if (WIFSIGNALED(status))
			say_error("workload %s killed by signal %d", who,
				WTERMSIG(status));
		else
			say_error("workload %s exited with %d", who,
				WEXITSTATUS(status));
	}
	*failed = true;
	return -EIO;
}

/* The page shared with both children: results, the run's token, cap samples. */
static struct shared *shared_map(uint64_t cap, size_t *len)
{
	struct shared *sh;

	*len = sizeof(*sh) + cap * sizeof(uint64_t);
	sh = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		say_error("cannot map %zu bytes for samples: %s", *len,
			strerror(errno));
		return NULL;
	}
	sh->client_cpu = sh->server_cpu = -1;
	if (getrandom(sh->token, sizeof(sh->token), 0) != sizeof(sh->token)) {
		uint64_t x = now_ns() ^ ((uint64_t)getpid() << 40);

		memcpy(sh->token, &x, sizeof(sh->token));
	}
	return sh;
}

static void __attribute__((noreturn))
server_child(const struct wl_config *cfg, struct shared *sh, int lfd, int cpu)
{
	char *buf = malloc(cfg->msg_size);

	if (!buf)
		child_fail(sh, &sh->server_err, "server buffer");
	memset(buf, 's', cfg->msg_size);
	pin_self(cpu, sh, &sh->server_err);
	server_run(cfg, sh, lfd, buf);
	sh->server_cpu = sched_getcpu();
	_exit(0);
}

static void __attribute__((noreturn))
client_child(const struct wl_config *cfg, const struct wl_hooks *hooks, struct shared *sh,
	     const struct endpoint *ep, int cpu, uint64_t cap)
{
	char *buf = malloc(cfg->msg_size);

	if (!buf)
		child_fail(sh, &sh->client_err, "client buffer");
	memset(buf, 'c', cfg->msg_size);
	memcpy(buf, sh->token, MIN(cfg->msg_size, TOKEN_LEN));
	pin_self(cpu, sh, &sh->client_err);
	if (cfg->mode == WL_PINGPONG)
		client_pingpong(cfg, hooks, sh, ep, buf, cap);
	else if (cfg->mode == WL_STREAM)
		client_stream(cfg, hooks, sh, ep, buf);
	else
		client_connect(cfg, hooks, sh, ep, buf, cap);
	sh->client_cpu = sched_getcpu();
	_exit(0);
}

/* Softirq time /proc/stat has counted on CPU a and b (-1: the "cpu" line of all), in ns. */
static double softirq_ns(int a, int b)
{
	double hz = sysconf(_SC_CLK_TCK), sum = 0;
	unsigned long long v[7];
	char name[16], want[2][16];
	FILE *f = fopen("/proc/stat", "re");

	if (!f || hz <= 0) {
		if (f)
			fclose(f);
		return -1;
	}
	snprintf(want[0], sizeof(want[0]), a < 0 ? "cpu" : "cpu%d", a);
	snprintf(want[1], sizeof(want[1]), b < 0 || b == a ? "-" : "cpu%d", b);
	while (fscanf(f, "%15s %llu %llu %llu %llu %llu %llu %llu%*[^\n]", name, &v[0], &v[1],
		      &v[2], &v[3], &v[4], &v[5], &v[6]) == 8)
		if (!strcmp(name, want[0]) || !strcmp(name, want[1]))
			sum += v[6] * 1e9 / hz;	/* user nice system idle iowait irq softirq */
	fclose(f);
	return sum;
}

/* CPU per unit of a finished run: the whole run's, warm-up included, over all its units. */
static void fill_cpu(const struct wl_config *cfg, const struct rusage *ru, double softirq,
		     struct wl_result *res)
{
	double units = (double)(res->count + cfg->warmup) * (cfg->mode == WL_PINGPONG ? 2 : 1);

	if (units <= 0 || softirq < 0)
		return;
	res->has_cpu = true;
	res->user_ns = (ru->ru_utime.tv_sec * 1e9 + ru->ru_utime.tv_usec * 1e3) / units;
	res->sys_ns = (ru->ru_stime.tv_sec * 1e9 + ru->ru_stime.tv_usec * 1e3) / units;
	res->softirq_ns = softirq / units;
}

/* A finished run's numbers, from the shared page. */
static void fill_result(const struct wl_config *cfg, struct shared *sh, struct wl_result *res)
{
	uint64_t i;

	res->count = sh->count;
	res->strangers = sh->strangers;
	res->client_cpu = sh->client_cpu;
	res->server_cpu = sh->server_cpu;
	if (cfg->mode == WL_STREAM) {
		res->elapsed_ns = sh->elapsed_ns;
		res->msgs_per_sec = sh->count * 1e9 / MAX(sh->elapsed_ns, 1);
		res->bytes_per_sec = res->msgs_per_sec * cfg->msg_size;
		return;
	}
	for (i = 0; i < sh->n_samples; i++)
		res->elapsed_ns += sh->samples[i];
	res->has_latency = true;
	/* pingpong samples are round trips: one-way is half */
	latency_summary(sh->samples, sh->n_samples, cfg->mode == WL_PINGPONG ? 2 : 1, &res->latency);
	if (cfg->mode == WL_PINGPONG) {
		res->msgs_per_sec = 2 * sh->n_samples * 1e9 / MAX(res->elapsed_ns, 1);
		res->bytes_per_sec = res->msgs_per_sec * cfg->msg_size;
	} else {
		res->conns_per_sec = sh->n_samples * 1e9 / MAX(res->elapsed_ns, 1);
	}
}

/*
 * One run's whole lifecycle: shared page, listener, the two children, the start signal, reaping
 * and the result. Longer than our ~80-line rule on purpose: it is one acquire/release ladder
 * with one cleanup chain, and splitting it would copy the labels into each part.
 */
int workload_run(const struct wl_config *cfg, const struct wl_hooks *hooks, struct wl_result *res)
{
	uint64_t cap = 0;
	size_t shm_len;
	struct shared *sh;
	struct endpoint ep;
	int lfd, go[2] = { -1, -1 }, err = 0, ccpu, scpu;
	pid_t parent = getpid(), client = -1, server = -1;
	struct rusage ru = { 0 };
	double softirq0;
	bool failed = false;

	memset(res, 0, sizeof(*res));
	if (interrupted)	/* Ctrl-C came before this run (attach, calibration) */
		return -EINTR;
	if (cfg->msg_size < 1 || cfg->msg_size > WL_MAX_MSG_SIZE)
		return -EINVAL;
	err = pick_cpus(cfg->place, &ccpu, &scpu);
	if (err)
		return err;
	if (cfg->mode != WL_STREAM)
		cap = cfg->count ? cfg->count : MIN((uint64_t)(cfg->duration_s * 2e6) + 1, MAX_SAMPLES);
	sh = shared_map(cap, &shm_len);
	if (!sh)
		return -ENOMEM;
	softirq0 = softirq_ns(ccpu, scpu);

	lfd = make_listener(cfg, &ep);
	if (lfd < 0) {
		err = lfd;
		say_error("cannot create the %s listener: %s",
			transport_names[cfg->transport], strerror(-err));
		goto out_unmap;
	}
	if (pipe2(go, O_CLOEXEC)) {
		err = -errno;
		say_error("workload: cannot make a pipe: %s", strerror(-err));
		goto out_close;
	}

	server = spawn(parent, go[0], go[1]);
	if (server == 0)
		server_child(cfg, sh, lfd, scpu);
	if (server < 0) {
		err = -errno;
		say_error("workload: cannot start the server process: %s",
			strerror(-err));
		goto out_close;
	}
	track(&cur_server, server);
	client = spawn(parent, go[0], go[1]);
	if (client == 0) {
		close(lfd);
		client_child(cfg, hooks, sh, &ep, ccpu, cap);
	}
	if (client < 0) {
		err = -errno;
		say_error("workload: cannot start the client process: %s",
			strerror(-err));
		failed = true;	/* said: the server's SIGKILL below is ours, not its failure */
		kill(server, SIGKILL);
		goto out_reap;
	}
	track(&cur_client, client);
	close(lfd);
	lfd = -1;
	close(go[0]);
	go[0] = -1;

	if (hooks && hooks->spawned) {
		err = hooks->spawned(hooks->ctx, client, server);
		if (err) {
			say_error("workload: preparing the run failed: %s",
				strerror(-err));
			failed = true;	/* the kills below are ours */
			kill(client, SIGKILL);
			kill(server, SIGKILL);
			goto out_reap;
		}
	}
	/* one byte each: both start together */
	if (write(go[1], "gg", 2) != 2) {
		err = -errno;
		say_error("workload: cannot start the processes: %s",
			strerror(-err));
		failed = true;
		kill(client, SIGKILL);
		kill(server, SIGKILL);
	}

out_reap:
	if (client > 0 && reap(client, "client", sh, &failed, &ru))
		kill(server, SIGKILL);	/* a server waiting for a dead client never returns */
	if (server > 0)
		reap(server, "server", sh, &failed, &ru);
	cur_client = cur_server = 0;
	if (interrupted)
		err = -EINTR;
	else if (failed && !err)
		err = -EIO;
	if (!err) {
		fill_result(cfg, sh, res);
		fill_cpu(cfg, &ru, softirq0 < 0 ? -1 : softirq_ns(ccpu, scpu) - softirq0, res);
		res->client_pid = client;
		res->server_pid = server;
	}
out_close:
	if (go[0] >= 0)
		close(go[0]);
	if (go[1] >= 0)
		close(go[1]);
	if (lfd >= 0)
		close(lfd);
	if (cfg->transport == TR_UNIX && ep.addr_len)
		unlink(((struct sockaddr_un *)&ep.addr)->sun_path);
out_unmap:
	munmap(sh, shm_len);
	return err;
}
