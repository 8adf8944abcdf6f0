/* udsprobe --backlog: listen-queue overflow diagnosis for AF_UNIX and TCP listeners. */
#ifndef UDSPROBE_BACKLOG_H
#define UDSPROBE_BACKLOG_H

#include <stdbool.h>
#include <stddef.h>

/* Options of --backlog, as an argp child of udsprobe's parser. */
extern const struct argp backlog_argp;

/* True when --backlog was given. */
bool backlog_requested(void);

/*
 * Run --backlog until --duration or Ctrl-C. json_path and duration_s come from
 * udsprobe's shared --json/--duration options (NULL / 0 = none); attach is the
 * shared --attach value when there is one (NULL = --backlog-attach or auto).
 * Returns the process exit status: 0 ok, 1 runtime failure, 2 bad usage.
 */
int backlog_main(const char *json_path, double duration_s, const char *attach, int verbose);

/*
 * Attach-mode detection for the backlog programs, kept separate so it can be
 * folded into attach.c: fentry (a tiny program loads and attaches on every
 * target) -> kprobe (kprobe PMU present, every target in kallsyms) ->
 * tracepoint (syscalls tracepoints in tracefs, tp_btf needs kernel BTF).
 * with_v6: also require tcp_v6_syn_recv_sock.
 */
enum bl_mode { BL_MODE_AUTO, BL_MODE_FENTRY, BL_MODE_KPROBE, BL_MODE_TRACEPOINT, BL_MODE__COUNT };
extern const char *const bl_mode_names[BL_MODE__COUNT];

/* Can `mode` be used here for the backlog targets? why gets the reason when not. */
bool bl_mode_usable(enum bl_mode mode, bool with_v6, char *why, size_t len);

#endif
