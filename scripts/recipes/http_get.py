#!/usr/bin/env python3
"""GET a URL N times over one keep-alive HTTP/1.1 connection and print the rate: the client of
the nginx -> php-fpm recipe (docs/RECIPES.md). Retries the first connect for up to 10 s (nginx
may still be starting). Exit 1 on any non-200 answer.

    http_get.py URL N
"""
import http.client
import sys
import time
import urllib.parse


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().split("\n")[-1].strip())
    url, n = urllib.parse.urlsplit(sys.argv[1]), int(sys.argv[2])
    path = url.path + ("?" + url.query if url.query else "")
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    deadline = time.time() + 10
    while True:
        try:
            conn.connect()
            break
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.05)
    t0 = time.perf_counter()
    for _ in range(n):
        conn.request("GET", path)
        r = conn.getresponse()
        body = r.read()
        if r.status != 200:
            sys.exit(f"http_get.py: {r.status} {r.reason}: {body[:200]!r}")
    dt = time.perf_counter() - t0
    print(f"{n} requests in {dt:.3f} s: {n / dt:.0f} requests/s, {dt / n * 1e6:.1f} us per request")


if __name__ == "__main__":
    main()
