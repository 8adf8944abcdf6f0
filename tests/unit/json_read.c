// SPDX-License-Identifier: GPL-2.0
/*
 * Test-only JSON reader: enough of RFC 8259 to load a report.json back into a struct
 * comparison (golden tests render the reports from a fixed document). Not used by udsprobe.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_read.h"

struct parser {
	const char *p;
	int err;
};

static void skip_ws(struct parser *ps)
{
	while (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\t' || *ps->p == '\r')
		ps->p++;
}

static struct jnode *jnew(struct parser *ps, enum jtype type)
{
	struct jnode *n = calloc(1, sizeof(*n));

	if (!n)
		ps->err = -ENOMEM;
	else
		n->type = type;
	return n;
}

static void put_utf8(char *out, size_t *n, unsigned cp)
{
	if (cp < 0x80) {
		out[(*n)++] = cp;
	} else if (cp < 0x800) {
		out[(*n)++] = 0xc0 | cp >> 6;
		out[(*n)++] = 0x80 | (cp & 0x3f);
	} else {
		out[(*n)++] = 0xe0 | cp >> 12;
		out[(*n)++] = 0x80 | ((cp >> 6) & 0x3f);
		out[(*n)++] = 0x80 | (cp & 0x3f);
	}
}

/* At the opening quote; a malloc'd string (no surrogate pairs: reports do not need them). */
static char *parse_string(struct parser *ps)
{
	const char *s = ++ps->p;
	char *out = malloc(strlen(s) + 1);
	size_t n = 0;

	if (!out) {
		ps->err = -ENOMEM;
		return NULL;
	}
	while (*s && *s != '"') {
		if (*s != '\\') {
			out[n++] = *s++;
			continue;
		}
		s++;
		switch (*s) {
		case 'n': out[n++] = '\n'; break;
		case 't': out[n++] = '\t'; break;
		case 'r': out[n++] = '\r'; break;
		case 'b': out[n++] = '\b'; break;
		case 'f': out[n++] = '\f'; break;
		case 'u': {
			unsigned cp;

			if (sscanf(s + 1, "%4x", &cp) != 1)
				goto bad;
			put_utf8(out, &n, cp);
			s += 4;
			break;
		}
		case '"': case '\\': case '/': out[n++] = *s; break;
		default: goto bad;
		}
		s++;
	}
	if (*s != '"')
		goto bad;
	out[n] = 0;
	ps->p = s + 1;
	return out;
bad:
	free(out);
	ps->err = -EINVAL;
	return NULL;
}

static struct jnode *parse_value(struct parser *ps);

/* Object members or array items, after the opening bracket. */
static struct jnode *parse_container(struct parser *ps, enum jtype type, char close)
{
	struct jnode *n = jnew(ps, type), **tail;

	if (!n)
		return NULL;
	tail = &n->child;
	ps->p++;
	skip_ws(ps);
	if (*ps->p == close) {
		ps->p++;
		return n;
	}
	for (;;) {
		char *key = NULL;
		struct jnode *v;

		skip_ws(ps);
		if (type == J_OBJECT) {
			if (*ps->p != '"' || !(key = parse_string(ps)))
				break;
			skip_ws(ps);
			if (*ps->p++ != ':') {
				free(key);
				break;
			}
		}
		v = parse_value(ps);
		if (!v) {
			free(key);
			break;
		}
		v->key = key;
		*tail = v;
		tail = &v->next;
		skip_ws(ps);
		if (*ps->p == ',') {
			ps->p++;
			continue;
		}
		if (*ps->p == close) {
			ps->p++;
			return n;
		}
		break;
	}
	if (!ps->err)
		ps->err = -EINVAL;
	jfree(n);
	return NULL;
}

static struct jnode *parse_value(struct parser *ps)
{
	struct jnode *n;
	char *end;

	skip_ws(ps);
	switch (*ps->p) {
	case '{':
		return parse_container(ps, J_OBJECT, '}');
	case '[':
		return parse_container(ps, J_ARRAY, ']');
	case '"':
		n = jnew(ps, J_STRING);
		if (n && !(n->str = parse_string(ps))) {
			free(n);
			return NULL;
		}
		return n;
	case 't': case 'f': case 'n': {
		static const struct { const char *word; enum jtype type; bool v; } lit[] = {
			{ "true", J_BOOL, true }, { "false", J_BOOL, false }, { "null", J_NULL, false },
		};
		size_t i;

		for (i = 0; i < sizeof(lit) / sizeof(lit[0]); i++)
			if (!strncmp(ps->p, lit[i].word, strlen(lit[i].word))) {
				ps->p += strlen(lit[i].word);
				n = jnew(ps, lit[i].type);
				if (n)
					n->boolean = lit[i].v;
				return n;
			}
		break;
	}
	default:
		n = jnew(ps, J_NUMBER);
		if (!n)
			return NULL;
		n->num = strtod(ps->p, &end);
		if (end != ps->p) {
			ps->p = end;
			return n;
		}
		free(n);
	}
	ps->err = -EINVAL;
	return NULL;
}

int jparse(const char *text, struct jnode **out)
{
	struct parser ps = { .p = text };

	*out = parse_value(&ps);
	if (*out) {
		skip_ws(&ps);
		if (*ps.p) {
			jfree(*out);
			*out = NULL;
			return -EINVAL;
		}
		return 0;
	}
	return ps.err ? ps.err : -EINVAL;
}

void jfree(struct jnode *n)
{
	while (n) {
		struct jnode *next = n->next;

		jfree(n->child);
		free(n->key);
		free(n->str);
		free(n);
		n = next;
	}
}

const struct jnode *jget(const struct jnode *obj, const char *key)
{
	const struct jnode *c;

	if (!obj || obj->type != J_OBJECT)
		return NULL;
	for (c = obj->child; c; c = c->next)
		if (!strcmp(c->key, key))
			return c;
	return NULL;
}

double jnum(const struct jnode *obj, const char *key, double dflt)
{
	const struct jnode *n = jget(obj, key);

	return n && n->type == J_NUMBER ? n->num : dflt;
}

const char *jstr(const struct jnode *obj, const char *key)
{
	const struct jnode *n = jget(obj, key);

	return n && n->type == J_STRING ? n->str : NULL;
}
