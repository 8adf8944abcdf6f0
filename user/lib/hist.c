// SPDX-License-Identifier: GPL-2.0
#include "hist.h"

int hist_quantile_bucket(const uint64_t *counts, int n, uint64_t total, double q)
{
	uint64_t rank = (uint64_t)(q * total + 0.999999), seen = 0;
	int i;

	if (!total)
		return -1;
	rank = rank ? rank : 1;
	for (i = 0; i < n; i++) {
		seen += counts[i];
		if (seen >= rank)
			return i;
	}
	return n - 1;
}
