// SPDX-License-Identifier: GPL-2.0
/*
 * The scrape endpoint: GET /metrics answers with the Prometheus text exposition
 * format, other paths 404, other methods 405. One request per connection
 * (Connection: close), requests bounded to MH_MAX_REQUEST bytes, at most
 * MH_MAX_CONNS connections (a new one replaces the longest idle), idle ones
 * closed after MH_IDLE_NS; every socket is non-blocking, so a slow or hostile client never holds up the caller's loop.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "metrics_http.h"
#include "util.h"

#define CONTENT_TYPE	"text/plain; version=0.0.4; charset=utf-8"

struct mh_conn {
	int fd;			/* -1: slot free */
	uint64_t last_ns;	/* last progress */
	size_t in_len;
	char in[MH_MAX_REQUEST];
	char *out;		/* the response, once the request is complete */
	size_t out_len, out_off;
	int draining;		/* response sent, write side shut: reading to EOF */
};

struct metrics_http {
	int lfd;
	uint64_t requests;
	struct mh_conn c[MH_MAX_CONNS];
};

int metrics_http_parse(const char *spec, struct sockaddr_storage *sa, unsigned int *len)
{
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)sa;
	struct sockaddr_in *s4 = (struct sockaddr_in *)sa;
	const char *colon = strrchr(spec, ':');
	char host[INET6_ADDRSTRLEN + 2];
	size_t hlen;
	uint64_t port;

	if (!colon || parse_u64(colon + 1, 1, 65535, &port))
		return -EINVAL;
	hlen = colon - spec;
	if (hlen >= sizeof(host))
		return -EINVAL;
	memcpy(host, spec, hlen);
	host[hlen] = 0;
	memset(sa, 0, sizeof(*sa));
	if (hlen >= 2 && host[0] == '[' && host[hlen - 1] == ']') {
		host[hlen - 1] = 0;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		*len = sizeof(*s6);
		return inet_pton(AF_INET6, host + 1, &s6->sin6_addr) == 1 ? 0 : -EINVAL;
	}
	s4->sin_family = AF_INET;
	s4->sin_port = htons(port);
	*len = sizeof(*s4);
	if (!hlen) {
		s4->sin_addr.s_addr = htonl(INADDR_ANY);
		return 0;
	}
	return inet_pton(AF_INET, host, &s4->sin_addr) == 1 ? 0 : -EINVAL;
}

int metrics_http_open(const char *spec, struct metrics_http **out, char *msg, size_t len)
{
	struct sockaddr_storage sa;
	struct metrics_http *m;
	unsigned int salen;
	int i, one = 1, err;

	if (metrics_http_parse(spec, &sa, &salen)) {
		snprintf(msg, len, "not ADDR:PORT with a numeric address");
		return -EINVAL;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		snprintf(msg, len, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	for (i = 0; i < MH_MAX_CONNS; i++)
		m->c[i].fd = -1;
	m->lfd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (m->lfd < 0 || setsockopt(m->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(m->lfd, (struct sockaddr *)&sa, salen) || listen(m->lfd, 64)) {
		err = -errno;
		snprintf(msg, len, "%s", strerror(-err));
		if (m->lfd >= 0)
			close(m->lfd);
		free(m);
		return err;
	}
	*out = m;
	return 0;
}

static void conn_close(struct mh_conn *c)
{
	close(c->fd);
	free(c->out);
	c->fd = -1;
	c->out = NULL;
	c->in_len = c->out_len = c->out_off = 0;
	c->draining = 0;
}

static void conn_accept(struct metrics_http *m, uint64_t now)
{
	int fd, i;

	while ((fd = accept4(m->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		int oldest = 0;

		for (i = 0; i < MH_MAX_CONNS && m->c[i].fd >= 0; i++)
			if (m->c[i].last_ns < m->c[oldest].last_ns)
				oldest = i;
		if (i == MH_MAX_CONNS) {	/* full: the longest-idle one makes room */
			i = oldest;
			conn_close(&m->c[i]);
		}
		m->c[i].fd = fd;
		m->c[i].last_ns = now;
	}
}

/* The whole response in c->out: status line, headers, and the body for 200. */
static void respond(struct mh_conn *c, int status, const char *reason, const char *ctype,
		    const char *body, size_t blen, int head_only)
{
	FILE *f = open_memstream(&c->out, &c->out_len);

	if (!f)
		return;
	fprintf(f, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s"
		"Connection: close\r\n\r\n", status, reason, ctype, blen,
		status == 405 ? "Allow: GET, HEAD\r\n" : "");
	if (!head_only)
		fwrite(body, 1, blen, f);
	if (fclose(f)) {
		free(c->out);
		c->out = NULL;
		c->out_len = 0;
	}
}

static void respond_text(struct mh_conn *c, int status, const char *reason, int head_only)
{
	char body[64];
	int n = snprintf(body, sizeof(body), "%d %s\n", status, reason);

	respond(c, status, reason, "text/plain; charset=utf-8", body, n, head_only);
}

/* 200 with the body fn writes now. */
static void serve_metrics(struct mh_conn *c, metrics_body_fn fn, void *ctx, int head_only)
{
	char *body = NULL;
	size_t blen = 0;
	FILE *f = open_memstream(&body, &blen);

	if (!f)
		return;
	fn(ctx, f);
	if (fclose(f))
		respond_text(c, 500, "Internal Server Error", head_only);
	else
		respond(c, 200, "OK", CONTENT_TYPE, body, blen, head_only);
	free(body);
}

/* A complete request head in c->in: route it. */
static void handle(struct metrics_http *m, struct mh_conn *c, metrics_body_fn fn, void *ctx)
{
	char method[8], target[256], version[16];
	int head_only;

	m->requests++;
	if (sscanf(c->in, "%7s %255s %15s", method, target, version) != 3 ||
	    strncmp(version, "HTTP/1.", 7)) {
		respond_text(c, 400, "Bad Request", 0);
		return;
	}
	head_only = !strcmp(method, "HEAD");
	if (strcmp(method, "GET") && !head_only) {
		respond_text(c, 405, "Method Not Allowed", 0);
		return;
	}
	target[strcspn(target, "?")] = 0;
	if (strcmp(target, "/metrics")) {
		respond_text(c, 404, "Not Found", head_only);
		return;
	}
	serve_metrics(c, fn, ctx, head_only);
}

/* After the response: discard what the client still sends until it closes. */
static void conn_drain(struct mh_conn *c)
{
	char buf[4096];
	ssize_t n;

	while ((n = read(c->fd, buf, sizeof(buf))) > 0)
		;
	if (n == 0 || (errno != EAGAIN && errno != EINTR))
		conn_close(c);
}

/* Read what is there; once the head is complete, build the response. */
static void conn_read(struct metrics_http *m, struct mh_conn *c, metrics_body_fn fn, void *ctx)
{
	ssize_t n;

	if (c->draining) {
		conn_drain(c);
		return;
	}
	for (;;) {
		if (c->in_len == sizeof(c->in) - 1) {
			respond_text(c, 431, "Request Header Fields Too Large", 0);
			m->requests++;
			if (!c->out)
				conn_close(c);
			return;
		}
		n = read(c->fd, c->in + c->in_len, sizeof(c->in) - 1 - c->in_len);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {		/* closed or failed before a full request */
			conn_close(c);
			return;
		}
		c->in_len += n;
		c->in[c->in_len] = 0;
		if (strstr(c->in, "\r\n\r\n") || strstr(c->in, "\n\n")) {
			handle(m, c, fn, ctx);
			if (!c->out)
				conn_close(c);
			return;
		}
	}
}

/*
 * Send what the socket takes. Once all is sent, shut the write side and drain
 * (a close with unread input would reset the connection and could lose the
 * response, e.g. a 431 to a client still sending its head); close on error.
 */
static void conn_write(struct mh_conn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			conn_close(c);
			return;
		}
		c->out_off += n;
	}
	free(c->out);
	c->out = NULL;
	c->draining = 1;
	shutdown(c->fd, SHUT_WR);
	conn_drain(c);
}

void metrics_http_wait(struct metrics_http *m, uint64_t deadline_ns, metrics_body_fn fn,
		       void *ctx)
{
	struct pollfd pfd[MH_MAX_CONNS + 1];
	struct mh_conn *slot[MH_MAX_CONNS + 1];
	uint64_t now = now_ns(), wait_ns = deadline_ns > now ? deadline_ns - now : 0;
	int i, n = 1, timeout;

	pfd[0] = (struct pollfd){ .fd = m->lfd, .events = POLLIN };
	for (i = 0; i < MH_MAX_CONNS; i++) {
		struct mh_conn *c = &m->c[i];

		if (c->fd < 0)
			continue;
		if (now - c->last_ns > MH_IDLE_NS) {	/* slow or silent client */
			conn_close(c);
			continue;
		}
		wait_ns = MIN(wait_ns, c->last_ns + MH_IDLE_NS - now + 1000000);
		slot[n] = c;
		pfd[n++] = (struct pollfd){ .fd = c->fd, .events = c->out ? POLLOUT : POLLIN };
	}
	timeout = (int)((wait_ns + 999999) / 1000000);
	if (poll(pfd, n, timeout) <= 0)
		return;		/* timeout, or EINTR: the caller re-checks */
	now = now_ns();
	for (i = 1; i < n; i++) {
		if (!pfd[i].revents)
			continue;
		slot[i]->last_ns = now;
		if (slot[i]->out) {
			conn_write(slot[i]);
			continue;
		}
		conn_read(m, slot[i], fn, ctx);
		if (slot[i]->fd >= 0 && slot[i]->out)
			conn_write(slot[i]);	/* answer at once: most fit in one send */
	}
	if (pfd[0].revents)
		conn_accept(m, now);
}

uint64_t metrics_http_requests(const struct metrics_http *m)
{
	return m->requests;
}

void metrics_http_close(struct metrics_http *m)
{
	int i;

	if (!m)
		return;
	for (i = 0; i < MH_MAX_CONNS; i++)
		if (m->c[i].fd >= 0)
			conn_close(&m->c[i]);
	close(m->lfd);
	free(m);
}
