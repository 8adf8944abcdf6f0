#!/usr/bin/env python3
"""Other programs' large sends beside a trace: PAIRS socketpairs, each a writer sending
256 KiB messages to a reader that drains 8 KiB every 2 ms, so each send sleeps for buffer
space and goes on in chunks for about 70 ms, one after another, for SECONDS. Prints "ready"
0.2 s after forking them (their first sends under way by then). Its own process group: killed
with it.

usage: bulk_hogs.py PAIRS SECONDS
"""
import os
import socket
import sys
import time


def hog(until):
    a, b = socket.socketpair()
    if os.fork() == 0:
        a.close()
        while time.monotonic() < until + 1 and b.recv(8192):
            time.sleep(0.002)
        os._exit(0)
    b.close()
    try:
        while time.monotonic() < until:
            a.sendall(b"h" * 262144)
    except OSError:  # the reader gone first
        pass
    a.close()
    os._exit(0)


def main():
    pairs, until = int(sys.argv[1]), time.monotonic() + float(sys.argv[2])
    kids = []
    for _ in range(pairs):
        pid = os.fork()
        if pid == 0:
            hog(until)
        kids.append(pid)
    time.sleep(0.2)
    print("ready", flush=True)
    for pid in kids:
        os.waitpid(pid, 0)


main()
