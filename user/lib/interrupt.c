// SPDX-License-Identifier: GPL-2.0
#include <signal.h>
#include <stddef.h>

#include "interrupt.h"
#include "live.h"
#include "outfile.h"
#include "workload.h"

volatile sig_atomic_t udsprobe_stop;

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
	workload_interrupt();
}

void interrupt_setup(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

void interrupt_rearm(void)
{
	udsprobe_stop = 0;
}
