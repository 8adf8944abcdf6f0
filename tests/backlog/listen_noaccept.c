// SPDX-License-Identifier: GPL-2.0
/*
 * A listener that never accepts: listen(fd, BACKLOG) on an AF_UNIX path or a
 * TCP loopback port, print "ready" and sleep until killed.
 *
 *   listen_noaccept unix PATH BACKLOG
 *   listen_noaccept tcp PORT BACKLOG        (127.0.0.1)
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int fd, backlog, one = 1;

	if (argc != 4) {
		fprintf(stderr, "usage: %s unix PATH BACKLOG | tcp PORT BACKLOG\n", argv[0]);
		return 2;
	}
	backlog = atoi(argv[3]);
	if (!strcmp(argv[1], "unix")) {
		struct sockaddr_un a = { .sun_family = AF_UNIX };

		strncpy(a.sun_path, argv[2], sizeof(a.sun_path) - 1);
		unlink(argv[2]);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a))) {
			perror("bind");
			return 1;
		}
	} else {
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(atoi(argv[2])) };

		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		fd = socket(AF_INET, SOCK_STREAM, 0);
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a))) {
			perror("bind");
			return 1;
		}
	}
	if (listen(fd, backlog)) {
		perror("listen");
		return 1;
	}
	printf("ready %d\n", getpid());
	fflush(stdout);
	for (;;)
		pause();
}
