// SPDX-License-Identifier: GPL-2.0
/*
 * Attach modes, best first: fentry/fexit (BPF trampolines, cheapest), kprobe/
 * kretprobe, tracepoint (tp_btf). Each is probed by really loading and attaching
 * one of our programs, since "supported" can still mean EPERM at attach time
 * (ftrace blocked) or ENOENT (CONFIG_KPROBES unset).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "attach.h"
#include "stages.h"
#include "stages.skel.h"
#include "util.h"

const char *const attach_mode_names[ATTACH__COUNT] = { "auto", "fentry", "kprobe", "tracepoint" };

static int verbosity;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_DEBUG && verbosity < 2)
		return 0;
	if (level == LIBBPF_INFO && verbosity < 1)
		return 0;
	if (level == LIBBPF_WARN && verbosity < 1)
		return 0;	/* failures are reported by us, with context */
	return vfprintf(stderr, fmt, args);
}

void libbpf_setup(int verbose)
{
	verbosity = verbose;
	libbpf_set_print(libbpf_print);
}

int attach_mode_parse(const char *s)
{
	int i;

	for (i = 0; i < ATTACH__COUNT; i++)
		if (!strcmp(s, attach_mode_names[i]))
			return i;
	return -1;
}

static struct btf *vmlinux_btf(void)
{
	static struct btf *btf;
	static bool tried;

	if (!tried) {
		tried = true;
		btf = btf__load_vmlinux_btf();
		if (!btf)
			btf = NULL;
	}
	return btf;
}

bool btf_has_func(const char *func)
{
	struct btf *btf = vmlinux_btf();

	return btf && btf__find_by_name_kind(btf, func, BTF_KIND_FUNC) > 0;
}

bool btf_has_tracepoint(const char *tp)
{
	struct btf *btf = vmlinux_btf();
	char name[128];

	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	return btf && btf__find_by_name_kind(btf, name, BTF_KIND_TYPEDEF) > 0;
}

/*
 * Text symbols of /proc/kallsyms, read once and sorted: a stock kernel has ~170k
 * symbols, and one scan per program (50+ in --check) cost seconds natively and
 * ~15 s under qemu TCG.
 */
static char **ksyms;
static size_t n_ksyms;

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void ksyms_load(void)
{
	static bool tried;
	char line[512], sym[256], type;
	size_t cap = 0;
	FILE *f;

	if (tried)
		return;
	tried = true;
	f = fopen("/proc/kallsyms", "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*s %c %255s", &type, sym) != 2 || (type != 't' && type != 'T'))
			continue;
		if (n_ksyms == cap) {
			char **n = realloc(ksyms, (cap = cap ? 2 * cap : 65536) * sizeof(*ksyms));

			if (!n)
				break;
			ksyms = n;
		}
		if (!(ksyms[n_ksyms] = strdup(sym)))
			break;
		n_ksyms++;
	}
	fclose(f);
	qsort(ksyms, n_ksyms, sizeof(*ksyms), cmp_str);
}

bool ksym_resolve(const char *func, char *out, size_t len)
{
	size_t flen = strlen(func), lo = 0, hi, i;
	const char *clone = NULL;

	ksyms_load();
	hi = n_ksyms;
	while (lo < hi) {	/* first symbol >= func */
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(ksyms[mid], func) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo; i < n_ksyms && !strncmp(ksyms[i], func, flen); i++) {
		const char *sym = ksyms[i];

		if (!sym[flen]) {
			snprintf(out, len, "%s", sym);
			return true;
		}
		/* a compiler clone (foo.constprop.0, foo.isra.0) is the function's body */
		if (!clone && (!strncmp(sym + flen, ".constprop", 10) || !strncmp(sym + flen, ".isra", 5)))
			clone = sym;
	}
	if (clone)
		snprintf(out, len, "%s", clone);
	return clone;
}

/* Load and attach one program of ours; 0 or -errno. */
static int try_program(const char *prog_name, const char *kfunc)
{
	struct stages_bpf *skel = stages_bpf__open();
	struct bpf_program *prog;
	struct bpf_link *link;
	int err;

	if (!skel)
		return -errno;
	prog = bpf_object__find_program_by_name(skel->obj, prog_name);
	if (!prog) {
		stages_bpf__destroy(skel);
		return -ENOENT;
	}
	bpf_program__set_autoload(prog, true);
	err = stages_bpf__load(skel);
	if (!err) {
		link = kfunc ? bpf_program__attach_kprobe(prog, false, kfunc) : bpf_program__attach(prog);
		err = libbpf_get_error(link);
		if (!err)
			bpf_link__destroy(link);
	}
	stages_bpf__destroy(skel);
	return err;
}

void attach_probe(struct attach_caps *caps, int verbose)
{
	char sym[256];
	int err;

	memset(caps, 0, sizeof(*caps));
	libbpf_setup(verbose);

	if (!btf_has_func("unix_stream_sendmsg")) {
		snprintf(caps->why[ATTACH_FENTRY], sizeof(caps->why[0]),
			 "no kernel BTF for unix_stream_sendmsg");
	} else {
		err = try_program("fe_unix_stream_sendmsg", NULL);
		caps->works[ATTACH_FENTRY] = !err;
		if (err == -EPERM || err == -EACCES)
			snprintf(caps->why[ATTACH_FENTRY], sizeof(caps->why[0]),
				 "attaching an fentry program failed with %s: this kernel refuses BPF "
				 "trampolines (ftrace blocked or locked down)", strerror(-err));
		else if (err)
			snprintf(caps->why[ATTACH_FENTRY], sizeof(caps->why[0]),
				 "loading/attaching an fentry program failed: %s", strerror(-err));
		else
			snprintf(caps->why[ATTACH_FENTRY], sizeof(caps->why[0]),
				 "fentry/fexit on unix_stream_sendmsg loaded and attached");
	}

	if (!ksym_resolve("unix_stream_sendmsg", sym, sizeof(sym))) {
		snprintf(caps->why[ATTACH_KPROBE], sizeof(caps->why[0]),
			 "unix_stream_sendmsg not in /proc/kallsyms");
	} else {
		err = try_program("kp_unix_stream_sendmsg", sym);
		caps->works[ATTACH_KPROBE] = !err;
		if (err == -ENOENT || err == -EOPNOTSUPP)
			snprintf(caps->why[ATTACH_KPROBE], sizeof(caps->why[0]),
				 "attaching a kprobe failed with %s: this kernel has no kprobe support "
				 "(CONFIG_KPROBES unset?)", strerror(-err));
		else if (err)
			snprintf(caps->why[ATTACH_KPROBE], sizeof(caps->why[0]),
				 "attaching a kprobe failed: %s", strerror(-err));
		else
			snprintf(caps->why[ATTACH_KPROBE], sizeof(caps->why[0]),
				 "kprobe/kretprobe on %.150s attached", sym);
	}

	if (!btf_has_tracepoint("sched_switch")) {
		snprintf(caps->why[ATTACH_TRACEPOINT], sizeof(caps->why[0]),
			 "no BTF for tracepoints (needs CONFIG_DEBUG_INFO_BTF, kernel 5.5+)");
	} else {
		err = try_program("tp_sched_switch", NULL);
		caps->works[ATTACH_TRACEPOINT] = !err;
		if (err)
			snprintf(caps->why[ATTACH_TRACEPOINT], sizeof(caps->why[0]),
				 "attaching tp_btf/sched_switch failed: %s", strerror(-err));
		else
			snprintf(caps->why[ATTACH_TRACEPOINT], sizeof(caps->why[0]),
				 "tp_btf/sched_switch attached");
	}
}

int attach_choose(const struct attach_caps *caps, enum attach_mode req, enum attach_mode *out,
		  char *why, size_t len)
{
	static const enum attach_mode order[] = { ATTACH_FENTRY, ATTACH_KPROBE, ATTACH_TRACEPOINT };
	size_t i, n = 0;

	if (req != ATTACH_AUTO) {
		if (!caps->works[req]) {
			snprintf(why, len, "--attach %s: %s", attach_mode_names[req], caps->why[req]);
			return -EOPNOTSUPP;
		}
		*out = req;
		snprintf(why, len, "forced with --attach %s", attach_mode_names[req]);
		return 0;
	}
	why[0] = 0;
	for (i = 0; i < ARRAY_SIZE(order); i++) {
		enum attach_mode m = order[i];

		if (caps->works[m]) {
			*out = m;
			n += snprintf(why + n, n < len ? len - n : 0, "%s%s works",
				      n ? "; " : "", attach_mode_names[m]);
			return 0;
		}
		n += snprintf(why + n, n < len ? len - n : 0, "%s%s rejected: %s", n ? "; " : "",
			      attach_mode_names[m], caps->why[m]);
	}
	return -EOPNOTSUPP;
}
