/* udsprobe --backlog: listen-queue overflow diagnosis for AF_UNIX and TCP listeners. */
#ifndef UDSPROBE_BACKLOG_H
#define UDSPROBE_BACKLOG_H

#include <stdbool.h>
#include <stddef.h>

#include "attach.h"

/* Options of --backlog, as an argp child of udsprobe's parser. */
extern const struct argp backlog_argp;

/* True when --backlog was given. */
bool backlog_requested(void);

/* --unix, --port and --pid as parsed (--trace uses them too). */
struct bl_filters;
const struct bl_filters *backlog_filters(void);
/* --metrics ADDR:PORT (--backlog's, --trace's too), or NULL. */
const char *backlog_metrics_addr(void);
/* --interval S (0: not given); --trace --live and --trace --prom take it too. */
double backlog_interval(void);
/* --prom PATH (--backlog's, --trace's too), or NULL. */
const char *backlog_prom_path(void);

/* --backlog-attach against the shared --attach (ATTACH_AUTO: not given), when parsing:
 * 0, or -EINVAL (a usage error, said). */
int backlog_check_attach(enum attach_mode attach);
/*
 * Run --backlog until --duration or udsprobe_stop (interrupt.h: udsprobe's one signal
 * handler). json_path and duration_s come from udsprobe's shared --json/--duration options
 * (NULL / 0 = none). 0, or -errno (said).
 */
int backlog_main(const char *json_path, double duration_s, int verbose);

#endif
