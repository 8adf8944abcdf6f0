// SPDX-License-Identifier: GPL-2.0
/*
 * Many short-lived clients: N processes (forked in turn, at most 64 alive), each
 * makes K non-blocking connects to an AF_UNIX PATH and exits. Prints the totals.
 * SECS: start no client after SECS seconds (a slow machine makes fewer; clients=
 * says how many ran), so a storm's length follows the machine's speed. MIN: spread
 * the starts over at least MIN seconds (a fast machine ran 32,000 connects in 0.8 s,
 * between two scrapes of a 1 s Prometheus interval).
 *
 *   fork_clients PATH N K [SECS [MIN]]  -> "clients=N eagain=B other=C"
 */
#include <stdbool.h>
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
	double t0 = now(), end = 0, min_s = 0;
	int status;

	if (argc < 4 || argc > 6) {
		fprintf(stderr, "usage: %s PATH N K [SECS [MIN]]\n", argv[0]);
		return 2;
	}
	n = atol(argv[2]);
	k = atol(argv[3]);
	if (argc >= 5)
		end = t0 + atof(argv[4]);
	if (argc == 6)
		min_s = atof(argv[5]);
	while (started < n || alive) {
		bool due;

		if (started < n && end && now() >= end)
			n = started;	/* out of time: no more clients */
		due = !min_s || started < n * (now() - t0) / min_s;
		if (started < n && !due && !alive) {
			usleep(1000);
			continue;
		}
		if (started < n && alive < 64 && due) {
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
