/* --backlog: AF_UNIX listeners from NETLINK_SOCK_DIAG, for kernels without iter/unix (layer 3). */
#ifndef UDSPROBE_BACKLOG_DIAG_H
#define UDSPROBE_BACKLOG_DIAG_H

#include <stdint.h>
#include <linux/types.h>

#include "../bpf/backlog.h"

/*
 * Every AF_UNIX socket in TCP_LISTEN state of the caller's network namespace, as
 * unix_diag dumps it, handed to fn() one at a time in the iterator's record form:
 * family BL_UNIX, ino, path/path_len (sun_path bytes as the kernel keeps them),
 * qlen (accept queue length) and limit (sk_max_ack_backlog) from UNIX_DIAG_RQLEN,
 * file_ino/file_dev from UNIX_DIAG_VFS for a pathname, netns = the netns argument.
 * sk and drops stay 0 (sock_diag does not show them). 0, or -errno (socket,
 * send or receive failed, a malformed or NLMSG_ERROR answer).
 */
int bl_diag_unix_listeners(uint32_t netns, void (*fn)(void *ctx, const struct bl_listener *r),
			   void *ctx);

#endif
