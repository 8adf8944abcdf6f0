/* The files one run writes into an --out directory (layer 0). */
#ifndef UDSPROBE_OUT_SET_H
#define UDSPROBE_OUT_SET_H

#include <stdbool.h>
#include <stdio.h>

struct outdir;

#define OUT_NAME_LEN 96	/* a file name in the directory, with its NUL */

/*
 * For every action's directory: begin reads the previous run's manifest; each write goes
 * through outfile.c and is recorded (fn returning -ENODATA: nothing to write, no file, not an
 * error); end removes the previous run's files this run did not rewrite, writes the manifest
 * and frees the set. A name must be one our_name() in out_set.c knows.
 */
struct out_set;
typedef int (*out_write_fn)(FILE *f, const void *ctx, int arg);
struct out_set *out_set_begin(struct outdir *od);	/* NULL: out of memory (said) */
int out_set_write(struct out_set *s, const char *name, out_write_fn fn, const void *ctx,
		  int arg);
bool out_set_has(const struct out_set *s, const char *name);
int out_set_end(struct out_set *s);

#endif
