// SPDX-License-Identifier: GPL-2.0
#include <signal.h>
#include <stddef.h>

#include "interrupt.h"
#include "live.h"
#include "outfile.h"

volatile sig_atomic_t udsprobe_stop;
static void (*stop_fn)(void);

static void on_signal(int sig)
{
	if (udsprobe_stop) {	/* a second Ctrl-C: stop now, leaving no half-written file */
		outfile_remove_pending();
		live_restore_now();	/* a full-screen view's terminal as it was */
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	udsprobe_stop = 1;
	if (stop_fn)
		stop_fn();
}

void interrupt_setup(void (*on_stop)(void))
{
	struct sigaction sa = { .sa_handler = on_signal };

	stop_fn = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

void interrupt_rearm(void)
{
	udsprobe_stop = 0;
}
