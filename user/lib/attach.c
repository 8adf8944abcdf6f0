// SPDX-License-Identifier: GPL-2.0
/*
 * Attach modes, best first: fentry/fexit (BPF trampolines, cheapest), kprobe/
 * kretprobe, tracepoint (tp_btf). Whether a mode works is decided by the tool
 * that needs it (an attach_probe_fn), since "supported" can still mean EPERM at
 * attach time (ftrace blocked) or ENOENT (CONFIG_KPROBES unset) for its targets.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "attach.h"
#include "capability.h"
#include "util.h"

const char *const attach_mode_names[ATTACH__COUNT] = { "auto", "fentry", "kprobe", "tracepoint" };

int attach_mode_parse(const char *s)
{
	int i;

	for (i = 0; i < ATTACH__COUNT; i++)
		if (!strcmp(s, attach_mode_names[i]))
			return i;
	return -1;
}

int attach_caps_probe(enum attach_mode mode, void *ctx, char *why, size_t len)
{
	const struct attach_caps *caps = ctx;

	snprintf(why, len, "%s", caps->why[mode]);
	return caps->works[mode] ? 0 : -EOPNOTSUPP;
}

int attach_choose(enum attach_mode req, attach_probe_fn probe, void *ctx, enum attach_mode *out,
		  char *why, size_t len)
{
	static const enum attach_mode order[] = { ATTACH_FENTRY, ATTACH_KPROBE, ATTACH_TRACEPOINT };
	char reason[512];
	size_t i, n = 0;
	bool nomem = false;
	int err;

	if (req != ATTACH_AUTO) {
		if ((err = probe(req, ctx, reason, sizeof(reason)))) {
			snprintf(why, len, "--attach %s: %s", attach_mode_names[req], reason);
			return err == -ENOMEM ? err : -EOPNOTSUPP;
		}
		*out = req;
		snprintf(why, len, "forced with --attach %s", attach_mode_names[req]);
		return 0;
	}
	why[0] = 0;
	for (i = 0; i < ARRAY_SIZE(order); i++) {
		enum attach_mode m = order[i];

		if ((err = probe(m, ctx, reason, sizeof(reason))) == -ENOMEM)
			nomem = true;
		if (!err) {
			*out = m;
			n += snprintf(why + n, n < len ? len - n : 0, "%s%s works",
				      n ? "; " : "", attach_mode_names[m]);
			return 0;
		}
		n += snprintf(why + n, n < len ? len - n : 0, "%s%s rejected: %s", n ? "; " : "",
			      attach_mode_names[m], reason);
	}
	return nomem ? -ENOMEM : -EOPNOTSUPP;
}

const char *attach_failure(int err)
{
	/* at a 24 MB memory.max every mode failed with ENOMEM, and the kernel was blamed */
	return err == -ENOMEM ? "not enough memory to load the BPF programs (a memory limit: "
	       "memory.max of udsprobe's cgroup, or a host short of memory; not the kernel's "
	       "features)" : "no attach mode works on this kernel";
}

bool attach_func_here(enum attach_mode mode, const char *func, char *sym, size_t len)
{
	if (mode != ATTACH_FENTRY)
		return ksym_resolve(func, sym, len);
	snprintf(sym, len, "%s", func);
	return btf_has_func(func);
}

int attach_funcs_present(enum attach_mode mode, const char *const *fns, int n, char *why,
			 size_t len)
{
	char sym[256];
	int i;

	if (mode == ATTACH_KPROBE && !kprobe_supported()) {
		snprintf(why, len, "kernel has no kprobe PMU (CONFIG_KPROBES unset?)");
		return -EOPNOTSUPP;
	}
	if (mode != ATTACH_FENTRY && mode != ATTACH_KPROBE)
		return 0;
	for (i = 0; i < n; i++) {
		if (attach_func_here(mode, fns[i], sym, sizeof(sym)))
			continue;
		if (mode == ATTACH_FENTRY)
			snprintf(why, len, "no BTF for %s", fns[i]);
		else
			snprintf(why, len, "%s is not in /proc/kallsyms (inlined?)", fns[i]);
		return -EOPNOTSUPP;
	}
	return 0;
}

unsigned long long attach_runs_skipped(const struct bpf_object *obj)
{
	struct bpf_program *prog;
	unsigned long long sum = 0;

	bpf_object__for_each_program(prog, obj) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog);

		memset(&info, 0, sizeof(info));
		if (fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len))
			sum += info.recursion_misses;
	}
	return sum;
}

struct link_batch {
	struct bpf_link **const *links;
	int n, first, step;
};

static void *destroy_batch(void *arg)
{
	const struct link_batch *b = arg;
	int i;

	for (i = b->first; i < b->n; i += b->step) {
		bpf_link__destroy(*b->links[i]);
		*b->links[i] = NULL;
	}
	return NULL;
}

/* Does destroying link wait for a grace period of its own: a kprobe's or a perf-event
 * tracepoint's (a perf event fd, not a BPF link, before 5.15: no link info), kprobe.multi's
 * (an fprobe's unregister). An fentry link's trampoline updates are serialized, and raw
 * tracepoint and iterator links detach at once: threads gain those nothing (the tracer
 * measured it for fentry). */
static bool detach_waits(const struct bpf_link *link)
{
	struct bpf_link_info info;
	__u32 len = sizeof(info);

	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(bpf_link__fd(link), &info, &len))
		return true;
	return info.type == BPF_LINK_TYPE_PERF_EVENT || info.type == BPF_LINK_TYPE_KPROBE_MULTI;
}

static void destroy_from_threads(struct bpf_link **const links[], int n)
{
	struct link_batch batch[LINKS_DESTROY_THREADS];
	pthread_t th[LINKS_DESTROY_THREADS];
	int i, started, threads = n < LINKS_DESTROY_THREADS ? n : LINKS_DESTROY_THREADS;

	for (i = 0; i < threads; i++)
		batch[i] = (struct link_batch){ .links = links, .n = n, .first = i, .step = threads };
	for (started = 0; threads > 1 && started < threads; started++)
		if (pthread_create(&th[started], NULL, destroy_batch, &batch[started]))
			break;
	for (i = started; i < threads; i++)	/* the batches no thread took */
		destroy_batch(&batch[i]);
	while (started--)
		pthread_join(th[started], NULL);
}

void links_destroy(struct bpf_link **const links[], int n)
{
	struct bpf_link **waiting[256];
	int i, m = 0;

	for (i = 0; i < n; i++) {
		if (!*links[i])
			continue;
		if (m < (int)ARRAY_SIZE(waiting) && detach_waits(*links[i])) {
			waiting[m++] = links[i];
		} else {
			bpf_link__destroy(*links[i]);
			*links[i] = NULL;
		}
	}
	destroy_from_threads(waiting, m);
}

void skeleton_links_destroy(const struct bpf_object_skeleton *s)
{
	struct bpf_link **links[256];
	int i, n = 0;

	for (i = 0; s && i < s->prog_cnt && n < (int)ARRAY_SIZE(links); i++) {
		const struct bpf_prog_skeleton *p = (const void *)((const char *)s->progs +
								   (size_t)i * s->prog_skel_sz);

		if (p->link && *p->link)
			links[n++] = p->link;
	}
	links_destroy(links, n);
}
