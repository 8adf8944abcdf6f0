// SPDX-License-Identifier: GPL-2.0
/*
 * The scrape endpoint: GET /metrics answers with the Prometheus text exposition
 * format (the query string ignored), other paths 404, other methods 405, a request line
 * that is not printable ASCII 400 at once. One request per connection (Connection:
 * close), requests bounded to MH_MAX_REQUEST bytes, at most MH_MAX_CONNS connections:
 * more wait in the kernel's accept queue, except that one silent for MH_SILENT_NS makes
 * room (a connection that sent a byte is never dropped for a newer one); idle ones closed
 * after MH_IDLE_NS; every socket is non-blocking, so a slow or hostile client never holds
 * up the caller's loop. docs/BACKLOG.md, "--metrics".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
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
	    bind(m->lfd, (struct sockaddr *)&sa, salen) || listen(m->lfd, SOMAXCONN)) {
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

/* Sent nothing for MH_SILENT_NS and nothing waits unread: closing it sends a FIN, not a
 * reset, and loses no request. */
static bool conn_silent(const struct mh_conn *c, uint64_t now)
{
	int unread = 0;

	return c->fd >= 0 && !c->in_len && !c->out && !c->draining &&
	       now - c->last_ns >= MH_SILENT_NS && !ioctl(c->fd, FIONREAD, &unread) && !unread;
}

/* A free slot, or one a silent connection gives up; -1 when every slot has a request. */
static int conn_slot(struct metrics_http *m, uint64_t now)
{
	int i, silent = -1;

	for (i = 0; i < MH_MAX_CONNS; i++) {
		if (m->c[i].fd < 0)
			return i;
		if (conn_silent(&m->c[i], now) && (silent < 0 || m->c[i].last_ns < m->c[silent].last_ns))
			silent = i;
	}
	return silent;
}

/* Accept while there is room; the rest stay queued in the kernel (SOMAXCONN) until a
 * response is sent, never dropped or reset. */
static void conn_accept(struct metrics_http *m, uint64_t now)
{
	int fd, i;

	while ((i = conn_slot(m, now)) >= 0 &&
	       (fd = accept4(m->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		if (m->c[i].fd >= 0)
			conn_close(&m->c[i]);
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

/* The request line is printable ASCII ending in CRLF or LF; a method of capitals first.
 * False as soon as the bytes so far cannot be one (binary, a NUL): 400 at once. */
static bool line_ok(const char *in, size_t len)
{
	size_t i;

	for (i = 0; i < len && in[i] != '\n'; i++) {
		unsigned char b = in[i];

		if (b == '\r' ? i + 1 < len && in[i + 1] != '\n' : b < 0x20 || b > 0x7e)
			return false;
		if (!memchr(in, ' ', i) && b != ' ' && (b < 'A' || b > 'Z' || i >= 16))
			return false;
	}
	return true;
}

/* A complete request head in c->in: route it. */
static void handle(struct metrics_http *m, struct mh_conn *c, metrics_body_fn fn, void *ctx)
{
	char *method = c->in, *target, *version, *end;
	int head_only;

	m->requests++;
	/* "METHOD TARGET HTTP/1.x", the target of any length the head's bound allows */
	end = c->in + strcspn(c->in, "\r\n");
	*end = 0;
	target = strchr(method, ' ');
	version = target ? strchr(target + 1, ' ') : NULL;
	if (!version || target == method || strncmp(version + 1, "HTTP/1.", 7) ||
	    strchr(version + 1, ' ')) {
		respond_text(c, 400, "Bad Request", 0);
		return;
	}
	*target++ = 0;
	*version = 0;
	head_only = !strcmp(method, "HEAD");
	if (strcmp(method, "GET") && !head_only) {
		respond_text(c, 405, "Method Not Allowed", 0);
		return;
	}
	target[strcspn(target, "?")] = 0;	/* the query string is ignored, as exporters do */
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
		if (memchr(c->in, 0, c->in_len) || !line_ok(c->in, c->in_len)) {
			m->requests++;
			respond_text(c, 400, "Bad Request", 0);	/* not HTTP: no need to wait */
			if (!c->out)
				conn_close(c);
			return;
		}
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
	bool room;

	for (i = 0; i < MH_MAX_CONNS; i++) {
		struct mh_conn *c = &m->c[i];

		if (c->fd < 0)
			continue;
		if (now - c->last_ns > MH_IDLE_NS) {	/* slow or silent client */
			conn_close(c);
			continue;
		}
		wait_ns = MIN(wait_ns, c->last_ns + MH_IDLE_NS - now + 1000000);
		if (!c->in_len && !c->out && !c->draining && now - c->last_ns < MH_SILENT_NS)
			wait_ns = MIN(wait_ns, c->last_ns + MH_SILENT_NS - now + 1000000);
		slot[n] = c;
		pfd[n++] = (struct pollfd){ .fd = c->fd, .events = c->out ? POLLOUT : POLLIN };
	}
	/* full: new connections wait in the accept queue (polling it would spin) */
	room = conn_slot(m, now) >= 0;
	pfd[0] = (struct pollfd){ .fd = room ? m->lfd : -1, .events = POLLIN };
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

void metrics_label_value(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

/*
 * --prom PATH must be a regular file or not exist yet: rename() would replace a
 * device node (/dev/full) or a symlink planted there. 0, or -EEXIST with msg set.
 */
int metrics_file_target_ok(const char *path, char *msg, size_t len)
{
	struct stat sb;

	if (lstat(path, &sb)) {
		if (errno == ENOENT)
			return 0;
		snprintf(msg, len, "%s", strerror(errno));
		return -errno;
	}
	if (S_ISREG(sb.st_mode))
		return 0;
	snprintf(msg, len, "it exists and is not a regular file (%s); give the path of a regular "
		 "file, e.g. in node_exporter's textfile directory",
		 S_ISLNK(sb.st_mode) ? "a symbolic link" : S_ISDIR(sb.st_mode) ? "a directory" :
		 S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode) ? "a device" : "a special file");
	return -EEXIST;
}

/*
 * A new temp file beside PATH: mkstemp's O_CREAT|O_EXCL never opens an existing
 * name, so a symlink planted in a shared directory is not followed, and the
 * name is not predictable. Mode 0644 so the textfile collector can read it.
 */
static FILE *file_tmp_beside(const char *path, char *tmp, size_t len)
{
	const char *slash = strrchr(path, '/');
	int fd, n;
	FILE *f;

	if (slash)
		n = snprintf(tmp, len, "%.*s/.%s.tmp.XXXXXX", (int)(slash - path), path, slash + 1);
	else
		n = snprintf(tmp, len, ".%s.tmp.XXXXXX", path);
	if (n < 0 || (size_t)n >= len) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	fd = mkstemp(tmp);
	if (fd < 0)
		return NULL;
	if (fchmod(fd, 0644) || !(f = fdopen(fd, "w"))) {
		n = errno;
		close(fd);
		unlink(tmp);
		errno = n;
		return NULL;
	}
	return f;
}

int metrics_file_write(const char *path, metrics_body_fn fn, void *ctx)
{
	char tmp[4200], msg[256];
	FILE *f;

	if (metrics_file_target_ok(path, msg, sizeof(msg)))
		return -EEXIST;		/* replaced since start: checked and said there */
	f = file_tmp_beside(path, tmp, sizeof(tmp));
	if (!f)
		return -errno;
	fn(ctx, f);
	if (ferror(f) | fclose(f)) {
		unlink(tmp);
		return -EIO;
	}
	if (rename(tmp, path)) {
		int err = -errno;

		unlink(tmp);
		return err;
	}
	return 0;
}
