#!/usr/bin/env python3
"""Two processes writing one AF_UNIX stream socket, for udsprobe --trace tests: a parent and
its forked child (comms w_par and w_kid) share one end of a socketpair and each send N
messages of SIZE bytes, one send() each, GAP seconds apart; a third process reads
everything from the other end. As a shell and its children share a journald or supervisor
stdout socket.

usage: two_senders.py N SIZE GAP
Prints one JSON line: {"messages", "size", "senders": {"w_par": PID, "w_kid": PID}, "reader_pid"}.
"""
import ctypes
import json
import os
import socket
import sys
import time

PR_SET_NAME = 15


def main():
    n, size, gap = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    a, b = socket.socketpair()
    r, w = os.pipe()
    reader = os.fork()
    if reader == 0:
        a.close()
        got = 0
        while got < 2 * n * size:
            got += len(b.recv(65536))
        os._exit(0)
    b.close()
    kid = os.fork()
    name = b"w_kid" if kid == 0 else b"w_par"
    ctypes.CDLL(None).prctl(PR_SET_NAME, name, 0, 0, 0)
    if kid == 0:
        os.close(w)
        os.read(r, 1)  # both start together
    else:
        os.close(r)
        os.write(w, b"x")
    msg = b"x" * size
    for _ in range(n):
        a.send(msg)
        if gap:
            time.sleep(gap)
    if kid == 0:
        os._exit(0)
    os.waitpid(kid, 0)
    os.waitpid(reader, 0)
    print(json.dumps({"messages": n, "size": size, "reader_pid": reader,
                      "senders": {"w_par": os.getpid(), "w_kid": kid}}), flush=True)


main()
