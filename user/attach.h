/* Attach-mode detection and the choice between fentry, kprobe and tracepoint. */
#ifndef UDSPROBE_ATTACH_H
#define UDSPROBE_ATTACH_H

#include <stdbool.h>
#include <stdio.h>

enum attach_mode { ATTACH_AUTO, ATTACH_FENTRY, ATTACH_KPROBE, ATTACH_TRACEPOINT, ATTACH__COUNT };

extern const char *const attach_mode_names[ATTACH__COUNT];

struct attach_caps {
	bool works[ATTACH__COUNT];
	char why[ATTACH__COUNT][200];	/* why a mode works or was rejected */
};

/* Parse "auto|fentry|kprobe|tracepoint"; -1 if unknown. */
int attach_mode_parse(const char *s);
/* Probe for real: load and attach a tiny program per mode. */
void attach_probe(struct attach_caps *caps, int verbose);
/* Pick the mode: the preferred one that works, or the forced one. 0 or -errno
 * (the reason is in *why). */
int attach_choose(const struct attach_caps *caps, enum attach_mode req, enum attach_mode *out,
		  char *why, size_t len);

/* Kernel symbol lookups used to enable programs per function. */
bool ksym_resolve(const char *func, char *out, size_t len);	/* handles .constprop/.isra */
bool btf_has_func(const char *func);
bool btf_has_tracepoint(const char *tp);

/* libbpf output through our verbosity */
void libbpf_setup(int verbose);

#endif
