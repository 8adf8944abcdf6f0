// SPDX-License-Identifier: GPL-2.0
/* Machine report; the schema is documented in docs/JSON.md and kept stable. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "explain.h"
#include "json_writer.h"
#include "outfile.h"
#include "reports.h"
#include "util.h"

static void latency(struct jw *w, const char *key, const struct wl_latency *l)
{
	jw_latency(w, key, l->p50, l->p90, l->p99, l->mean, true);
}

static void trace(struct jw *w, const struct trace_result *t)
{
	int i;

	latency(w, "traced_latency_ns", &t->traced.latency);
	jw_double(w, "overhead_ns", t->overhead_ns);
	jw_double(w, "overhead_pct", t->overhead_pct);
	if (t->coverage > 0)
		jw_double(w, "coverage", t->coverage);
	else
		jw_null(w, "coverage");
	jw_u64(w, "messages", t->messages);
	jw_double(w, "stage_sum_ns", t->stage_sum_ns);
	jw_double(w, "corrected_sum_ns", t->corrected_sum_ns);
	jw_double(w, "probe_hits_per_msg", t->probe_hits_per_msg);
	jw_u64(w, "misses", t->misses);
	jw_u64(w, "out_of_order", t->out_of_order);
	jw_u64(w, "kernel_misses", t->kernel_misses);
	jw_double(w, "syscall_hit_ns", t->syscall_hit_ns);
	jw_double(w, "calibrated_probe_ns", t->stage_sum_ns - t->corrected_sum_ns);
	jw_u64(w, "bulk_messages", t->bulk_messages);
	if (t->recv_calls) {
		jw_u64(w, "recv_calls", t->recv_calls);
		jw_u64(w, "xmit_calls", t->xmit_calls);
	}
	if (t->bulk_messages) {
		jw_double(w, "chunks_per_msg", t->chunks_per_msg);
		jw_u64(w, "chunks_counted", t->chunks_counted);
		jw_double(w, "sender_sleeps_per_msg", t->sleeps_per_msg);
	}
	jw_arr_begin(w, "stages");
	for (i = 0; i < t->n_stages; i++) {
		const struct stage_stat *s = &t->stages[i];

		jw_obj_begin(w, NULL);
		jw_str(w, "name", s->name);
		jw_double(w, "ns_per_msg", s->ns_per_msg);
		jw_double(w, "corrected_ns_per_msg", s->corrected_ns_per_msg);
		jw_u64(w, "count", s->count);
		jw_u64(w, "p50_ns", s->p50_ns);
		jw_u64(w, "p99_ns", s->p99_ns);
		jw_bool(w, "per_connection", s->extra);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

static void spread(struct jw *w, const char *key, const struct spread *s)
{
	jw_obj_begin(w, key);
	jw_double(w, "min", s->min);
	jw_double(w, "median", s->median);
	jw_double(w, "max", s->max);
	jw_obj_end(w);
}

/* --repeat: the result above is the median-overhead run; these are over all runs. */
static void repeat(struct jw *w, const struct transport_result *tr)
{
	jw_obj_begin(w, "repeat");
	jw_i64(w, "runs", tr->runs);
	spread(w, "untraced_ns", &tr->untraced_ns);
	if (tr->trace.valid) {
		spread(w, "traced_ns", &tr->traced_ns);
		spread(w, "overhead_pct", &tr->overhead_pct);
	}
	jw_obj_end(w);
}

static void result(struct jw *w, const struct comparison *cmp, const struct pair_result *pr,
		   const struct transport_result *tr)
{
	const struct wl_result *r = &tr->untraced;

	jw_obj_begin(w, NULL);
	jw_str(w, "transport", transport_names[tr->cfg.transport]);
	jw_str(w, "mode", mode_names[pr->mode]);
	jw_u64(w, "msg_size", pr->msg_size);
	jw_str(w, "cpu", place_names[pr->place]);
	/* --think only: the documents without it stay as they were */
	if (cmp->think && pr->mode == WL_PINGPONG)
		jw_u64(w, "think_ns", pair_think(pr));
	jw_i64(w, "client_cpu", r->client_cpu);
	jw_i64(w, "server_cpu", r->server_cpu);
	jw_u64(w, "count", r->count);
	jw_u64(w, "elapsed_ns", r->elapsed_ns);
	jw_u64(w, "strangers", transport_strangers(tr));
	if (r->has_latency)
		latency(w, "latency_ns", &r->latency);
	if (pr->mode != WL_CONNECT) {
		jw_double(w, "msgs_per_sec", r->msgs_per_sec);
		jw_double(w, "bytes_per_sec", r->bytes_per_sec);
	} else {
		jw_double(w, "conns_per_sec", r->conns_per_sec);
	}
	if (r->has_cpu) {
		/* per message (connect: connection), warm-up included (docs/JSON.md) */
		jw_obj_begin(w, "cpu_ns");
		jw_double(w, "user", r->user_ns);
		jw_double(w, "system", r->sys_ns);
		jw_double(w, "softirq", r->softirq_ns);
		jw_obj_end(w);
	}
	if (tr->trace.valid)
		trace(w, &tr->trace);
	if (tr->runs > 1)
		repeat(w, tr);
	jw_obj_end(w);
}

/* The explanation of each pair, the claims the text report prints (docs/JSON.md). */
static void explanations(struct jw *w, const struct comparison *cmp, struct claims *cl)
{
	int i;

	jw_arr_begin(w, "pairs");
	for (i = 0; i < cmp->n_pairs; i++) {
		const struct pair_result *pr = &cmp->pairs[i];

		jw_obj_begin(w, NULL);
		jw_str(w, "mode", mode_names[pr->mode]);
		jw_u64(w, "msg_size", pr->msg_size);
		jw_str(w, "cpu", place_names[pr->place]);
		if (cmp->think && pr->mode == WL_PINGPONG)
			jw_u64(w, "think_ns", pair_think(pr));
		explain_pair_claims(cmp, pr, cl);
		claims_json(w, "explanation", cl);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	explain_think_claims(cmp, memset(cl, 0, sizeof(*cl)));
	if (cl->n)
		claims_json(w, "think_explanation", cl);
}

int json_write(const struct comparison *cmp, FILE *f)
{
	struct claims *cl = calloc(1, sizeof(*cl));
	struct jw w;
	int i, t;

	if (!cl)
		return -ENOMEM;

	jw_doc_begin(&w, f);
	jw_str(&w, "attach_mode", cmp->attach_mode);
	jw_str(&w, "attach_reason", cmp->attach_reason);
	jw_str(&w, "stage_granularity", cmp->stage_granularity);
	if (cmp->attach_mode) {
		jw_double(&w, "probe_cost_ns", cmp->probe_cost_ns);
		jw_str(&w, "boundaries_missing", cmp->missing);
		jw_u64(&w, "attach_ns", cmp->attach_ns);
		jw_u64(&w, "detach_ns", cmp->detach_ns);
	}
	jw_obj_begin(&w, "cpu_placement");
	jw_u64(&w, "cpus", cmp->n_cpus);
	jw_str(&w, "cpu_model", cmp->cpu_model);
	jw_arr_begin(&w, "placements");
	for (i = 0; i < cmp->n_pairs; i++) {
		if (i && cmp->pairs[i].place == cmp->pairs[i - 1].place)
			continue;
		jw_str(&w, NULL, place_names[cmp->pairs[i].place]);
	}
	jw_arr_end(&w);
	jw_obj_end(&w);
	jw_bool(&w, "tcp_nodelay", true);
	jw_arr_begin(&w, "results");
	for (i = 0; i < cmp->n_pairs; i++)
		for (t = 0; t < TR__COUNT; t++)
			result(&w, cmp, &cmp->pairs[i], &cmp->pairs[i].tr[t]);
	jw_arr_end(&w);
	explanations(&w, cmp, cl);
	free(cl);
	jw_obj_end(&w);
	return ferror(f) ? -EIO : 0;
}

int report_json(const struct comparison *cmp, const char *path)
{
	struct outfile of;
	int err = outfile_begin(&of, "--json", path);

	if (err)
		return err;
	json_write(cmp, of.f);
	return outfile_commit(&of, 0);
}
