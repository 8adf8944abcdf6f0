/* Unix socket names as text and back (layer 0). */
#ifndef UDSPROBE_UNIX_NAME_H
#define UDSPROBE_UNIX_NAME_H

#include <stddef.h>
#include <stdint.h>

#define UNIX_NAME_LEN	108	/* sizeof(sun_path) */

/* A unix name (len bytes, abstract with its leading NUL) as text, and back (-EINVAL). */
void fmt_unix_addr(const char *path, size_t len, char *out, size_t out_len);
int parse_unix_addr(const char *arg, char *path, uint32_t *len);

#endif
