// SPDX-License-Identifier: GPL-2.0
/*
 * A redis client that opens one connection per INCR (issue 29's done-when): connect, send
 * the command, read the whole reply, close; N times, over a unix socket or TCP loopback.
 * Prints one JSON line: {"transport", "endpoint", "requests", "last"} (last: the counter).
 *
 * usage: incr_per_conn unix PATH N | tcp PORT N
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static const char cmd[] = "*2\r\n$4\r\nINCR\r\n$9\r\nudsprobe:\r\n";

static int dial(const char *kind, const char *where)
{
	int fd;

	if (!strcmp(kind, "unix")) {
		struct sockaddr_un a = { .sun_family = AF_UNIX };

		snprintf(a.sun_path, sizeof(a.sun_path), "%s", where);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
			return fd;
	} else {
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(atoi(where)),
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
			return fd;
	}
	perror("incr_per_conn: connect");
	exit(1);
}

int main(int argc, char **argv)
{
	long n, i, last = 0;
	char reply[64];

	if (argc != 4 || (strcmp(argv[1], "unix") && strcmp(argv[1], "tcp"))) {
		fprintf(stderr, "usage: incr_per_conn unix PATH N | tcp PORT N\n");
		return 2;
	}
	n = atol(argv[3]);
	for (i = 0; i < n; i++) {
		int fd = dial(argv[1], argv[2]);
		size_t got = 0;
		ssize_t r;

		if (write(fd, cmd, sizeof(cmd) - 1) != (ssize_t)sizeof(cmd) - 1) {
			perror("incr_per_conn: write");
			return 1;
		}
		/* ":N\r\n", in one or several reads */
		while (got < sizeof(reply) - 1 && (got < 2 || memcmp(reply + got - 2, "\r\n", 2))) {
			r = read(fd, reply + got, sizeof(reply) - 1 - got);
			if (r <= 0) {
				fprintf(stderr, "incr_per_conn: read: %s\n", r ? "error" : "EOF");
				return 1;
			}
			got += r;
		}
		reply[got] = 0;
		if (reply[0] != ':') {
			fprintf(stderr, "incr_per_conn: reply %s", reply);
			return 1;
		}
		last = atol(reply + 1);
		close(fd);
	}
	printf("{\"transport\": \"%s\", \"endpoint\": \"%s%s\", \"requests\": %ld, \"last\": %ld}\n",
	       argv[1], strcmp(argv[1], "tcp") ? "" : "127.0.0.1:", argv[2], n, last);
	return 0;
}
