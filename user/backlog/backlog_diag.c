// SPDX-License-Identifier: GPL-2.0
/*
 * --backlog: the AF_UNIX listeners and their accept-queue depth from
 * NETLINK_SOCK_DIAG (unix_diag), where the kernel has no iter/unix (before
 * 5.17). One dump per call: states 1 << TCP_LISTEN, with the name, the VFS
 * identity and the queue lengths. For a listener, net/unix/diag.c's
 * sk_diag_show_rqlen() puts sk_receive_queue's length (connections queued,
 * not yet accepted) in udiag_rqueue and sk_max_ack_backlog in udiag_wqueue:
 * the same two numbers iter_unix (bpf/backlog.bpf.c) reads.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>

#include "backlog_diag.h"

#define TCP_LISTEN_STATE	10	/* include/net/tcp_states.h */
#define DIAG_BUF		32768	/* ss(8)'s size; a dump message never spans two reads */

/* One unix_diag_msg and its attributes -> r; false if it is not a listener record. */
static bool parse_msg(const struct nlmsghdr *h, uint32_t netns, struct bl_listener *r)
{
	const struct unix_diag_msg *m = NLMSG_DATA(h);
	const struct rtattr *a;
	int len = h->nlmsg_len - NLMSG_LENGTH(sizeof(*m));
	bool rqlen = false;

	if (len < 0 || m->udiag_family != AF_UNIX || m->udiag_state != TCP_LISTEN_STATE)
		return false;
	memset(r, 0, sizeof(*r));
	r->family = BL_UNIX;
	r->ino = m->udiag_ino;
	r->netns = netns;
	for (a = (const struct rtattr *)(m + 1); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		size_t n = RTA_PAYLOAD(a);

		switch (a->rta_type) {
		case UNIX_DIAG_NAME:	/* sun_path bytes: abstract ones start with a NUL */
			r->path_len = n < BL_PATH_LEN ? n : BL_PATH_LEN;
			memcpy(r->path, RTA_DATA(a), r->path_len);
			break;
		case UNIX_DIAG_VFS:
			if (n >= sizeof(struct unix_diag_vfs)) {
				const struct unix_diag_vfs *v = RTA_DATA(a);

				r->file_ino = v->udiag_vfs_ino;
				r->file_dev = v->udiag_vfs_dev;	/* the kernel's dev_t, as the iterator's */
			}
			break;
		case UNIX_DIAG_RQLEN:
			if (n >= sizeof(struct unix_diag_rqlen)) {
				const struct unix_diag_rqlen *q = RTA_DATA(a);

				r->qlen = q->udiag_rqueue;
				r->limit = q->udiag_wqueue;
				rqlen = true;
			}
			break;
		}
	}
	return rqlen;
}

int bl_diag_unix_listeners(uint32_t netns, void (*fn)(void *ctx, const struct bl_listener *r),
			   void *ctx)
{
	static const uint32_t seq = 0x75647362;	/* "udsb" */
	struct {
		struct nlmsghdr h;
		struct unix_diag_req r;
	} req = {
		.h = { .nlmsg_len = sizeof(req), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
		       .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = seq },
		.r = { .sdiag_family = AF_UNIX, .udiag_states = 1u << TCP_LISTEN_STATE,
		       .udiag_show = UDIAG_SHOW_NAME | UDIAG_SHOW_VFS | UDIAG_SHOW_RQLEN },
	};
	struct sockaddr_nl kernel = { .nl_family = AF_NETLINK };
	static char buf[DIAG_BUF] __attribute__((aligned(NLMSG_ALIGNTO)));
	struct bl_listener rec;
	int fd, err = 0;
	bool done = false;

	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return -errno;
	if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&kernel, sizeof(kernel)) < 0) {
		err = -errno;
		goto out;
	}
	while (!done) {
		struct iovec iov = { buf, sizeof(buf) };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
		const struct nlmsghdr *h;
		ssize_t got = recvmsg(fd, &msg, 0);
		int len;

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			err = -errno;
			goto out;
		}
		if (got == 0 || (msg.msg_flags & MSG_TRUNC)) {
			err = got ? -EMSGSIZE : -EPROTO;
			goto out;
		}
		len = got;
		for (h = (const struct nlmsghdr *)buf; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_seq != seq)
				continue;
			if (h->nlmsg_type == NLMSG_DONE) {
				done = true;
				break;
			}
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);

				if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*e)))
					err = -EPROTO;
				else
					err = e->error;	/* 0: an acknowledgement, the end */
				goto out;
			}
			if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY && parse_msg(h, netns, &rec))
				fn(ctx, &rec);
		}
	}
out:
	close(fd);
	return err;
}
