/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers for udsprobe's BPF programs (BPF side only; libbpf-tools' maps.bpf.h
 * and bits.bpf.h): constants vmlinux.h lacks, lookup-or-init, a log2 slot, and
 * one macro pair that emits the fentry + kprobe (fexit + kretprobe) wrappers of
 * one handler body, named fe_/kp_/fx_/kr_<function> (tracepoints are tp_<name>).
 * Include after vmlinux.h and libbpf's bpf_helpers.h and bpf_tracing.h.
 */
#ifndef UDSPROBE_COMMON_BPF_H
#define UDSPROBE_COMMON_BPF_H

/* #defines in the kernel, so not in vmlinux.h */
#define AF_UNIX		1
#define AF_INET		2
#define AF_INET6	10
#define EAGAIN		11
#define ETH_P_IP	0x0800
#define ETH_P_IPV6	0x86DD
#define IPPROTO_TCP	6
#define NET_RX_SOFTIRQ_VEC 3
#define PF_KTHREAD	0x00200000
#define RCV_SHUTDOWN	1

/* The value at key, inserting init first when absent (BPF_NOEXIST: another CPU may
 * win the race, then its value is used); NULL when the map is full. */
static __always_inline void *lookup_or_try_init(void *map, const void *key, const void *init)
{
	void *v = bpf_map_lookup_elem(map, key);

	if (v)
		return v;
	bpf_map_update_elem(map, key, init, BPF_NOEXIST);
	return bpf_map_lookup_elem(map, key);
}

/* floor(log2(v)) for v > 0, 0 for v == 0: the slot of a log2 histogram. */
static __always_inline __u32 log2_slot(__u64 v)
{
	__u32 r = 0, shift;

	shift = (v > 0xffffffffull) << 5; v >>= shift; r |= shift;
	shift = (v > 0xffff) << 4; v >>= shift; r |= shift;
	shift = (v > 0xff) << 3; v >>= shift; r |= shift;
	shift = (v > 0xf) << 2; v >>= shift; r |= shift;
	shift = (v > 0x3) << 1; v >>= shift; r |= shift;
	r |= (v >> 1);
	return r;
}

/*
 * FENTRY_KPROBE(func, body, args...): fe_<func> (fentry) and kp_<func> (kprobe),
 * both running body with the function's first arguments declared as args.
 * FENTRY_KPROBE_AS(name, func, body, args...): the same named fe_<name> and
 * kp_<name> (a probe whose target user space picks at run time).
 * FEXIT_KRETPROBE(func, ret_type, body, args...): fx_<func> (fexit) and
 * kr_<func> (kretprobe) running body with `ret` the return value; for fexit,
 * args are the function's arguments followed by `ret_type ret` (or nothing when
 * body does not use them). FEXIT_KRETPROBE_NORET(func, body): the same for a
 * body that does not read the return value (a void function's return).
 * FEXIT_KRETPROBE_RET(func, body): `ret` (__u64) without declaring the
 * arguments, for functions whose argument list differs between kernels.
 * All are optional (SEC("?...")): user space enables one mode's set.
 */
#define FENTRY_KPROBE_AS(name, func, body, ...)					\
SEC("?fentry/" #func)								\
int BPF_PROG(fe_##name, ##__VA_ARGS__) { body; return 0; }			\
SEC("?kprobe/" #func)								\
int BPF_KPROBE(kp_##name, ##__VA_ARGS__) { body; return 0; }

#define FENTRY_KPROBE(func, body, ...) FENTRY_KPROBE_AS(func, func, body, ##__VA_ARGS__)

#define FEXIT_KRETPROBE(func, ret_type, body, ...)				\
SEC("?fexit/" #func)								\
int BPF_PROG(fx_##func, ##__VA_ARGS__) { body; return 0; }			\
SEC("?kretprobe/" #func)							\
int BPF_KRETPROBE(kr_##func, ret_type ret) { body; return 0; }

#define FEXIT_KRETPROBE_NORET(func, body)					\
SEC("?fexit/" #func)								\
int BPF_PROG(fx_##func) { body; return 0; }					\
SEC("?kretprobe/" #func)							\
int BPF_KRETPROBE(kr_##func) { body; return 0; }

/* fexit reads the return value with bpf_get_func_ret (5.17+) */
#define FEXIT_KRETPROBE_RET(func, body)					\
SEC("?fexit/" #func)								\
int BPF_PROG(fx_##func) { __u64 ret = 0; bpf_get_func_ret(ctx, &ret); body; return 0; }	\
SEC("?kretprobe/" #func)							\
int BPF_KRETPROBE(kr_##func, __u64 ret) { body; return 0; }

/* task_struct::state became __state in 5.14 */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

/* t is tp_btf's task pointer: a direct (CO-RE relocated) load, no probe-read helper call */
static __always_inline bool asleep(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return t->__state != 0;
	return ((struct task_struct___pre514 *)t)->state != 0;
}

/* sched_switch's prev leaves the CPU to wait (not preempted while runnable) */
static __always_inline bool switched_to_sleep(bool preempt, struct task_struct *prev)
{
	return !preempt && asleep(prev);
}

#endif
