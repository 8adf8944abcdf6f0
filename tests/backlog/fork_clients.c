// SPDX-License-Identifier: GPL-2.0
/*
 * Many short-lived clients: N processes (forked in turn, at most 64 alive), each
 * makes K non-blocking connects to an AF_UNIX PATH and exits. Prints the totals.
 * SECS: start no client after SECS seconds (a slow machine makes fewer; clients=
 * says how many ran), so a storm's length follows the machine's speed.
 *
 *   fork_clients PATH N K [SECS]  -> "clients=N eagain=B other=C"
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int one_client(const char *path, int k)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int i, fd, eagain = 0;

	strncpy(a.sun_path, path, sizeof(a.sun_path) - 1);
	for (i = 0; i < k; i++) {
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
		if (fd < 0)
			return 255;
		if (connect(fd, (struct sockaddr *)&a, sizeof(a)) && errno == EAGAIN)
			eagain++;
		close(fd);
	}
	return eagain;		/* exit status: EAGAINs seen (K < 255) */
}

int main(int argc, char **argv)
{
	long n, k, started = 0, alive = 0, eagain = 0, other = 0;
	double end = 0;
	int status;

	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: %s PATH N K [SECS]\n", argv[0]);
		return 2;
	}
	n = atol(argv[2]);
	k = atol(argv[3]);
	if (argc == 5)
		end = now() + atof(argv[4]);
	while (started < n || alive) {
		if (started < n && end && now() >= end)
			n = started;	/* out of time: no more clients */
		if (started < n && alive < 64) {
			pid_t pid = fork();

			if (pid == 0)
				_exit(one_client(argv[1], k));
			if (pid < 0)
				return 1;
			started++;
			alive++;
			continue;
		}
		if (wait(&status) < 0)
			return 1;
		alive--;
		if (WIFEXITED(status) && WEXITSTATUS(status) != 255)
			eagain += WEXITSTATUS(status);
		else
			other++;
	}
	printf("clients=%ld eagain=%ld other=%ld\n", n, eagain, other);
	return 0;
}
