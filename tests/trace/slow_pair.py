#!/usr/bin/env python3
"""A lock-step pair for udsprobe --trace --slower-than tests: a client sends M messages to a
server, each answered by a 1-byte ack before the next; before reading the messages whose
numbers are in DELAYED the server sleeps DELAY_MS first, so exactly those messages are slow.

usage: slow_pair.py unix PATH|tcp M DELAYED DELAY_MS [SIZE]
    DELAYED: comma-separated message numbers (0-based). A delayed message i is 3000 + i
    bytes long, every other one SIZE bytes (200), so each outlier can be told by its size.
Prints one JSON line: {"transport", "endpoint", "messages", "delayed": {i: bytes},
"server_pid", "client_pid"}.
"""
import json
import os
import socket
import sys
import time

from pair_common import listener, recv_exactly


SIZE = 200  # every message not delayed, unless SIZE is given


def size_of(i, delayed, size=SIZE):
    return 3000 + i if i in delayed else size


def main():
    kind = sys.argv[1]
    args = sys.argv[2:]
    srv, addr, endpoint = listener(kind, args)
    m, delay = int(args[0]), int(args[2]) / 1000.0
    delayed = {int(x) for x in args[1].split(",") if x}
    size = int(args[3]) if len(args) > 3 else SIZE
    srv.listen(1)
    pid = os.fork()
    if pid == 0:  # the client
        srv.close()
        c = socket.socket(srv.family, socket.SOCK_STREAM)
        c.connect(addr)
        for i in range(m):
            c.sendall(b"m" * size_of(i, delayed, size))
            recv_exactly(c, 1)
        c.close()
        os._exit(0)
    conn, _ = srv.accept()
    for i in range(m):
        if i in delayed:
            time.sleep(delay)
        recv_exactly(conn, size_of(i, delayed, size))
        conn.sendall(b"a")
    _, status = os.waitpid(pid, 0)
    conn.close()
    srv.close()
    print(json.dumps({"transport": kind, "endpoint": endpoint, "messages": m,
                      "delayed": {str(i): size_of(i, delayed) for i in sorted(delayed)},
                      "server_pid": os.getpid(), "client_pid": pid}), flush=True)
    sys.exit(os.waitstatus_to_exitcode(status))


main()
