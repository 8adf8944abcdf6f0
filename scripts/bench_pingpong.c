// SPDX-License-Identifier: GPL-2.0
/*
 * bench_pingpong: the smallest honest ping-pong, written apart from user/compare/workload.c, to check
 * that udsprobe's workload driver measures what a hand-written benchmark measures.
 *
 *   bench_pingpong -t unix|tcp [-s BYTES] [-n ROUND_TRIPS] [-w WARMUP] [-c same|split|none]
 *
 * A forked child echoes; this process sends, waits for the echo, and reads the clock once per
 * round trip into a preallocated array. Prints one line:
 *   transport=unix size=64 cpu=same client_cpu=0 server_cpu=0 n=20000 p50_ns=1460 mean_ns=1660
 * where p50/mean are one-way latencies (RTT/2). AF_UNIX SOCK_STREAM via a socket file in a
 * private directory; TCP on 127.0.0.1 with TCP_NODELAY.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static uint64_t clock_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity");
}

/* the n-th CPU this process may use */
static int nth_cpu(int n)
{
	cpu_set_t set;
	int c;

	if (sched_getaffinity(0, sizeof(set), &set))
		die("sched_getaffinity");
	for (c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &set) && n-- == 0)
			return c;
	fprintf(stderr, "bench_pingpong: not enough CPUs for this placement\n");
	exit(1);
}

static int xfer(int fd, char *buf, size_t len, int sending)
{
	size_t off = 0;

	while (off < len) {
		ssize_t r = sending ? send(fd, buf + off, len - off, 0)
				    : recv(fd, buf + off, len - off, MSG_WAITALL);
		if (r <= 0)
			return -1;
		off += r;
	}
	return 0;
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	const char *transport = NULL, *place = "same";
	unsigned long size = 64, n = 20000, warmup = 1000, i;
	struct sockaddr_storage ss = { 0 };
	socklen_t sslen;
	char dir[] = "/tmp/bench_pingpong.XXXXXX";
	int lfd, fd, opt, one = 1, ccpu = -1, scpu = -1, unix_sock, status;
	uint64_t *rtt, t, prev, sum = 0;
	char *buf;
	pid_t pid;

	while ((opt = getopt(argc, argv, "t:s:n:w:c:")) != -1) {
		switch (opt) {
		case 't': transport = optarg; break;
		case 's': size = strtoul(optarg, NULL, 10); break;
		case 'n': n = strtoul(optarg, NULL, 10); break;
		case 'w': warmup = strtoul(optarg, NULL, 10); break;
		case 'c': place = optarg; break;
		default: goto usage;
		}
	}
	if (!transport || (strcmp(transport, "unix") && strcmp(transport, "tcp")) || !size || !n)
		goto usage;
	unix_sock = !strcmp(transport, "unix");
	if (!strcmp(place, "same")) {
		ccpu = scpu = nth_cpu(0);
	} else if (!strcmp(place, "split")) {
		ccpu = nth_cpu(0);
		scpu = nth_cpu(1);
	} else if (strcmp(place, "none")) {
		goto usage;
	}

	buf = malloc(size);
	rtt = malloc(n * sizeof(*rtt));
	if (!buf || !rtt)
		die("malloc");
	memset(buf, 'x', size);

	lfd = socket(unix_sock ? AF_UNIX : AF_INET, SOCK_STREAM, 0);
	if (lfd < 0)
		die("socket");
	if (unix_sock) {
		struct sockaddr_un *un = (struct sockaddr_un *)&ss;

		if (!mkdtemp(dir))
			die("mkdtemp");
		un->sun_family = AF_UNIX;
		snprintf(un->sun_path, sizeof(un->sun_path), "%s/s", dir);
		sslen = sizeof(*un);
	} else {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;

		in->sin_family = AF_INET;
		in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		sslen = sizeof(*in);
	}
	if (bind(lfd, (struct sockaddr *)&ss, sslen) || listen(lfd, 1) ||
	    getsockname(lfd, (struct sockaddr *)&ss, &sslen))
		die("bind/listen");

	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {	/* echo server */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pin(scpu);
		fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			die("accept");
		if (!unix_sock)
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		while (xfer(fd, buf, size, 0) == 0)
			if (xfer(fd, buf, size, 1))
				break;
		_exit(0);
	}
	close(lfd);
	pin(ccpu);
	fd = socket(unix_sock ? AF_UNIX : AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&ss, sslen))
		die("connect");
	if (!unix_sock)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));

	for (i = 0; i < warmup; i++)
		if (xfer(fd, buf, size, 1) || xfer(fd, buf, size, 0))
			die("warm-up");
	prev = clock_ns();
	for (i = 0; i < n; i++) {
		if (xfer(fd, buf, size, 1) || xfer(fd, buf, size, 0))
			die("ping-pong");
		t = clock_ns();
		rtt[i] = t - prev;
		prev = t;
	}
	close(fd);
	waitpid(pid, &status, 0);
	if (unix_sock) {
		unlink(((struct sockaddr_un *)&ss)->sun_path);
		rmdir(dir);
	}

	for (i = 0; i < n; i++)
		sum += rtt[i];
	qsort(rtt, n, sizeof(*rtt), cmp);
	printf("transport=%s size=%lu cpu=%s client_cpu=%d server_cpu=%d n=%lu p50_ns=%llu mean_ns=%llu\n",
	       transport, size, place, ccpu, scpu, n,
	       (unsigned long long)(rtt[(n + 1) / 2 - 1] / 2), (unsigned long long)(sum / n / 2));
	return 0;
usage:
	fprintf(stderr, "usage: %s -t unix|tcp [-s BYTES] [-n ROUND_TRIPS] [-w WARMUP] "
		"[-c same|split|none]\n", argv[0]);
	return 2;
}
