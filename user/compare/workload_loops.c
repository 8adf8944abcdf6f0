// SPDX-License-Identifier: GPL-2.0
/*
 * The workload's measured loops, run in the children workload.c forks: the client's
 * pingpong, stream and connect loops, the server, and the socket set-up they share. Only the
 * socket syscalls and one clock read per message inside the measured part.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "util.h"
#include "workload_int.h"

/* The workload's names (workload.h): here, where the loops name their sockets by them. */
const char *const transport_names[TR__COUNT] = { "unix", "tcp" };
const char *const mode_names[WL__COUNT] = { "pingpong", "stream", "connect" };
const char *const place_names[CPU__COUNT] = { "same", "split", "none" };

void child_fail(struct shared *sh, int *err_slot, const char *what)
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

static unsigned int unix_runs;	/* listeners made by this process */

int make_listener(const struct wl_config *cfg, struct endpoint *ep)
{
	int fd, one = 1;

	memset(ep, 0, sizeof(*ep));
	fd = make_socket(cfg);
	if (fd < 0)
		return -errno;
	if (cfg->transport == TR_UNIX) {
		struct sockaddr_un *un = (struct sockaddr_un *)&ep->addr;

		un->sun_family = AF_UNIX;
		/* a path per run: --trace of --compare tells its runs apart (docs/TRACE.md) */
		snprintf(un->sun_path, sizeof(un->sun_path), "%s/%s-%lluB-%u.sock", cfg->sock_dir,
			 mode_names[cfg->mode], (unsigned long long)cfg->msg_size, ++unix_runs);
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
int connect_to(const struct wl_config *cfg, const struct endpoint *ep, struct shared *sh)
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

/* --think: application work between a reply and the next request, on the CPU as real work
 * would be (a sleep would let the CPU idle and change the next wakeup's cost). */
static void think(uint64_t ns)
{
	uint64_t end = now_ns() + ns;

	while (now_ns() < end)
		;
}

void client_pingpong(const struct wl_config *cfg, const struct wl_hooks *hooks,
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
		if (cfg->think_ns)
			think(cfg->think_ns);
		if (sample_done(cfg, sh, cap, deadline, &n, &t_prev))
			break;
	}
	stop_measuring(hooks);
	sh->count = n;
	sh->n_samples = MIN(n, cap);
	close(fd);
}

void client_stream(const struct wl_config *cfg, const struct wl_hooks *hooks,
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

void client_connect(const struct wl_config *cfg, const struct wl_hooks *hooks,
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
int accept_client(const struct wl_config *cfg, struct shared *sh, int lfd)
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

void server_run(const struct wl_config *cfg, struct shared *sh, int lfd, char *buf)
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
