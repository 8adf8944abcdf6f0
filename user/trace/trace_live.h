/* --trace --live: the flows so far, redrawn every --interval (docs/TRACE.md, "Live view"). */
#ifndef UDSPROBE_TRACE_LIVE_H
#define UDSPROBE_TRACE_LIVE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "trace.h"

struct trace_live;

/* What the header says beside the flows. */
struct trace_live_head {
	const char *attach_mode;
	uint64_t elapsed_ns;
	/* the hooks' run time so far, from BPF run-time statistics (known false: refused) */
	bool cost_known;
	uint64_t cost_ns;
	uint64_t outliers_dropped;	/* --slower-than's ring buffer was full */
};

/* The full-screen view when stdin and stdout are a terminal, else plain text on stdout every
 * interval (said once on stderr, with why). NULL: out of memory. */
struct trace_live *trace_live_open(void);
void trace_live_close(struct trace_live *tl);
/* Draw the flows of a snapshot (trace_snapshot) */
void trace_live_frame(struct trace_live *tl, const struct trace_run *snap,
		      const struct trace_live_head *h);
/* Keys for up to ms (the screen; plain text: none, no wait): true when q was pressed. A key
 * that changes the order or the filter redraws the last frame at once. */
bool trace_live_keys(struct trace_live *tl, int ms);
/* Is there a screen? (else keys never come: the caller waits) */
bool trace_live_screen(const struct trace_live *tl);

#endif
