/* udsprobe --backlog: listen-queue overflow diagnosis for AF_UNIX and TCP listeners. */
#ifndef UDSPROBE_BACKLOG_H
#define UDSPROBE_BACKLOG_H

#include <stdbool.h>
#include <stddef.h>

#include "attach.h"
#include "watch_opts.h"

/* Where the AF_UNIX listeners and their queue depth come from (--backlog-source). */
enum bl_source {
	BL_SOURCE_AUTO,		/* iter/unix where the kernel has it (5.17+), else sock_diag */
	BL_SOURCE_ITER,		/* iter/unix, or fail */
	BL_SOURCE_DIAG,		/* NETLINK_SOCK_DIAG (backlog_diag.c) even with iter/unix */
};

/* --backlog's own options: backlog_argp (a child of the command line's parser) fills the
 * struct its parent hands it; the filters and metrics options are watch_opts.h's. */
struct backlog_opts {
	bool enabled;		/* --backlog */
	const char *attach;	/* --backlog-attach MODE as given */
	enum bl_source source;
	bool source_given;
	bool quiet;
	enum attach_mode want;	/* the mode to try: --attach, else --backlog-attach */
};
extern const struct argp backlog_argp;
/* The first option of --backlog alone given (by name), or NULL. */
const char *backlog_option_given(const struct backlog_opts *o);
/* --backlog-attach against the shared --attach (ATTACH_AUTO: not given), when parsing: sets
 * o->want; 0, or -EINVAL (a usage error, said). */
int backlog_check_attach(struct backlog_opts *o, enum attach_mode attach);
/*
 * Run --backlog until --duration or udsprobe_stop (interrupt.h: udsprobe's one signal
 * handler). json_path and duration_s come from udsprobe's shared --json/--duration options
 * (NULL / 0 = none). 0, or -errno (said).
 */
int backlog_main(const struct backlog_opts *o, const struct watch_opts *w, const char *json_path,
		 double duration_s, int verbose);

#endif
