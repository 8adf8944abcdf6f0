#!/usr/bin/env python3
"""Many short-lived AF_UNIX endpoints for udsprobe --trace tests: N listeners at distinct
paths in DIR, each with one connection and one message each way, then closed.

usage: many_endpoints.py DIR N
"""
import os
import socket
import sys


def main():
    d, n = sys.argv[1], int(sys.argv[2])
    os.makedirs(d, exist_ok=True)
    for i in range(n):
        path = os.path.join(d, f"e{i}.sock")
        with socket.socket(socket.AF_UNIX) as lst:
            lst.bind(path)
            lst.listen(1)
            with socket.socket(socket.AF_UNIX) as c:
                c.connect(path)
                a, _ = lst.accept()
                with a:
                    c.sendall(b"q")
                    a.recv(1)
                    a.sendall(b"r")
                    c.recv(1)
        os.unlink(path)


if __name__ == "__main__":
    main()
