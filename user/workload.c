// SPDX-License-Identifier: GPL-2.0
/*
 * Workload driver. The parent creates the listener, forks a server and a client,
 * pins them, lets them go together and collects results through a shared page.
 * The measured loops make only the socket syscalls plus one clock read per message:
 * buffers and the sample array exist before the loop starts.
 */
#include <errno.h>
#include <dirent.h>
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
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/time.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"
#include "workload.h"

const char *const transport_names[TR__COUNT] = { "unix", "tcp" };
const char *const mode_names[WL__COUNT] = { "pingpong", "stream", "connect" };
const char *const place_names[CPU__COUNT] = { "same", "split", "none" };

#define MAX_SAMPLES (16u << 20)	/* duration runs stop storing samples beyond this */
#define TOKEN_LEN 8
/* connect-mode server: a silent stranger is dropped after this; our client never waits */
#define STRANGER_TIMEOUT_S 2

struct shared {
	uint64_t n_samples;
	uint64_t count;
	uint64_t strangers;		/* connections the server refused: not its client */
	unsigned char token[TOKEN_LEN];	/* starts each connect-mode request (parent sets it) */
	uint16_t client_port;		/* TCP pingpong/stream: the client's bound port */
	uint64_t elapsed_ns;
	int client_cpu, server_cpu;
	int client_err, server_err;
	char client_msg[256], server_msg[256];	/* each side's own failure */
	uint64_t samples[];
};

struct endpoint {
	int family;
	struct sockaddr_storage addr;
	socklen_t addr_len;
};

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

static void child_fail(struct shared *sh, int *err_slot, const char *what)
{
	int err = errno ? errno : EIO;
	char *msg = err_slot == &sh->client_err ? sh->client_msg : sh->server_msg;

	*err_slot = err;
	snprintf(msg, sizeof(sh->client_msg), "%s: %s", what, strerror(err));
	_exit(1);
}

static ssize_t send_all(int fd, const char *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = send(fd, buf + done, len - done, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		done += n;
	}
	return done;
}

/* Returns len, 0 on orderly EOF before any byte, -1 on error (errno set). */
static ssize_t recv_all(int fd, char *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = recv(fd, buf + done, len - done, MSG_WAITALL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0) {
			if (done == 0)
				return 0;
			errno = ECONNRESET;
			return -1;
		}
		done += n;
	}
	return done;
}

static int make_socket(const struct wl_config *cfg)
{
	int fd = socket(cfg->transport == TR_UNIX ? AF_UNIX : AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;

	if (fd >= 0 && cfg->transport == TR_TCP)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static int make_listener(const struct wl_config *cfg, struct endpoint *ep)
{
	int fd, one = 1;

	memset(ep, 0, sizeof(*ep));
	fd = make_socket(cfg);
	if (fd < 0)
		return -errno;
	if (cfg->transport == TR_UNIX) {
		struct sockaddr_un *un = (struct sockaddr_un *)&ep->addr;

		un->sun_family = AF_UNIX;
		snprintf(un->sun_path, sizeof(un->sun_path), "%s/%s.sock", cfg->sock_dir,
			 mode_names[cfg->mode]);
		unlink(un->sun_path);
		ep->addr_len = sizeof(*un);
	} else {
		struct sockaddr_in *in = (struct sockaddr_in *)&ep->addr;

		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		in->sin_family = AF_INET;
		in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		ep->addr_len = sizeof(*in);
	}
	if (cfg->mode == WL_CONNECT) {
		/* TCP connections inherit it from the listener (AF_UNIX ones do not, and need
		 * not: only we can connect): a stranger that connects and stays silent is
		 * dropped instead of stalling the run. Our client sends its request at once. */
		struct timeval tv = { .tv_sec = STRANGER_TIMEOUT_S };

		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}
	if (bind(fd, (struct sockaddr *)&ep->addr, ep->addr_len) || listen(fd, 128))
		goto fail;
	if (cfg->transport == TR_TCP &&
	    getsockname(fd, (struct sockaddr *)&ep->addr, &ep->addr_len))
		goto fail;
	return fd;
fail: {
	int err = -errno;

	close(fd);
	return err;
}
}

/*
 * sh != NULL (the one connection of pingpong and stream): over TCP, bind to a port first and
 * publish it, so the server can tell this client from anyone else who connects to the port.
 */
static int connect_to(const struct wl_config *cfg, const struct endpoint *ep, struct shared *sh)
{
	int fd = make_socket(cfg);

	if (fd < 0)
		return -1;
	if (sh && cfg->transport == TR_TCP) {
		struct sockaddr_in me = { .sin_family = AF_INET,
					  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t len = sizeof(me);

		if (bind(fd, (struct sockaddr *)&me, sizeof(me)) ||
		    getsockname(fd, (struct sockaddr *)&me, &len)) {
			int err = errno;

			close(fd);
			errno = err;
			return -1;
		}
		/* published before the SYN exists: the server reads it after accept() */
		__atomic_store_n(&sh->client_port, me.sin_port, __ATOMIC_RELEASE);
	}
	if (connect(fd, (const struct sockaddr *)&ep->addr, ep->addr_len)) {
		int err = errno;

		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

/* Tracing on, then the start time; *deadline for --duration runs (0 with --count). */
static uint64_t start_measuring(const struct wl_config *cfg, const struct wl_hooks *hooks,
				uint64_t *deadline)
{
	uint64_t t0;

	if (hooks && hooks->measure)
		hooks->measure(hooks->ctx, true);
	t0 = now_ns();
	*deadline = cfg->count ? 0 : t0 + (uint64_t)(cfg->duration_s * 1e9);
	return t0;
}

static void stop_measuring(const struct wl_hooks *hooks)
{
	if (hooks && hooks->measure)
		hooks->measure(hooks->ctx, false);
}

/* One clock read per unit: record its sample, say whether the run is complete. */
static inline bool sample_done(const struct wl_config *cfg, struct shared *sh, uint64_t cap,
			       uint64_t deadline, uint64_t *n, uint64_t *t_prev)
{
	uint64_t t = now_ns();

	if (*n < cap)
		sh->samples[*n] = t - *t_prev;
	*t_prev = t;
	++*n;
	return cfg->count ? *n == cfg->count : (t >= deadline || *n == cap);
}

static uint64_t warmup_of(const struct wl_config *cfg)
{
	return cfg->warmup;
}

/* ---- client side --------------------------------------------------------- */

static void client_pingpong(const struct wl_config *cfg, const struct wl_hooks *hooks,
			    struct shared *sh, const struct endpoint *ep, char *buf, uint64_t cap)
{
	uint64_t i, n = 0, t_prev, deadline = 0;
	size_t len = cfg->msg_size;
	int fd = connect_to(cfg, ep, sh);

	if (fd < 0)
		child_fail(sh, &sh->client_err, "client connect");
	for (i = 0; i < warmup_of(cfg); i++)
		if (send_all(fd, buf, len) < 0 || recv_all(fd, buf, len) <= 0)
			child_fail(sh, &sh->client_err, "client warm-up");
	t_prev = start_measuring(cfg, hooks, &deadline);
	for (;;) {
		if (send_all(fd, buf, len) < 0 || recv_all(fd, buf, len) <= 0)
			child_fail(sh, &sh->client_err, "client ping-pong");
		if (sample_done(cfg, sh, cap, deadline, &n, &t_prev))
			break;
	}
	stop_measuring(hooks);
	sh->count = n;
	sh->n_samples = MIN(n, cap);
	close(fd);
}

static void client_stream(const struct wl_config *cfg, const struct wl_hooks *hooks,
			  struct shared *sh, const struct endpoint *ep, char *buf)
{
	uint64_t i, n = 0, t0, t = 0, deadline = 0, total;
	size_t len = cfg->msg_size;
	int fd = connect_to(cfg, ep, sh);
	char ack;

	if (fd < 0)
		child_fail(sh, &sh->client_err, "client connect");
	for (i = 0; i < warmup_of(cfg); i++)
		if (send_all(fd, buf, len) < 0)
			child_fail(sh, &sh->client_err, "client warm-up");
	/* the server acks the warm-up so measured bytes start on a drained pipe */
	if (recv_all(fd, &ack, 1) <= 0)
		child_fail(sh, &sh->client_err, "client warm-up ack");
	t0 = start_measuring(cfg, hooks, &deadline);
	for (;;) {
		if (send_all(fd, buf, len) < 0)
			child_fail(sh, &sh->client_err, "client stream");
		n++;
		if (cfg->count) {
			if (n == cfg->count)
				break;
		} else if ((t = now_ns()) >= deadline) {
			break;
		}
	}
	shutdown(fd, SHUT_WR);
	if (recv_all(fd, (char *)&total, sizeof(total)) <= 0)
		child_fail(sh, &sh->client_err, "client stream final ack");
	t = now_ns();
	stop_measuring(hooks);
	if (total != n * len) {
		errno = EPROTO;
		child_fail(sh, &sh->client_err, "server received a different byte count");
	}
	sh->count = n;
	sh->elapsed_ns = t - t0;
	close(fd);
}

static void client_connect(const struct wl_config *cfg, const struct wl_hooks *hooks,
			   struct shared *sh, const struct endpoint *ep, char *buf, uint64_t cap)
{
	uint64_t i, n = 0, t_prev, deadline = 0;
	size_t len = cfg->msg_size;
	int fd;

	for (i = 0; i < warmup_of(cfg); i++) {
		fd = connect_to(cfg, ep, NULL);
		if (fd < 0 || send_all(fd, buf, len) < 0 || recv_all(fd, buf, len) <= 0)
			child_fail(sh, &sh->client_err, "client warm-up connection");
		close(fd);
	}
	t_prev = start_measuring(cfg, hooks, &deadline);
	for (;;) {
		fd = connect_to(cfg, ep, NULL);
		if (fd < 0 || send_all(fd, buf, len) < 0 || recv_all(fd, buf, len) <= 0)
			child_fail(sh, &sh->client_err, "client connection");
		close(fd);
		if (sample_done(cfg, sh, cap, deadline, &n, &t_prev))
			break;
	}
	stop_measuring(hooks);
	sh->count = n;
	sh->n_samples = MIN(n, cap);
	/* a request carrying the inverted token tells the server to stop */
	for (i = 0; i < MIN(len, TOKEN_LEN); i++)
		buf[i] = ~sh->token[i];
	fd = connect_to(cfg, ep, NULL);
	if (fd >= 0) {
		send_all(fd, buf, len);
		close(fd);
	}
}

/* ---- server side --------------------------------------------------------- */

/* How a connect-mode request starts: our token, the stop token, or neither (a stranger). */
enum req_kind { REQ_OURS, REQ_STOP, REQ_STRANGER };

static enum req_kind request_kind(const struct shared *sh, const char *buf, size_t len)
{
	size_t i, n = MIN(len, TOKEN_LEN);
	bool ours = true, stop = true;

	for (i = 0; i < n; i++) {
		unsigned char c = buf[i], inv = ~sh->token[i];

		ours &= c == sh->token[i];
		stop &= c == inv;
	}
	return ours ? REQ_OURS : stop ? REQ_STOP : REQ_STRANGER;
}

/*
 * The one connection of pingpong and stream. Anyone may connect to a TCP port on 127.0.0.1:
 * accept until the peer is our client (the port it published), closing the others.
 */
static int accept_client(const struct wl_config *cfg, struct shared *sh, int lfd)
{
	struct sockaddr_in peer;
	socklen_t len;
	int fd;

	for (;;) {
		len = sizeof(peer);
		fd = accept4(lfd, (struct sockaddr *)&peer, &len, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR)
				continue;
			child_fail(sh, &sh->server_err, "server accept");
		}
		if (cfg->transport != TR_TCP ||	/* unix: only we can reach the 0700 directory */
		    (peer.sin_addr.s_addr == htonl(INADDR_LOOPBACK) &&
		     peer.sin_port == __atomic_load_n(&sh->client_port, __ATOMIC_ACQUIRE)))
			return fd;
		close(fd);
		sh->strangers++;
	}
}

static void server_run(const struct wl_config *cfg, struct shared *sh, int lfd, char *buf)
{
	size_t len = cfg->msg_size;
	uint64_t i, total = 0;
	ssize_t n;
	char ack = 'w';
	int fd;

	if (cfg->mode == WL_CONNECT) {
		for (;;) {
			fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
			if (fd < 0) {
				if (errno == EINTR)
					continue;
				child_fail(sh, &sh->server_err, "server accept");
			}
			/* a stranger closes, resets, times out or sends something else: drop it.
			 * A failure of our own client ends the run through its exit status. */
			n = recv_all(fd, buf, len);
			switch (n > 0 ? request_kind(sh, buf, len) : REQ_STRANGER) {
			case REQ_STOP:
				close(fd);
				return;
			case REQ_STRANGER:
				sh->strangers++;
				close(fd);
				continue;
			case REQ_OURS:
				break;
			}
			if (send_all(fd, buf, len) < 0)
				child_fail(sh, &sh->server_err, "server connection");
			close(fd);
		}
	}

	fd = accept_client(cfg, sh, lfd);
	if (cfg->mode == WL_PINGPONG) {
		while ((n = recv_all(fd, buf, len)) > 0)
			if (send_all(fd, buf, len) < 0)
				child_fail(sh, &sh->server_err, "server send");
		if (n < 0)
			child_fail(sh, &sh->server_err, "server recv");
		close(fd);
		return;
	}

	/* stream: drain the warm-up, ack it, then count bytes until EOF */
	for (i = 0; i < warmup_of(cfg); i++)
		if (recv_all(fd, buf, len) <= 0)
			child_fail(sh, &sh->server_err, "server warm-up");
	if (send_all(fd, &ack, 1) < 0)
		child_fail(sh, &sh->server_err, "server warm-up ack");
	for (;;) {
		n = recv(fd, buf, len, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			child_fail(sh, &sh->server_err, "server stream recv");
		}
		if (n == 0)
			break;
		total += n;
	}
	if (send_all(fd, (char *)&total, sizeof(total)) < 0)
		child_fail(sh, &sh->server_err, "server final ack");
	close(fd);
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
		fprintf(stderr, "udsprobe: --cpu %s needs %d usable CPU%s, this process may use %d "
			"(taskset, cgroup cpuset); use --cpu %s\n", place_names[place],
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

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
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

static int reap(pid_t pid, const char *who, struct shared *sh, bool *failed)
{
	int status;

	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return -errno;
		if (interrupted)
			kill(pid, SIGKILL);
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (!*failed && !interrupted) {
		const char *msg = !strcmp(who, "client") ? sh->client_msg : sh->server_msg;

		if (msg[0])
			fprintf(stderr, "udsprobe: workload %s failed: %s\n", who, msg);
		else if (WIFSIGNALED(status))
			fprintf(stderr, "udsprobe: workload %s killed by signal %d\n", who,
				WTERMSIG(status));
		else
			fprintf(stderr, "udsprobe: workload %s exited with %d\n", who,
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
		fprintf(stderr, "udsprobe: cannot map %zu bytes for samples: %s\n", *len,
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

	lfd = make_listener(cfg, &ep);
	if (lfd < 0) {
		err = lfd;
		fprintf(stderr, "udsprobe: cannot create the %s listener: %s\n",
			transport_names[cfg->transport], strerror(-err));
		goto out_unmap;
	}
	if (pipe2(go, O_CLOEXEC)) {
		err = -errno;
		goto out_close;
	}

	server = spawn(parent, go[0], go[1]);
	if (server == 0)
		server_child(cfg, sh, lfd, scpu);
	if (server < 0) {
		err = -errno;
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
			kill(client, SIGKILL);
			kill(server, SIGKILL);
			goto out_reap;
		}
	}
	/* one byte each: both start together */
	if (write(go[1], "gg", 2) != 2) {
		err = -errno;
		kill(client, SIGKILL);
		kill(server, SIGKILL);
	}

out_reap:
	if (client > 0 && reap(client, "client", sh, &failed))
		kill(server, SIGKILL);	/* a server waiting for a dead client never returns */
	if (server > 0)
		reap(server, "server", sh, &failed);
	cur_client = cur_server = 0;
	if (interrupted)
		err = -EINTR;
	else if (failed && !err)
		err = -EIO;
	if (!err) {
		fill_result(cfg, sh, res);
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

/*
 * The socket directory must not outlive udsprobe, even under SIGKILL. A janitor
 * child holds the read end of a pipe whose only writer is udsprobe: when udsprobe
 * exits for any reason the read returns EOF and the janitor removes the directory.
 */
int sockdir_create(char *path, size_t len)
{
	int fds[2];
	pid_t pid;

	snprintf(path, len, "/tmp/udsprobe.XXXXXX");
	if (!mkdtemp(path))	/* mkdtemp creates it 0700 */
		return -errno;
	if (pipe2(fds, O_CLOEXEC))
		goto fail;
	pid = fork();
	if (pid < 0)
		goto fail;
	if (pid == 0) {
		char c;

		close(fds[1]);
		setsid();	/* out of the terminal's process group: Ctrl-C is udsprobe's */
		signal(SIGINT, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		while (read(fds[0], &c, 1) < 0 && errno == EINTR)
			;
		sockdir_remove(path);
		_exit(0);
	}
	close(fds[0]);
	/* the write end stays open, close-on-exec, for udsprobe's lifetime */
	return 0;
fail: {
	int err = -errno;

	rmdir(path);
	return err;
}
}

void sockdir_remove(const char *path)
{
	char file[PATH_MAX];
	struct dirent *de;
	DIR *dir = opendir(path);

	if (!dir)
		return;
	while ((de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "%s/%s", path, de->d_name);
		unlink(file);
	}
	closedir(dir);
	rmdir(path);
}
