/*
 * What this kernel can do, tied to no skeleton (layer 1, docs/ARCHITECTURE.md):
 * the running kernel's BTF (loaded once), /proc/kallsyms (read once, hashed by name),
 * whether fentry and kprobes work, tracefs/bpffs, and libbpf's log. Each tool
 * asks about its own targets through these (libbpf-tools' trace_helpers.c).
 */
#ifndef UDSPROBE_CAPABILITY_H
#define UDSPROBE_CAPABILITY_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/syscall_wrapper.h"	/* SYSCALL_WRAPPER */

struct bpf_program;
/* A skeleton's program from its offset in the skeleton struct, offsetof(struct x_bpf,
 * progs.name), so that static tables name programs by skeleton field; 0: none. */
static inline struct bpf_program *skel_prog(const void *skel, size_t off)
{
	return off ? *(struct bpf_program *const *)((const char *)skel + off) : NULL;
}

/* libbpf output through our verbosity: -v warnings and info, -vv debug. */
void libbpf_setup(int verbose);

/* Kernel BTF (/sys/kernel/btf/vmlinux) is present: the running kernel's own. */
bool kernel_has_btf(void);
/* --btf FILE: a BTF file (raw, or an ELF with .BTF) for CO-RE and the lookups below when the
 * kernel exposes none; NULL: none given. Set only if it parses as BTF holding the kernel's
 * types: 0, -ENOENT (BTF, but no struct task_struct), or libbpf's -errno (not BTF). */
int btf_file_set(const char *path);
const char *btf_file(void);
/* One line telling what to do when there is no BTF at all (no --btf, none in sysfs). */
const char *btf_missing_hint(void);
struct bpf_object_open_opts;
/* Open options for every skeleton: CO-RE against --btf FILE when given. */
struct bpf_object_open_opts *btf_open_opts(void);
/* The kernel's BTF has a function / a tp_btf tracepoint of that name. */
bool btf_has_func(const char *func);
bool btf_has_tracepoint(const char *tp);
/* Arguments a tp_btf program of that tracepoint gets (its prototype less the context pointer:
 * kfree_skb has 2 before Linux 5.17, then a drop reason), or -ENOENT: no such tracepoint. */
int btf_tracepoint_args(const char *tp);
/* Value of the enumerator NAME in any enum of the kernel's BTF: 0 or -ENOENT. */
int btf_enum_value(const char *name, long long *val);
/* This process holds capability cap (linux/capability.h) in its effective set. */
bool process_has_cap(int cap);
/* May this process load and attach tracing programs? CAP_BPF and CAP_PERFMON, or
 * CAP_SYS_ADMIN, in the effective set: root, a service or a binary given just those. When
 * not, one line naming the capability missing and what else to do (remedy, after "run it
 * with sudo, or"); 0 or -EPERM. */
int privileges_check(const char *action, const char *remedy);
/* The remedy of the commands run by hand: the capabilities on the binary */
#define PRIVILEGES_SETCAP "give the binary just those (setcap cap_bpf,cap_perfmon=ep udsprobe)"
/* Free the cached BTF (it is loaded again when asked for). */
void capability_free(void);


/* func (a function's name), or its compiler clone (func.constprop.N, func.isra.N), in
 * /proc/kallsyms; its symbol into out. */
bool ksym_resolve(const char *func, char *out, size_t len);
/* Load a two-instruction fentry program for func, without attaching it (attaching builds a
 * trampoline, and its detach waits for an RCU-tasks grace period: ~0.1 s): its fd or -errno
 * (-ENOENT: no BTF for it; -EPERM: this kernel refuses trampolines). */
int fentry_test_load(const char *func);
/* Attach that program, then a second link of it while the first holds: before 5.12 a program
 * attaches once (-ENOENT), from 5.12 the second is refused as already linked (-EBUSY) and a
 * detached program attaches again, into *reattach. One detach, where attach, detach and
 * attach again took two. 0 or -errno. */
int fentry_can_attach(const char *func, bool *reattach);
/* The same program attached at tp_btf/tp, or as a kprobe on sym (the kprobe PMU's perf
 * event; -ENOENT without the PMU), and detached: 0 or -errno. */
int tp_btf_can_attach(const char *tp);
int kprobe_can_attach(const char *sym);
/* BPF programs may use compare-and-exchange (BPF_ATOMIC | BPF_CMPXCHG, Linux 5.12+): a
 * six-instruction program with one loads. Before, the verifier refuses the instruction
 * ("BPF_STX uses reserved fields"). Probed once. */
bool bpf_has_cmpxchg(void);
/* The kernel has a kprobe PMU (CONFIG_KPROBES). */
bool kprobe_supported(void);
/* Kprobe, tracepoint and tracing programs can keep per-task state in task local storage
 * (BPF_MAP_TYPE_TASK_STORAGE with bpf_task_storage_get): probed once, by loading. */
bool task_storage_usable(void);

/* Mount tracefs / bpffs when absent (bpftool does the same): 0 or -errno. */
int ensure_tracefs(void);
int ensure_bpffs(void);
/* tracefs has events/GROUP/NAME (a classic tracepoint): mounts tracefs if needed. */
bool tracefs_has_event(const char *group, const char *name);

#endif
