/*
 * A server command for --compare of programs: run through /bin/sh in its own process group
 * with its output in a file, waited for until it accepts connections, stopped with its whole
 * group (SIGTERM, then SIGKILL).
 */
#ifndef UDSPROBE_PROGRAM_SERVER_H
#define UDSPROBE_PROGRAM_SERVER_H

#include <stdbool.h>
#include <sys/types.h>

#include "tmpdir.h"

struct program_server {
	pid_t pid;		/* also its process group; 0 when not running */
	int exit_status;	/* exit code or 128 + signal once reaped; -1 before */
	const char *cmd;	/* as run (for messages) */
	char out_path[4096];	/* its stdout and stderr */
	struct tmpdir *guard;	/* its group dies with udsprobe through this janitor */
};

/* Start cmd with output to out_path, its process group guarded by guard's janitor (NULL:
 * none). 0 or -errno (message printed). */
int server_start(struct program_server *s, const char *cmd, const char *out_path,
		 struct tmpdir *guard);
/*
 * Wait until a connect() to unix_path (NULL: none) and to 127.0.0.1:port for each of ports (at
 * most 4) succeeds, at most timeout_s. 0; -ETIMEDOUT, -ECHILD (it exited) or -EINTR (Ctrl-C),
 * said on stderr with the command and the end of what it printed.
 */
int server_wait_ready(struct program_server *s, const char *unix_path, const unsigned *ports,
		      int n_ports, double timeout_s);
/* Still running? (reaps it, setting exit_status, when it has exited) */
bool server_alive(struct program_server *s);
/* Its process group and all its descendants now (the server's processes), at most max. */
int server_group_pids(const struct program_server *s, int *pids, int max);
/* SIGTERM to the group and every descendant, SIGKILL after 3 s to whatever is left; reaped. */
void server_stop(struct program_server *s);
/* The last len - 1 bytes of a file, NUL-terminated, into buf (empty when unreadable); how many.
 * The bytes may hold NULs of their own: use the count, not strlen. */
size_t file_tail(const char *path, char *buf, size_t len);

#endif
