// SPDX-License-Identifier: GPL-2.0
/* user/lib/json_writer.c: escaping, nesting, commas, compact and pretty layout. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "json_writer.h"
#include "unit.h"

/* A writer into memory; jw_done() returns the text (free it). */
struct mem {
	struct jw w;
	FILE *f;
	char *buf;
	size_t len;
};

static struct jw *mem_open(struct mem *m, bool pretty)
{
	m->buf = NULL;
	m->len = 0;
	m->f = open_memstream(&m->buf, &m->len);
	REQUIRE(m->f != NULL);
	jw_init(&m->w, m->f, pretty);
	return &m->w;
}

static const char *mem_text(struct mem *m)
{
	fclose(m->f);
	return m->buf;
}

TEST(json_empty_containers)
{
	struct mem m;
	struct jw *w = mem_open(&m, false);

	jw_obj_begin(w, NULL);
	jw_obj_begin(w, "o");
	jw_obj_end(w);
	jw_arr_begin(w, "a");
	jw_arr_end(w);
	jw_obj_end(w);
	CHECK_STR(mem_text(&m), "{\"o\":{},\"a\":[]}\n");
	free(m.buf);

	w = mem_open(&m, true);
	jw_arr_begin(w, NULL);
	jw_arr_end(w);
	CHECK_STR(mem_text(&m), "[]\n");
	free(m.buf);
}

TEST(json_scalars_and_commas)
{
	struct mem m;
	struct jw *w = mem_open(&m, false);

	jw_obj_begin(w, NULL);
	jw_str(w, "s", "x");
	jw_str(w, "n", NULL);
	jw_u64(w, "u", 18446744073709551615ull);
	jw_i64(w, "i", -5);
	jw_i64(w, "imin", INT64_MIN);
	jw_bool(w, "t", true);
	jw_bool(w, "f", false);
	jw_null(w, "z");
	jw_obj_end(w);
	CHECK_STR(mem_text(&m),
		  "{\"s\":\"x\",\"n\":null,\"u\":18446744073709551615,\"i\":-5,"
		  "\"imin\":-9223372036854775808,\"t\":true,\"f\":false,\"z\":null}\n");
	free(m.buf);
}

TEST(json_doubles)
{
	struct mem m;
	struct jw *w = mem_open(&m, false);

	jw_arr_begin(w, NULL);
	jw_double(w, NULL, 1.5);
	jw_double(w, NULL, 0);
	jw_double(w, NULL, -2.25);
	jw_double(w, NULL, 1720000);
	jw_double(w, NULL, 1383712.4);	/* every integer digit kept: a ns value exact to 1 ns */
	jw_double(w, NULL, -999999.7);
	jw_double(w, NULL, 123456.7);
	jw_double(w, NULL, 2e15);
	jw_double(w, NULL, NAN);	/* JSON has no NaN or Infinity */
	jw_double(w, NULL, INFINITY);
	jw_double(w, NULL, -INFINITY);
	jw_arr_end(w);
	CHECK_STR(mem_text(&m), "[1.5,0,-2.25,1720000,1383712,-1000000,123457,2e+15,null,null,null]\n");
	free(m.buf);
}

TEST(json_nesting)
{
	struct mem m;
	struct jw *w = mem_open(&m, false);

	jw_obj_begin(w, NULL);
	jw_arr_begin(w, "results");
	jw_obj_begin(w, NULL);
	jw_str(w, "transport", "unix");
	jw_obj_begin(w, "latency_ns");
	jw_u64(w, "p50", 1);
	jw_u64(w, "p99", 2);
	jw_obj_end(w);
	jw_obj_end(w);
	jw_obj_begin(w, NULL);
	jw_str(w, "transport", "tcp");
	jw_obj_end(w);
	jw_arr_end(w);
	jw_arr_begin(w, "x");
	jw_arr_begin(w, NULL);
	jw_u64(w, NULL, 1);
	jw_arr_end(w);
	jw_arr_begin(w, NULL);
	jw_arr_end(w);
	jw_u64(w, NULL, 2);
	jw_arr_end(w);
	jw_u64(w, "after", 3);
	jw_obj_end(w);
	CHECK_STR(mem_text(&m),
		  "{\"results\":[{\"transport\":\"unix\",\"latency_ns\":{\"p50\":1,\"p99\":2}},"
		  "{\"transport\":\"tcp\"}],\"x\":[[1],[],2],\"after\":3}\n");
	free(m.buf);
}

TEST(json_pretty_layout)
{
	struct mem m;
	struct jw *w = mem_open(&m, true);

	jw_obj_begin(w, NULL);
	jw_u64(w, "a", 1);
	jw_arr_begin(w, "b");
	jw_u64(w, NULL, 2);
	jw_str(w, NULL, "c");
	jw_arr_end(w);
	jw_obj_begin(w, "d");
	jw_obj_end(w);
	jw_obj_begin(w, "e");
	jw_bool(w, "f", true);
	jw_obj_end(w);
	jw_obj_end(w);
	CHECK_STR(mem_text(&m),
		  "{\n"
		  "  \"a\": 1,\n"
		  "  \"b\": [\n"
		  "    2,\n"
		  "    \"c\"\n"
		  "  ],\n"
		  "  \"d\": {},\n"
		  "  \"e\": {\n"
		  "    \"f\": true\n"
		  "  }\n"
		  "}\n");
	free(m.buf);
}

TEST(json_escaping)
{
	struct mem m;
	struct jw *w = mem_open(&m, false);

	jw_obj_begin(w, NULL);
	jw_str(w, "q", "say \"hi\"");
	jw_str(w, "bs", "C:\\path");
	jw_str(w, "ctl", "a\nb\tc\rd\x01" "e\x1f" "f");
	jw_str(w, "slash", "a/b");	/* '/' may stay as is */
	jw_str(w, "utf8", "1.2 \xc2\xb5s");	/* UTF-8 passes through unchanged */
	jw_str(w, "del", "\x7f");	/* DEL is legal unescaped */
	jw_str(w, "empty", "");
	jw_str(w, "key \"with\" quote\n", "v");
	jw_obj_end(w);
	CHECK_STR(mem_text(&m),
		  "{\"q\":\"say \\\"hi\\\"\",\"bs\":\"C:\\\\path\","
		  "\"ctl\":\"a\\nb\\tc\\u000dd\\u0001e\\u001ff\",\"slash\":\"a/b\","
		  "\"utf8\":\"1.2 \xc2\xb5s\",\"del\":\"\x7f\",\"empty\":\"\","
		  "\"key \\\"with\\\" quote\\n\":\"v\"}\n");
	free(m.buf);
}

TEST(json_deep_nesting_is_bounded)
{
	struct mem m;
	struct jw *w = mem_open(&m, false);
	int i;

	/* deeper than JW_MAX_DEPTH: the output is wrong but the writer must not overrun */
	for (i = 0; i < JW_MAX_DEPTH + 4; i++)
		jw_arr_begin(w, NULL);
	for (i = 0; i < JW_MAX_DEPTH + 4; i++)
		jw_arr_end(w);
	CHECK(w->depth == 0);
	mem_text(&m);
	free(m.buf);

	w = mem_open(&m, false);
	for (i = 0; i < JW_MAX_DEPTH - 1; i++)
		jw_arr_begin(w, NULL);
	for (i = 0; i < JW_MAX_DEPTH - 1; i++)
		jw_arr_end(w);
	CHECK_STR(mem_text(&m), "[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]\n");
	free(m.buf);
}
