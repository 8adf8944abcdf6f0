// SPDX-License-Identifier: GPL-2.0
/* What this kernel can do: BTF, kallsyms, fentry/kprobe support, tracefs/bpffs, libbpf log. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <linux/bpf.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <linux/perf_event.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "capability.h"
#include "util.h"

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

bool kernel_has_btf(void)
{
	return faccessat(AT_FDCWD, "/sys/kernel/btf/vmlinux", R_OK, AT_EACCESS) == 0;
}

static const char *btf_path;

static int quiet(enum libbpf_print_level level, const char *fmt, va_list args)
{
	(void)level;
	(void)fmt;
	(void)args;
	return 0;
}

int btf_file_set(const char *path)
{
	libbpf_print_fn_t was = libbpf_set_print(quiet);	/* the caller says why, in one line */
	struct btf *btf = btf__parse(path, NULL);
	int err = (int)libbpf_get_error(btf);

	libbpf_set_print(was);
	if (err)
		return err;
	/* a program's own .BTF parses too, and would only fail later, blamed on the kernel */
	if (btf__find_by_name_kind(btf, "task_struct", BTF_KIND_STRUCT) <= 0)
		err = -ENOENT;
	btf__free(btf);
	if (!err)
		btf_path = path;
	return err;
}

const char *btf_file(void) { return btf_path; }

const char *btf_missing_hint(void)
{
	static char buf[512];
	struct utsname u;
	const char *rel = uname(&u) ? "<release>" : u.release;

	snprintf(buf, sizeof(buf), "this kernel has no BTF (/sys/kernel/btf/vmlinux): pass --btf FILE "
		 "with its BTF (BTFHub's file for %s, or the vmlinux of its debug package, e.g. "
		 "/usr/lib/debug/boot/vmlinux-%s from linux-image-%s-dbg), or boot a kernel with "
		 "CONFIG_DEBUG_INFO_BTF=y; --no-trace needs none", rel, rel, rel);
	return buf;
}

struct bpf_object_open_opts *btf_open_opts(void)
{
	static struct bpf_object_open_opts opts;

	opts.sz = sizeof(opts);
	opts.btf_custom_path = btf_path;
	return &opts;
}

static struct btf *vm_btf;
static bool vm_btf_tried;

static struct btf *vmlinux_btf(void)
{
	if (!vm_btf_tried) {
		vm_btf_tried = true;
		/* --btf FILE wins: it is what CO-RE relocates against too */
		vm_btf = btf_path ? btf__parse(btf_path, NULL) : btf__load_vmlinux_btf();
		if (libbpf_get_error(vm_btf))
			vm_btf = NULL;
	}
	return vm_btf;
}

void capability_free(void)
{
	btf__free(vm_btf);
	vm_btf = NULL;
	vm_btf_tried = false;
}

static int btf_func_id(const char *func)
{
	struct btf *btf = vmlinux_btf();

	return btf ? btf__find_by_name_kind(btf, func, BTF_KIND_FUNC) : -ENOENT;
}

bool btf_has_func(const char *func)
{
	return btf_func_id(func) > 0;
}

bool btf_has_tracepoint(const char *tp)
{
	return btf_tracepoint_args(tp) >= 0;
}

/* The BTF id of tracepoint tp's btf_trace_<tp> typedef (tp_btf's attach target), or -ENOENT. */
static int btf_tracepoint_id(const char *tp)
{
	struct btf *btf = vmlinux_btf();
	char name[128];
	int id;

	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	id = btf ? btf__find_by_name_kind(btf, name, BTF_KIND_TYPEDEF) : -ENOENT;
	return id > 0 ? id : -ENOENT;
}

int btf_tracepoint_args(const char *tp)
{
	struct btf *btf = vmlinux_btf();
	const struct btf_type *t;
	int id = btf_tracepoint_id(tp);

	if (id <= 0)
		return -ENOENT;
	/* typedef void (*btf_trace_X)(void *ctx, args...): pointer to a prototype */
	t = btf__type_by_id(btf, btf__type_by_id(btf, id)->type);
	t = t && btf_is_ptr(t) ? btf__type_by_id(btf, t->type) : NULL;
	return t && btf_is_func_proto(t) && btf_vlen(t) > 0 ? btf_vlen(t) - 1 : -ENOENT;
}

int btf_enum_value(const char *name, long long *val)
{
	struct btf *btf = vmlinux_btf();
	int i, j, n;

	if (!btf)
		return -ENOENT;
	n = btf__type_cnt(btf);
	for (i = 1; i < n; i++) {
		const struct btf_type *t = btf__type_by_id(btf, i);
		const struct btf_enum *e;

		if (!btf_is_enum(t))
			continue;
		e = btf_enum(t);
		for (j = 0; j < btf_vlen(t); j++)
			if (!strcmp(btf__name_by_offset(btf, e[j].name_off), name)) {
				*val = e[j].val;
				return 0;
			}
	}
	return -ENOENT;
}

/*
 * Text symbols of /proc/kallsyms, read once into a hash by function name: a stock kernel has
 * ~170k symbols, and one scan per program (50+ in --check) cost seconds natively and ~15 s
 * under qemu TCG. Only what a probe can take is kept: the function itself, else its compiler
 * clone (func.constprop.N, func.isra.N: the function's body; the first by name, as strcmp
 * orders them). Parsed by hand, in 64 KiB reads: sscanf and a sort of every name took ~20 %
 * of a traced start's CPU time under TCG.
 */
static char *ksym_names;	/* the kept names, each NUL-terminated */
static size_t ksym_len, ksym_cap;
static uint32_t *ksym_slots;	/* offset + 1 into ksym_names; 0: empty */
static size_t ksym_n, ksym_mask;

static bool ksym_is_clone(const char *suffix)
{
	return !strncmp(suffix, ".constprop", 10) || !strncmp(suffix, ".isra", 5);
}

/* The slot of the function whose name (or clone's name) starts with base[0..n) and ends there
 * or at a '.'; an empty one if none is kept. */
static uint32_t *ksym_slot(const char *base, size_t n)
{
	size_t i;

	for (i = fnv1a32(FNV1A32_BASIS, base, n) & ksym_mask;; i = (i + 1) & ksym_mask) {
		const char *kept;

		if (!ksym_slots[i])
			return &ksym_slots[i];
		kept = ksym_names + ksym_slots[i] - 1;
		if (!strncmp(kept, base, n) && (!kept[n] || kept[n] == '.'))
			return &ksym_slots[i];
	}
}

static bool ksym_grow(void)
{
	uint32_t *old = ksym_slots;
	size_t i, n_old = old ? ksym_mask + 1 : 0, n_new = n_old ? 2 * n_old : 1 << 18;

	ksym_slots = calloc(n_new, sizeof(*ksym_slots));
	if (!ksym_slots) {
		ksym_slots = old;
		return false;
	}
	ksym_mask = n_new - 1;
	for (i = 0; i < n_old; i++)
		if (old[i]) {
			const char *kept = ksym_names + old[i] - 1;

			*ksym_slot(kept, strcspn(kept, ".")) = old[i];
		}
	free(old);
	return true;
}

/* Keep name (len bytes) unless its function, or a clone first by name, is kept. */
static bool ksym_add(const char *name, size_t len)
{
	size_t n = strcspn(name, ".");	/* the function's name: up to a clone's suffix */
	uint32_t *slot;

	if (n < len && !ksym_is_clone(name + n))
		return true;
	if (2 * (ksym_n + 1) > ksym_mask + 1 && !ksym_grow())
		return false;
	slot = ksym_slot(name, n);
	if (*slot) {
		const char *kept = ksym_names + *slot - 1;

		if (!kept[n] || (n < len && strcmp(name, kept) > 0))
			return true;
	} else {
		ksym_n++;
	}
	if (ksym_len + len + 1 > ksym_cap) {
		size_t cap = ksym_cap ? 2 * ksym_cap : 1 << 22;
		char *names = cap < UINT32_MAX ? realloc(ksym_names, cap) : NULL;

		if (!names)
			return false;
		ksym_names = names;
		ksym_cap = cap;
	}
	memcpy(ksym_names + ksym_len, name, len);
	ksym_names[ksym_len + len] = '\0';
	*slot = (uint32_t)ksym_len + 1;
	ksym_len += len + 1;
	return true;
}

static void ksyms_load(void)
{
	static bool tried;
	char line[512];
	FILE *f;

	if (tried)
		return;
	tried = true;
	f = fopen("/proc/kallsyms", "r");
	if (!f)
		return;
	setvbuf(f, NULL, _IOFBF, 1 << 16);
	while (fgets(line, sizeof(line), f)) {
		/* "ffffffff81000000 T name" then "\t[module]" for a module's */
		char *type = strchr(line, ' '), *name;
		size_t len;

		if (!type || (type[1] != 't' && type[1] != 'T') || type[2] != ' ')
			continue;
		name = type + 3;
		len = strcspn(name, " \t\n");
		name[len] = '\0';
		if (len && !ksym_add(name, len))
			break;
	}
	fclose(f);
}

bool ksym_resolve(const char *func, char *out, size_t len)
{
	size_t n = strcspn(func, ".");
	const uint32_t *slot;
	const char *kept;

	ksyms_load();
	if (!ksym_slots || !*(slot = ksym_slot(func, n)))
		return false;
	kept = ksym_names + *slot - 1;
	if (func[n] && strcmp(kept, func))	/* a name with a '.' is found only as itself */
		return false;
	snprintf(out, len, "%s", kept);
	return true;
}

/* A two-instruction program (r0 = 0; exit) of type, for a BTF target where it has one: its
 * fd or -errno. The probes load this, not an object of ours: no parse of the kernel's BTF by
 * libbpf (~0.3 s each in a qemu TCG guest). */
static int bare_prog_load(enum bpf_prog_type type, enum bpf_attach_type attach, int btf_id)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, o, .expected_attach_type = attach, .attach_btf_id = btf_id);
	int fd;

	if (btf_id < 0)
		return -ENOENT;
	fd = bpf_prog_load(type, "udsp_probe", "GPL", insns, 2, &o);
	return fd < 0 ? -errno : fd;
}

int fentry_test_load(const char *func)
{
	int id = btf_func_id(func);

	return bare_prog_load(BPF_PROG_TYPE_TRACING, BPF_TRACE_FENTRY, id > 0 ? id : -ENOENT);
}

int fentry_can_attach(const char *func, bool *reattach)
{
	int fd = fentry_test_load(func), first, second;

	if (fd < 0)
		return fd;
	first = bpf_raw_tracepoint_open(NULL, fd);
	if (first < 0) {
		first = -errno;
		close(fd);
		return first;
	}
	second = bpf_raw_tracepoint_open(NULL, fd);
	*reattach = second >= 0 || errno == EBUSY;
	if (second >= 0)
		close(second);
	close(first);
	close(fd);
	return 0;
}

int tp_btf_can_attach(const char *tp)
{
	int fd = bare_prog_load(BPF_PROG_TYPE_TRACING, BPF_TRACE_RAW_TP, btf_tracepoint_id(tp));
	int link;

	if (fd < 0)
		return fd;
	link = bpf_raw_tracepoint_open(NULL, fd);
	link = link < 0 ? -errno : close(link);
	close(fd);
	return link;
}

static const char kprobe_pmu_type[] = "/sys/bus/event_source/devices/kprobe/type";

int kprobe_can_attach(const char *sym)
{
	struct perf_event_attr attr = { .size = sizeof(attr), .config1 = (uintptr_t)sym };
	FILE *f = fopen(kprobe_pmu_type, "re");
	int ok = f && fscanf(f, "%u", &attr.type) == 1, fd, ev, err = 0;

	if (f)
		fclose(f);
	if (!ok)
		return -ENOENT;
	fd = bare_prog_load(BPF_PROG_TYPE_KPROBE, 0, 0);
	if (fd < 0)
		return fd;
	ev = syscall(SYS_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (ev < 0 || ioctl(ev, PERF_EVENT_IOC_SET_BPF, fd))
		err = -errno;
	if (ev >= 0)
		close(ev);
	close(fd);
	return err;
}

bool bpf_has_cmpxchg(void)
{
	/* *(u64 *)(r10 - 8) = 0; r0 = 0; r1 = 1; r0 = cmpxchg(r10 - 8, r0, r1); r0 = 0; exit */
	struct bpf_insn insns[] = {
		{ .code = BPF_ST | BPF_MEM | BPF_DW, .dst_reg = BPF_REG_10, .off = -8, .imm = 0 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_1, .imm = 1 },
		{ .code = BPF_STX | BPF_ATOMIC | BPF_DW, .dst_reg = BPF_REG_10, .src_reg = BPF_REG_1,
		  .off = -8, .imm = BPF_CMPXCHG },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	static int known = -1;
	int fd;

	if (known < 0) {
		fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, "udsp_cmpxchg", "GPL", insns,
				   sizeof(insns) / sizeof(insns[0]), NULL);
		known = fd >= 0;
		if (fd >= 0)
			close(fd);
	}
	return known;
}

bool kprobe_supported(void)
{
	return access(kprobe_pmu_type, F_OK) == 0;
}

bool task_storage_usable(void)
{
	static int usable = -1;

	/* libbpf cannot probe tracing programs' helpers (they need an attach target); a
	 * kprobe program's helpers are the base that tp_btf's add to */
	if (usable < 0)
		usable = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL) == 1 &&
			 libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_task_storage_get,
						 NULL) == 1;
	return usable;
}

static int ensure_mount(const char *path, const char *fstype, long magic)
{
	struct statfs st;

	if (statfs(path, &st) == 0 && (long)st.f_type == magic)
		return 0;
	if (mkdir(path, 0700) && errno != EEXIST)
		return -errno;
	if (mount(fstype, path, fstype, 0, NULL))
		return -errno;
	return 0;
}

int ensure_tracefs(void)
{
	/*
	 * Classic tracepoint attach reads event ids from tracefs; fresh machines here lack it.
	 * AT_EACCESS: checked with the effective ids and capabilities (a service running
	 * as a user with CAP_DAC_READ_SEARCH sees root's 0700 tracefs), as libbpf's open is.
	 */
	if (faccessat(AT_FDCWD, "/sys/kernel/tracing/events", F_OK, AT_EACCESS) == 0)
		return 0;
	return ensure_mount("/sys/kernel/tracing", "tracefs", TRACEFS_MAGIC);
}

int ensure_bpffs(void)
{
	return ensure_mount("/sys/fs/bpf", "bpf", BPF_FS_MAGIC);
}

bool tracefs_has_event(const char *group, const char *name)
{
	char path[256];

	if (ensure_tracefs())
		return false;
	snprintf(path, sizeof(path), "/sys/kernel/tracing/events/%s/%s/id", group, name);
	return faccessat(AT_FDCWD, path, F_OK, AT_EACCESS) == 0;
}

/* The effective capability set (bit n = capability n); root's all when capget fails. */
static uint64_t effective_caps(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = {};

	if (syscall(SYS_capget, &h, d))
		return geteuid() == 0 ? ~0ull : 0;
	return d[0].effective | (uint64_t)d[1].effective << 32;
}

bool process_has_cap(int cap)
{
	return effective_caps() & (1ull << cap);
}

/* CAP_BPF and CAP_PERFMON are 39 and 38 (Linux 5.8+; older headers lack the names) */
#define CAP_BPF_NR	39
#define CAP_PERFMON_NR	38

int privileges_check(const char *action, const char *remedy)
{
	uint64_t caps = effective_caps();
	bool bpf = caps & (1ull << CAP_BPF_NR), perfmon = caps & (1ull << CAP_PERFMON_NR);

	if ((bpf && perfmon) || (caps & (1ull << CAP_SYS_ADMIN)))
		return 0;
	say_error("%s needs root (CAP_BPF and CAP_PERFMON; this process lacks %s): "
		"run it with sudo, or %s", action,
		!bpf && !perfmon ? "both" : !bpf ? "CAP_BPF" : "CAP_PERFMON", remedy);
	return -EPERM;
}
