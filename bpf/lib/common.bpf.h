/* SPDX-License-Identifier: GPL-2.0 */
/* after libbpf-tools' maps.bpf.h, bits.bpf.h */
#ifndef UDSPROBE_COMMON_BPF_H
#define UDSPROBE_COMMON_BPF_H

/* kernel #defines, not in vmlinux.h */
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

/* another CPU may win the race: its value is used; NULL: map full */
static __always_inline void *lookup_or_try_init(void *map, const void *key, const void *init)
{
	void *v = bpf_map_lookup_elem(map, key);

	if (v)
		return v;
	bpf_map_update_elem(map, key, init, BPF_NOEXIST);
	return bpf_map_lookup_elem(map, key);
}

/* 1 if v has a bit at or above bit k, else 0, without a branch: the verifier follows one path
 * through log2_slot, not 32 (a histogram index is precise: each branch was a state of its own) */
static __always_inline __u64 bits_above(__u64 v, int k)
{
	__u64 hi = v >> k, neg = -hi;

	barrier_var(neg);	/* keeps clang from turning it back into a compare and a jump */
	return (hi | neg) >> 63;
}

/* floor(log2(v)), 0 for 0 */
static __always_inline __u32 log2_slot(__u64 v)
{
	__u32 r = 0, shift;

	shift = bits_above(v, 32) << 5; v >>= shift; r |= shift;
	shift = bits_above(v, 16) << 4; v >>= shift; r |= shift;
	shift = bits_above(v, 8) << 3; v >>= shift; r |= shift;
	shift = bits_above(v, 4) << 2; v >>= shift; r |= shift;
	shift = bits_above(v, 2) << 1; v >>= shift; r |= shift;
	r |= (v >> 1);
	return r;
}

/* fentry+kprobe and fexit+kretprobe twins of one body (fe_/kp_/fx_/kr_); all optional */
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

/* t: a tp_btf pointer, a direct CO-RE load */
static __always_inline bool asleep(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return t->__state != 0;
	return ((struct task_struct___pre514 *)t)->state != 0;
}

/* asleep, not preempted while runnable */
static __always_inline bool switched_to_sleep(bool preempt, struct task_struct *prev)
{
	return !preempt && asleep(prev);
}

#endif
