/* Private to the workload driver's parts (workload.c, workload_loops.c): never include elsewhere. */
#ifndef UDSPROBE_WORKLOAD_INT_H
#define UDSPROBE_WORKLOAD_INT_H

#include <signal.h>
#include <stdint.h>
#include <sys/socket.h>

#include "workload.h"

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

void child_fail(struct shared *sh, int *err_slot, const char *what);
int make_listener(const struct wl_config *cfg, struct endpoint *ep);
void server_run(const struct wl_config *cfg, struct shared *sh, int lfd, char *buf);
void client_pingpong(const struct wl_config *cfg, const struct wl_hooks *hooks, struct shared *sh,
		     const struct endpoint *ep, char *buf, uint64_t cap);
void client_stream(const struct wl_config *cfg, const struct wl_hooks *hooks, struct shared *sh,
		   const struct endpoint *ep, char *buf);
void client_connect(const struct wl_config *cfg, const struct wl_hooks *hooks, struct shared *sh,
		    const struct endpoint *ep, char *buf, uint64_t cap);
int connect_to(const struct wl_config *cfg, const struct endpoint *ep, struct shared *sh);
int accept_client(const struct wl_config *cfg, struct shared *sh, int lfd);

#endif
