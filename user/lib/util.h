/* Small helpers shared by udsprobe's modules: strict parsing, clocks, kernel facts. */
#ifndef UDSPROBE_UTIL_H
#define UDSPROBE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* Clock c in ns. */
static inline uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Same clock as bpf_ktime_get_ns(), so user and BPF timestamps compare directly. */
static inline uint64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

/* FNV-1a over n bytes, continuing from h (a fresh hash starts from FNV1A32_BASIS): a stable
 * hash for names in a cache file's name and in-memory tables. */
#define FNV1A32_BASIS 2166136261u
static inline uint32_t fnv1a32(uint32_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	while (n--)
		h = (h ^ *b++) * 16777619u;
	return h;
}

/* The same in 64 bits. */
static inline uint64_t fnv1a64(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	while (n--)
		h = (h ^ *b++) * 1099511628211ull;
	return h;
}

/* Whole decimal number in [min, max]; no sign, no trailing junk. 0 or -EINVAL/-ERANGE. */
int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* Byte size with optional K/M suffix (binary: 1K = 1024), e.g. "64", "4K", "1M". */
int parse_bytes(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/* Seconds, decimal allowed ("0.5"), in (0, max]. */
int parse_seconds(const char *s, double max, double *out);

/* A duration with its unit: "50us", "1.5ms", "200ns", "1s"; in (0, max_ns] ns. */
int parse_duration_ns(const char *s, uint64_t max_ns, uint64_t *out);

/* A doubling array with room for element n: p itself, or p moved by realloc (*cap doubled,
 * from first); NULL when out of memory (p still valid, *cap unchanged). */
void *grow_array(void *p, int *cap, int n, size_t elem_size, int first);

/* Split a comma list in place; returns the number of items, -E2BIG, or -EINVAL for an empty
 * list or an empty item ("1,,2", ",1", "1,"; s is then left as it was). */
int split_list(char *s, char **items, int max_items);

struct argp_option;
/* An error: "udsprobe: " and the message, a line on stderr. */
void say_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* strerror of a negative errno, naming the kernel's own ENOTSUPP (524), which libc calls
 * "Unknown error 524": 6.1 refuses some fentry targets with it. */
const char *errno_text(int err);
/* A size for people: "32 KiB", "66 MiB", "2.1 GiB" (whole KiB and MiB), into buf. */
const char *bytes_text(uint64_t bytes, char *buf, size_t len);
/* A usage error: "udsprobe: " and the message, then where to look, on stderr. usage_error
 * returns -EINVAL; usage_exit exits 2 (argp's status), for option parsers. */
int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void usage_exit(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* An option of `table` (an argp parser's) that takes one value, given a second time: a usage
 * error naming it (exit 2), not a silent replacement of the first value. seen: the caller's
 * mask of the table's entries given so far. Repeatable options are not passed here. */
void option_once(const struct argp_option *table, int key, uint64_t *seen);

/* A rate with a k/M/G suffix: "1.23 M". */
const char *fmt_rate(double v, char *buf, size_t len);
/*
 * The one duration format of every report: "812 ns", "1.93 us", "12.3 us", "4.57 ms", "1.20 s"
 * (three significant digits from 1 us on; 999.7 ns is "1.00 us", never "1000 ns"). utf8
 * writes "\u00b5s" for "us"; a negative value keeps its sign ("-15.9 us"). Returns buf.
 */
const char *fmt_dur(double ns, bool utf8, char *buf, size_t len);

/*
 * Bytes from outside (socket paths, abstract names, process names) in a form that
 * is safe on a terminal and valid in JSON strings and Prometheus label values,
 * losslessly (docs/BACKLOG.md, "Names"): printable ASCII and valid UTF-8 stay as
 * they are, except C1 controls; a backslash becomes "\\\\", NUL "\\0", every other
 * byte (C0 controls, DEL, C1, invalid UTF-8) "\\xHH". A short out is cut at a
 * whole character or escape; out always ends with NUL. Returns out.
 */
char *str_escape(const void *s, size_t n, char *out, size_t len);
/* The inverse: the byte count written to out, -EINVAL (bad escape) or -E2BIG. */
int str_unescape(const char *s, void *out, size_t len);

/* The CPU's "model name" from /proc/cpuinfo, "unknown" without one. */
void cpu_model(char *buf, size_t len);
/* Kernel release ("6.18.44-..."). */
const char *kernel_release(void);
/* Is the running kernel major.minor or newer (by uname's release)? */
bool kernel_at_least(unsigned int major, unsigned int minor);
/* Number of CPUs this process may run on, and the n-th of them (or -1). */
int allowed_cpu_count(void);
int allowed_cpu(int nth);

/* In a child just forked from `parent`: die of `sig` when the parent dies (PR_SET_PDEATHSIG,
 * so nothing of ours outlives a SIGKILLed udsprobe), and take the default action for SIGINT,
 * SIGTERM (and SIGPIPE, with pipe_default) again. False when the parent is already gone:
 * then no one would send that signal, and the child should exit. */
bool child_dies_with_parent(pid_t parent, int sig, bool pipe_default);
/* A wait() status as a shell gives it: the exit code, or 128 + the signal. */
int exit_code(int status);

struct proc_ids {
	int pid, ppid, pgrp;
};
/* Every process now: pid, parent, process group (*out, free()). The count, or -ENOMEM. */
int proc_snapshot(struct proc_ids **out);
/*
 * Our children other than the n_keep in keep (processes that outlived their parent come to
 * udsprobe, the subreaper: programs_run and --trace -- COMMAND set PR_SET_CHILD_SUBREAPER):
 * SIGTERM, then SIGKILL, reaped. How many there were.
 */
int stop_leftovers(const pid_t *keep, int n_keep);

#endif
