// SPDX-License-Identifier: GPL-2.0
/*
 * hooks_floor: the bench's floor for `udsprobe --trace` and `--compare` in tracepoint mode.
 * Attaches an empty program (bpf/hooks_floor.bpf.c) on every hook udsprobe attaches, so a
 * benchmark run under it pays what the attachments alone cost (every syscall on the host
 * through the syscall-tracing slow path, the tracepoint dispatch) and none of udsprobe's
 * program bodies.
 *
 *   hooks_floor [--filtered]          --trace's hooks
 *   hooks_floor --compare unix|tcp    --compare's hooks for one transport's traced run
 *
 * The hook set is not a copy: it is derived from udsprobe's own choice. flows.bpf.c is opened
 * (never loaded) and trace_bpf_select() marks the programs tracepoint mode would load for an
 * unfiltered --trace, or with --filtered for one with a process filter (--pid/--comm/--cgroup/
 * -- COMMAND: sched_process_fork and _exit too); their section names are the hooks. With
 * --compare, stages.bpf.c is opened instead and tracer_path_programs() gives the programs
 * --compare's tracer attaches for that transport's traced run.
 *
 * Prints "ready: N hooks: SECTION..." on stdout once everything is attached, then holds the
 * programs until stdin reaches EOF or SIGINT/SIGTERM arrives, detaches and exits 0. Any failure
 * (a hook it has no empty program for included) exits 1 with the reason on stderr; a bad
 * argument exits 2.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "capability.h"
#include "flows.h"	/* before the skeleton: its .bss has struct fl_bulk_slot */
#include "flows.skel.h"
#include "hooks_floor.skel.h"
#include "stages.h"	/* before the skeleton, as flows.h */
#include "stages.skel.h"
#include "tracer.h"
#include "trace_bpf.h"

#define MAX_HOOKS 32
#define TP_PREFIX "tracepoint/"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

/* The floor program for flows' section sec: the tp_btf one of the same section, or the shared
 * tracepoint program (then *tp_name points at "group/event"); NULL when there is none. */
static struct bpf_program *floor_prog(struct hooks_floor_bpf *floor, const char *sec,
				      const char **tp_name)
{
	struct bpf_program *p;

	*tp_name = NULL;
	if (!strncmp(sec, TP_PREFIX, strlen(TP_PREFIX)) && strchr(sec + strlen(TP_PREFIX), '/')) {
		*tp_name = sec + strlen(TP_PREFIX);
		return floor->progs.floor_tracepoint;
	}
	bpf_object__for_each_program(p, floor->obj)
		if (!strcmp(bpf_program__section_name(p), sec))
			return p;
	return NULL;
}

/* Wait for stdin's EOF or a signal. */
static void hold(void)
{
	char buf[256];
	ssize_t n;

	while (!stop) {
		n = read(STDIN_FILENO, buf, sizeof(buf));
		if (n == 0 || (n < 0 && errno != EINTR))
			return;
	}
}

/* The sections of --trace's hooks (filtered or not), as trace_bpf_select() picks them. */
static int trace_hooks(bool filtered, const char **hooks, struct flows_bpf **flows)
{
	struct trace_opts o = { .attach = ATTACH_TRACEPOINT };
	static const int any_pid = 1;
	struct bpf_program *p;
	char why[512];
	int n = 0;

	if (filtered) {	/* the hooks depend on whether a filter is set, not on its value */
		o.pids = &any_pid;
		o.n_pids = 1;
	}
	*flows = flows_bpf__open();
	if (!*flows) {
		fprintf(stderr, "hooks_floor: cannot open flows.bpf.o: %s\n", strerror(errno));
		return -1;
	}
	if (trace_bpf_select(*flows, &o, ATTACH_TRACEPOINT, false, why, sizeof(why))) {
		fprintf(stderr, "hooks_floor: udsprobe's tracepoint mode does not work here: %s\n",
			why);
		return -1;
	}
	bpf_object__for_each_program(p, (*flows)->obj) {
		if (!bpf_program__autoload(p))
			continue;
		if (n == MAX_HOOKS) {
			fprintf(stderr, "hooks_floor: udsprobe attaches more than %d hooks\n", MAX_HOOKS);
			return -1;
		}
		hooks[n++] = bpf_program__section_name(p);
	}
	return n;
}

/* The sections of --compare's hooks for transport t's traced run, as its tracer picks them. */
static int compare_hooks(enum transport t, const char **hooks, struct stages_bpf **stages)
{
	struct bpf_program *progs[MAX_HOOKS];
	int n, i;

	*stages = stages_bpf__open();
	if (!*stages) {
		fprintf(stderr, "hooks_floor: cannot open stages.bpf.o: %s\n", strerror(errno));
		return -1;
	}
	n = tracer_path_programs(*stages, ATTACH_TRACEPOINT, t, progs, MAX_HOOKS);
	if (n < 0) {
		fprintf(stderr, "hooks_floor: --compare attaches more than %d hooks\n", MAX_HOOKS);
		return -1;
	}
	for (i = 0; i < n; i++)
		hooks[i] = bpf_program__section_name(progs[i]);
	return n;
}

int main(int argc, char **argv)
{
	const char *hooks[MAX_HOOKS], *tp_names[MAX_HOOKS];
	struct bpf_link *links[MAX_HOOKS] = {};
	struct sigaction sa = { .sa_handler = on_signal };	/* no SA_RESTART: read() returns */
	struct hooks_floor_bpf *floor = NULL;
	struct stages_bpf *stages = NULL;
	struct flows_bpf *flows = NULL;
	struct bpf_program *progs[MAX_HOOKS];
	int n = 0, i, err = 1;
	enum transport t = TR__COUNT;

	if (argc == 3 && !strcmp(argv[1], "--compare"))
		for (i = 0; i < TR__COUNT; i++)
			if (!strcmp(argv[2], transport_names[i]))
				t = i;
	if (argc > 3 || (argc == 3 && t == TR__COUNT) ||
	    (argc == 2 && strcmp(argv[1], "--filtered"))) {
		fprintf(stderr, "usage: hooks_floor [--filtered | --compare unix|tcp]\n");
		return 2;
	}
	libbpf_setup(0);	/* udsprobe's own libbpf filter: failures are reported here */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	floor = hooks_floor_bpf__open();
	if (!floor) {
		fprintf(stderr, "hooks_floor: cannot open the BPF objects: %s\n", strerror(errno));
		goto out;
	}
	n = t == TR__COUNT ? trace_hooks(argc == 2, hooks, &flows) : compare_hooks(t, hooks, &stages);
	if (n < 0)
		goto fail;
	for (i = 0; i < n; i++) {
		progs[i] = floor_prog(floor, hooks[i], &tp_names[i]);
		if (!progs[i]) {
			fprintf(stderr, "hooks_floor: udsprobe attaches %s, which bpf/hooks_floor.bpf.c "
				"has no empty program for\n", hooks[i]);
			goto fail;
		}
		bpf_program__set_autoload(progs[i], true);
	}
	err = hooks_floor_bpf__load(floor);
	if (err) {
		fprintf(stderr, "hooks_floor: cannot load the empty programs: %s\n", strerror(-err));
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (tp_names[i]) {
			char group[64];

			snprintf(group, sizeof(group), "%.*s", (int)strcspn(tp_names[i], "/"),
				 tp_names[i]);
			links[i] = bpf_program__attach_tracepoint(progs[i], group,
								  strchr(tp_names[i], '/') + 1);
		} else {
			links[i] = bpf_program__attach(progs[i]);
		}
		if (!links[i]) {
			err = -errno;
			fprintf(stderr, "hooks_floor: cannot attach an empty program to %s: %s\n",
				hooks[i], strerror(-err));
			goto out;
		}
	}
	printf("ready: %d hooks:", n);
	for (i = 0; i < n; i++)
		printf(" %s", hooks[i]);
	printf("\n");
	fflush(stdout);
	hold();
	err = 0;
	goto out;
fail:
	err = 1;
out:
	for (i = 0; i < n; i++)
		bpf_link__destroy(links[i]);
	hooks_floor_bpf__destroy(floor);
	flows_bpf__destroy(flows);
	stages_bpf__destroy(stages);
	return err ? 1 : 0;
}
