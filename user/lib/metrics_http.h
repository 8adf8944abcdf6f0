/*
 * A small single-threaded HTTP server for a Prometheus scrape endpoint (layer 0).
 * Non-blocking: the caller's loop waits in metrics_http_wait() instead of sleeping,
 * and each request is answered from a body written by the caller on demand.
 */
#ifndef UDSPROBE_METRICS_HTTP_H
#define UDSPROBE_METRICS_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>

#define MH_MAX_REQUEST	8192	/* request line and headers; more is refused with 431 */
#define MH_MAX_CONNS	64	/* open connections; more wait in the kernel's accept queue */
#define MH_IDLE_NS	5000000000ull	/* a connection that sends nothing for 5 s is closed */
#define MH_SILENT_NS	1000000000ull	/* one that sent nothing for 1 s makes room when full */

struct metrics_http;

/* Writes the body of GET /metrics into f. */
typedef void (*metrics_body_fn)(void *ctx, FILE *f);

/*
 * Parse "ADDR:PORT" ("127.0.0.1:9464", "[::1]:9464", ":9464" = every address):
 * 0, or -EINVAL. Numeric addresses only (no name lookup).
 */
int metrics_http_parse(const char *spec, struct sockaddr_storage *sa, unsigned int *len);

/* Listen on spec: 0 and *out, or -errno (the reason in msg). */
int metrics_http_open(const char *spec, struct metrics_http **out, char *msg, size_t len);

/*
 * Serve until deadline_ns (CLOCK_MONOTONIC) or one round of events, whichever is
 * first; returns early on a signal. Never blocks on a client.
 */
void metrics_http_wait(struct metrics_http *m, uint64_t deadline_ns, metrics_body_fn fn,
		       void *ctx);

/* Requests answered so far (any status). */
uint64_t metrics_http_requests(const struct metrics_http *m);

void metrics_http_close(struct metrics_http *m);

/* A textfile for node_exporter's collector (--prom PATH): fn's body written to a mkstemp
 * file beside PATH, renamed over it: 0 or -errno; -EEXIST: PATH exists and is not a regular
 * file. */
int metrics_file_write(const char *path, metrics_body_fn fn, void *ctx);
/* PATH is a regular file or absent: 0, else -errno with the reason in msg. */
int metrics_file_target_ok(const char *path, char *msg, size_t len);

/* A label value in Prometheus' text format: \\, \" and \n escaped. */
void metrics_label_value(FILE *f, const char *s);

#endif
