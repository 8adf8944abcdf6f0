// SPDX-License-Identifier: GPL-2.0
/* The --check command: what this kernel supports, each attach mode tried with the stage
 * tracer's test programs, and what each mode can see. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "attach.h"
#include "capability.h"
#include "compare.h"
#include "tracer.h"
#include "util.h"

int check_main(enum attach_mode attach, int verbose)
{
	struct attach_caps caps;
	enum attach_mode chosen;
	char why[900];
	int m, err;

	printf("kernel %s, BTF %s%s%s\n", kernel_release(),
	       kernel_has_btf() ? "present (/sys/kernel/btf/vmlinux)" : "MISSING in /sys/kernel/btf",
	       btf_file() ? "; CO-RE from --btf " : "", btf_file() ? btf_file() : "");
	if ((err = privileges_check("--check (it loads test programs)", PRIVILEGES_SETCAP)))
		return err;
	if (!kernel_has_btf() && !btf_file()) {
		say_error("%s", btf_missing_hint());
		return -ENOENT;
	}
	err = ensure_tracefs();
	printf("tracefs %s\n", err ? strerror(-err) : "mounted");
	tracer_probe(&caps, verbose);
	for (m = ATTACH_FENTRY; m < ATTACH__COUNT; m++)
		printf("%-10s %-4s %s\n", attach_mode_names[m], caps.works[m] ? "yes" : "no",
		       caps.why[m]);
	err = attach_choose(attach, attach_caps_probe, &caps, &chosen, why, sizeof(why));
	if (err) {
		printf("chosen: none: %s\n", why);
		return err;
	}
	printf("chosen: %s (%s)\n", attach_mode_names[chosen], why);
	for (m = ATTACH_FENTRY; m < ATTACH__COUNT; m++) {
		struct tracer *tr;

		if (!caps.works[m])
			continue;
		err = tracer_open(m, verbose, &tr);
		if (err)
			return err;
		printf("%s mode: %s granularity; boundaries not visible here: %s\n",
		       attach_mode_names[m], tracer_granularity(tr),
		       *tracer_missing(tr) ? tracer_missing(tr) : "none");
		tracer_close(tr);
	}
	return 0;
}
