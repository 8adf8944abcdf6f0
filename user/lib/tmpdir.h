/* Private directories in /tmp that do not outlive udsprobe, even when it is SIGKILLed. */
#ifndef UDSPROBE_TMPDIR_H
#define UDSPROBE_TMPDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define TMPDIR_GROUPS	8	/* process groups one janitor stops, at most */

struct tmpdir {
	char path[64];
	pid_t janitor;	/* our child in its own session: a sweep of our children spares it */
	int fd;		/* our end of its pipe (close-on-exec): EOF once udsprobe has exited */
	bool janitor_failed;	/* tmpdir_create failed at the janitor's pipe or fork */
};

/*
 * Create /tmp/<prefix>.XXXXXX with `mode`. A janitor process removes it, and everything in
 * it, once udsprobe has exited, however it exited (SIGKILL, a second Ctrl-C included).
 * prefix NULL: no directory, the janitor only (for tmpdir_guard; --trace -- COMMAND).
 * 0 or -errno; nothing is left behind on failure.
 */
int tmpdir_create(struct tmpdir *d, const char *prefix, mode_t mode);
/* Say why tmpdir_create() failed with err, in one line after "udsprobe: <who>": the directory
 * (what), or the janitor's pipe or fork (the process limit, when that is why). */
void tmpdir_say_failure(const struct tmpdir *d, const char *who, const char *what, int err);
/* Process group pgid (a server, a client and what they forked) dies with udsprobe too: if
 * udsprobe exits before tmpdir_forget(pgid), the janitor sends the group SIGTERM, SIGKILL 1 s
 * later, and then removes the directory. At most TMPDIR_GROUPS guarded at once (more are not
 * stopped). 0 or -errno (the janitor is gone). */
int tmpdir_guard(struct tmpdir *d, pid_t pgid);
/* The group has been stopped and reaped: its id may be reused, so the janitor drops it. */
void tmpdir_forget(struct tmpdir *d, pid_t pgid);
/* Remove the directory now, with everything in it (never following links or crossing
 * mounts); its janitor exits. */
void tmpdir_remove(struct tmpdir *d);

#endif
