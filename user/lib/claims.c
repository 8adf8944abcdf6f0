// SPDX-License-Identifier: GPL-2.0
/*
 * The explanation as a list of claims: each sentence is kept with its kind and the numbers it
 * rests on, so every output renders the same list and a test can re-derive each claim.
 */
#include <stdarg.h>
#include <string.h>

#include "claims.h"

struct claim *claim_add(struct claims *cl, const char *kind, const char *fmt, ...)
{
	struct claim *c = cl->n < CLAIM_MAX ? &cl->c[cl->n++] : &cl->spill;
	va_list ap;

	memset(c, 0, sizeof(*c));
	c->kind = kind;
	va_start(ap, fmt);
	vsnprintf(c->text, sizeof(c->text), fmt, ap);
	va_end(ap);
	return c;
}

void claim_more(struct claim *c, const char *fmt, ...)
{
	size_t n = strlen(c->text);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->text + n, sizeof(c->text) - n, fmt, ap);
	va_end(ap);
}

static struct claim_value *value_slot(struct claim *c, const char *key, enum claim_type type)
{
	struct claim_value *v;

	if (c->n_values >= CLAIM_VALUES)
		return NULL;
	v = &c->v[c->n_values++];
	memset(v, 0, sizeof(*v));
	snprintf(v->key, sizeof(v->key), "%s", key);
	v->type = type;
	return v;
}

void claim_num(struct claim *c, const char *key, double num)
{
	struct claim_value *v = value_slot(c, key, CV_NUM);

	if (v)
		v->num = num;
}

void claim_str(struct claim *c, const char *key, const char *s)
{
	struct claim_value *v = value_slot(c, key, CV_STR);

	if (v)
		snprintf(v->str, sizeof(v->str), "%s", s);
}

void claim_bool(struct claim *c, const char *key, bool b)
{
	struct claim_value *v = value_slot(c, key, CV_BOOL);

	if (v)
		v->num = b;
}

const struct claim_value *claim_get(const struct claim *c, const char *key)
{
	int i;

	for (i = 0; i < c->n_values; i++)
		if (!strcmp(c->v[i].key, key))
			return &c->v[i];
	return NULL;
}

void claims_print(const struct claims *cl, FILE *f)
{
	int i;

	for (i = 0; i < cl->n; i++)
		fprintf(f, "%s\n", cl->c[i].text);
}

void claims_json(struct jw *w, const char *key, const struct claims *cl)
{
	int i, k;

	jw_arr_begin(w, key);
	for (i = 0; i < cl->n; i++) {
		const struct claim *c = &cl->c[i];

		jw_obj_begin(w, NULL);
		jw_str(w, "kind", c->kind);
		jw_str(w, "text", c->text);
		jw_obj_begin(w, "values");
		for (k = 0; k < c->n_values; k++) {
			const struct claim_value *v = &c->v[k];

			if (v->type == CV_STR)
				jw_str(w, v->key, v->str);
			else if (v->type == CV_BOOL)
				jw_bool(w, v->key, v->num != 0);
			else
				jw_double(w, v->key, v->num);
		}
		jw_obj_end(w);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}
