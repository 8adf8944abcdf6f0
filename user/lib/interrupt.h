/*
 * One SIGINT/SIGTERM handler for every action. The first signal sets udsprobe_stop (every
 * action's loop checks it) and stops the running workload (the callback main gives); a second one removes temporary
 * output files and ends the process at once (retsnoop's habit).
 */
#ifndef UDSPROBE_INTERRUPT_H
#define UDSPROBE_INTERRUPT_H

#include <signal.h>

extern volatile sig_atomic_t udsprobe_stop;

/* Install the handler (no SA_RESTART: blocking waits return EINTR) and ignore SIGPIPE;
 * on_stop (async-signal-safe, or NULL) runs at the first signal: it stops the workload. */
void interrupt_setup(void (*on_stop)(void));
/* After a stop was handled: the next signal is a first one again (stops, does not kill). */
void interrupt_rearm(void);

#endif
