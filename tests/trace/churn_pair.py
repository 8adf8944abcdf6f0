#!/usr/bin/env python3
"""A connection per request, as nginx -> php-fpm over FastCGI does it, for udsprobe --trace
tests: a forked client connects N times, each time sends one request of SIZE bytes in one
send() and reads the reply; the server reads each request as php-fpm does (an 8-byte header,
then the rest), answers with one send() of REPLY bytes and closes first. Socket objects are
freed and reused from one connection to the next, and the server often reads before the
client's send() has returned: the cases the matching must survive. The client and the server
are named churn_cli and churn_srv (comm), so that each direction is its own flow.

usage: churn_pair.py unix PATH|tcp N SIZE REPLY
Prints one JSON line: {"transport", "endpoint", "requests", "server_pid", "client_pid"}.
"""
import ctypes
import json
import os
import socket
import sys

from pair_common import listener, recv_exactly

PR_SET_NAME = 15


def main():
    kind, args = sys.argv[1], sys.argv[2:]
    srv, addr, endpoint = listener(kind, args)
    n, size, reply = int(args[0]), int(args[1]), int(args[2])
    srv.listen(128)
    pid = os.fork()
    ctypes.CDLL(None).prctl(PR_SET_NAME, b"churn_cli" if pid == 0 else b"churn_srv", 0, 0, 0)
    if pid == 0:  # the client
        srv.close()
        for _ in range(n):
            c = socket.socket(srv.family, socket.SOCK_STREAM)
            c.connect(addr)
            c.sendall(b"q" * size)
            recv_exactly(c, reply)
            c.close()
        os._exit(0)
    for _ in range(n):
        conn, _ = srv.accept()
        recv_exactly(conn, 8)
        recv_exactly(conn, size - 8)
        conn.sendall(b"r" * reply)
        conn.close()
    _, status = os.waitpid(pid, 0)
    srv.close()
    print(json.dumps({"transport": kind, "endpoint": endpoint, "requests": n,
                      "server_pid": os.getpid(), "client_pid": pid}), flush=True)
    sys.exit(os.waitstatus_to_exitcode(status))


main()
