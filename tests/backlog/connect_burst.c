// SPDX-License-Identifier: GPL-2.0
/*
 * N non-blocking connects to an AF_UNIX path or a TCP loopback port, all kept
 * open; prints "ok=A eagain=B inprogress=C other=D" and then waits for stdin
 * to close (so the caller can look at the queue), unless --exit is given.
 *
 *   connect_burst unix PATH N [--exit]
 *   connect_burst tcp PORT N [--exit]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int i, n, ok = 0, eagain = 0, inprog = 0, other = 0;
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	struct sockaddr_in in = { .sin_family = AF_INET };
	struct sockaddr *sa;
	socklen_t len;
	int is_unix;
	char c;

	if (argc < 4) {
		fprintf(stderr, "usage: %s unix PATH N | tcp PORT N [--exit]\n", argv[0]);
		return 2;
	}
	is_unix = !strcmp(argv[1], "unix");
	if (is_unix) {
		strncpy(un.sun_path, argv[2], sizeof(un.sun_path) - 1);
		sa = (struct sockaddr *)&un;
		len = sizeof(un);
	} else {
		in.sin_port = htons(atoi(argv[2]));
		in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		sa = (struct sockaddr *)&in;
		len = sizeof(in);
	}
	n = atoi(argv[3]);
	for (i = 0; i < n; i++) {
		int fd = socket(is_unix ? AF_UNIX : AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);

		if (fd < 0) {
			perror("socket");
			return 1;
		}
		if (!connect(fd, sa, len))
			ok++;
		else if (errno == EAGAIN)
			eagain++;
		else if (errno == EINPROGRESS)
			inprog++;
		else
			other++;
	}
	printf("ok=%d eagain=%d inprogress=%d other=%d\n", ok, eagain, inprog, other);
	fflush(stdout);
	if (argc > 4 && !strcmp(argv[4], "--exit"))
		return 0;
	while (read(0, &c, 1) > 0)
		;
	return 0;
}
