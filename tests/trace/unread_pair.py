#!/usr/bin/env python3
"""Replies a client never reads, for udsprobe --trace tests: a forked client connects and
sends one request of 32 bytes; the server reads it and answers with N replies of 100 bytes
each in its own send(), then the client, which never reads, closes its socket ("close") or
is SIGKILLed ("kill"). The server keeps its socket open until the client is gone, so the
replies are lost at the client's end only.

usage: unread_pair.py unix PATH|tcp N close|kill
Prints one JSON line: {"transport", "endpoint", "replies", "server_pid", "client_pid"}.
"""
import json
import os
import signal
import socket
import sys
import time

from pair_common import listener, recv_exactly


def main():
    kind, args = sys.argv[1], sys.argv[2:]
    srv, addr, endpoint = listener(kind, args)
    n, how = int(args[0]), args[1]
    srv.listen(1)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the client: one request, then nothing read
        srv.close()
        os.close(w)
        c = socket.socket(srv.family, socket.SOCK_STREAM)
        c.connect(addr)
        c.sendall(b"q" * 32)
        os.read(r, 1)  # the server sent every reply
        if how == "close":
            c.close()
            os._exit(0)
        time.sleep(60)  # killed first
        os._exit(1)
    os.close(r)
    conn, _ = srv.accept()
    recv_exactly(conn, 32)
    for _ in range(n):
        conn.sendall(b"r" * 100)
    if how == "close":
        os.write(w, b"x")
    else:
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    time.sleep(0.1)  # the client's socket released before this end closes
    conn.close()
    srv.close()
    print(json.dumps({"transport": kind, "endpoint": endpoint, "replies": n,
                      "server_pid": os.getpid(), "client_pid": pid}), flush=True)


main()
