// SPDX-License-Identifier: GPL-2.0
/*
 * AF_UNIX connects with exact bytes and addrlen: sun_path is HEX (bytes as hex
 * pairs), the address length passed to connect() is ADDRLEN (bytes of sun_path
 * beyond ADDRLEN - 2 are still in the buffer, as junk). N non-blocking tries.
 *
 *   raw_connect HEX ADDRLEN N      -> "eagain=A other=B"
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int i, n, fd, eagain = 0, other = 0;
	size_t len;
	unsigned v;

	if (argc != 4 || strlen(argv[1]) % 2 || strlen(argv[1]) / 2 > sizeof(a.sun_path)) {
		fprintf(stderr, "usage: %s HEX ADDRLEN N\n", argv[0]);
		return 2;
	}
	len = strlen(argv[1]) / 2;
	for (i = 0; i < (int)len; i++) {
		sscanf(argv[1] + 2 * i, "%2x", &v);
		a.sun_path[i] = v;
	}
	n = atoi(argv[3]);
	for (i = 0; i < n; i++) {
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
		if (fd < 0)
			return 1;
		if (connect(fd, (struct sockaddr *)&a, atoi(argv[2])) && errno == EAGAIN)
			eagain++;
		else
			other++;
		close(fd);
	}
	printf("eagain=%d other=%d\n", eagain, other);
	return 0;
}
