// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "util.h"

/* Defaults sized so that plain --compare finishes in about 15 s on a 2-vCPU VM. */
uint64_t default_count(enum wl_mode mode)
{
	switch (mode) {
	case WL_PINGPONG: return 20000;
	case WL_STREAM: return 200000;
	case WL_CONNECT: return 4000;
	default: return 1000;
	}
}

uint64_t default_warmup(enum wl_mode mode, uint64_t count)
{
	/* enough to fault in buffers, fill caches and settle TCP's window; count/10 at most */
	uint64_t w = mode == WL_CONNECT ? 200 : 1000;

	return count ? MIN(w, MAX(count / 10, 1)) : w;
}

static void read_cpu_model(char *buf, size_t len)
{
	char line[256];
	FILE *f = fopen("/proc/cpuinfo", "r");

	snprintf(buf, len, "unknown");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (strncmp(line, "model name", 10) || !colon)
			continue;
		colon += 2;
		colon[strcspn(colon, "\n")] = 0;
		snprintf(buf, len, "%s", colon);
		break;
	}
	fclose(f);
}

int compare_run(const struct compare_opts *opts, struct comparison *cmp)
{
	char sockdir[64];
	int m, s, p, t, n = 0, total = 0, err;

	memset(cmp, 0, sizeof(*cmp));
	cmp->n_cpus = allowed_cpu_count();
	read_cpu_model(cmp->cpu_model, sizeof(cmp->cpu_model));
	for (m = 0; m < WL__COUNT; m++)
		for (p = 0; p < CPU__COUNT; p++)
			total += opts->modes[m] && opts->places[p] ? opts->n_sizes : 0;
	cmp->pairs = calloc(total, sizeof(*cmp->pairs));
	if (!cmp->pairs)
		return -ENOMEM;

	err = sockdir_create(sockdir, sizeof(sockdir));
	if (err) {
		fprintf(stderr, "udsprobe: cannot create a private socket directory in /tmp: %s\n",
			strerror(-err));
		return err;
	}
	for (p = 0; p < CPU__COUNT; p++) {
		for (m = 0; m < WL__COUNT; m++) {
			if (!opts->places[p] || !opts->modes[m])
				continue;
			for (s = 0; s < opts->n_sizes; s++) {
				struct pair_result *pr = &cmp->pairs[n];

				pr->mode = m;
				pr->msg_size = opts->sizes[s];
				pr->place = p;
				for (t = 0; t < TR__COUNT; t++) {
					struct transport_result *tr = &pr->tr[t];
					uint64_t count = opts->count;

					if (!count && !opts->duration_s)
						count = default_count(m);
					tr->cfg = (struct wl_config){
						.transport = t, .mode = m, .msg_size = opts->sizes[s],
						.count = count, .duration_s = opts->duration_s,
						.warmup = opts->warmup == UINT64_MAX ?
							default_warmup(m, count) : opts->warmup,
						.place = p, .sock_dir = sockdir,
					};
					if (!opts->quiet)
						fprintf(stderr, "udsprobe: [%d/%d] %-8s %-5s %7llu B cpu=%s untraced\n",
							n + 1, total, mode_names[m], transport_names[t],
							(unsigned long long)opts->sizes[s], place_names[p]);
					err = workload_run(&tr->cfg, NULL, &tr->untraced);
					if (err)
						goto out;
				}
				cmp->n_pairs = ++n;
			}
		}
	}
out:
	sockdir_remove(sockdir);
	return err;
}

void comparison_free(struct comparison *cmp)
{
	free(cmp->pairs);
	cmp->pairs = NULL;
	cmp->n_pairs = 0;
}
