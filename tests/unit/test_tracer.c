// SPDX-License-Identifier: GPL-2.0
/*
 * The tracer's programs come from skeleton fields (tracer_progs.c): each mode's list holds
 * programs of that mode's kind on the target it names, and together the lists and the
 * calibration probes cover every program of stages.bpf.c (none forgotten when one is added).
 * Opens the skeleton only: no load, no root.
 */
#include <stdio.h>
#include <string.h>

#include "unit.h"
#include <bpf/libbpf.h>

#include "tracer_int.h"
#include "stages.skel.h"
#include "util.h"

/* "?fentry/tcp_sendmsg" -> kind "fentry/", target "tcp_sendmsg" */
static bool section_is(const struct bpf_program *prog, const char *kind, const char *target)
{
	const char *sec = bpf_program__section_name(prog);

	sec += *sec == '?';
	if (strncmp(sec, kind, strlen(kind)))
		return false;
	return !target || !strcmp(sec + strlen(kind), target);
}

TEST(tracer_mode_programs_by_skeleton_field)
{
	static const struct {
		enum attach_mode mode;
		const char *entry, *ret;	/* section kinds of the mode's own programs */
		enum prog_attach how, how_ret;
	} modes[] = {
		{ ATTACH_FENTRY, "fentry/", "fexit/", PA_SECTION, PA_SECTION },
		{ ATTACH_KPROBE, "kprobe/", "kretprobe/", PA_KPROBE, PA_KRETPROBE },
		{ ATTACH_TRACEPOINT, "tp_btf/", "tp_btf/", PA_SECTION, PA_SECTION },
	};
	struct stages_bpf *skel = stages_bpf__open();
	struct stage_prog p[MAX_STAGE_PROGS];
	struct bpf_program *prog;
	size_t m;
	int i, n, own_btf, listed;

	REQUIRE(skel != NULL);
	for (m = 0; m < ARRAY_SIZE(modes); m++) {
		for (own_btf = 0; own_btf < 2; own_btf++) {
			n = tracer_mode_programs(skel, modes[m].mode, own_btf, p, MAX_STAGE_PROGS);
			CHECK(n > 3 && n < MAX_STAGE_PROGS);	/* not cut off at max */
			for (i = 0; i < n; i++) {
				REQUIRE(p[i].prog != NULL);
				CHECK(p[i].link == NULL);
				if (!p[i].target) {	/* syscalls and scheduler, on both paths */
					CHECK(p[i].every_path && p[i].how == PA_SECTION);
					CHECK(section_is(p[i].prog, own_btf ? "tp_btf/" : "raw_tp/", NULL));
					continue;
				}
				CHECK(section_is(p[i].prog, modes[m].entry, p[i].target) ||
				      section_is(p[i].prog, modes[m].ret, p[i].target));
				CHECK(p[i].how == (section_is(p[i].prog, modes[m].ret, NULL) &&
						   strcmp(modes[m].entry, modes[m].ret) ?
						   modes[m].how_ret : modes[m].how));
			}
		}
		prog = tracer_calib_program(skel, modes[m].mode);
		REQUIRE(prog != NULL);
		CHECK(section_is(prog, modes[m].entry, NULL));
	}
	CHECK(tracer_calib_program(skel, ATTACH_AUTO) == NULL);

	/* every program of the object is in a list or is a calibration probe */
	bpf_object__for_each_program(prog, skel->obj) {
		listed = 0;
		for (m = 0; m < ARRAY_SIZE(modes); m++) {
			listed += tracer_calib_program(skel, modes[m].mode) == prog;
			for (own_btf = 0; own_btf < 2; own_btf++) {
				n = tracer_mode_programs(skel, modes[m].mode, own_btf, p, MAX_STAGE_PROGS);
				for (i = 0; i < n; i++)
					listed += p[i].prog == prog;
			}
		}
		if (!listed)
			unit_fail(__FILE__, __LINE__, "%s (%s) is in no mode's list in tracer_progs.c",
				  bpf_program__name(prog), bpf_program__section_name(prog));
	}
	stages_bpf__destroy(skel);
}
