/* SPDX-License-Identifier: GPL-2.0 */
/* Quantiles of bucketed histograms: --trace's latency buckets and --backlog's wait and depth
 * slots read the same way (layer 0). */
#ifndef UDSPROBE_HIST_H
#define UDSPROBE_HIST_H

#include <stdint.h>

/* The bucket holding the q-quantile (0..1) of counts[0..n-1], whose sum is total: the first
 * whose running count reaches ceil(q x total), at least 1; the last bucket when the counts
 * add up to less than total; -1 when total is 0. */
int hist_quantile_bucket(const uint64_t *counts, int n, uint64_t total, double q);

#endif
