#!/usr/bin/env python3
"""Prediction from TCP alone, against the switch (docs/PREDICT.md, issue 30's criterion).

Every recipe of docs/RECIPES.md, BENCH_REPS times (default 5) as written there: --compare of
programs runs the unix client, then the TCP client, each traced (--detail BENCH_DETAIL, default
syscall: --trace's default); the TCP run's --if-unix
prediction of each busy direction is set beside the latency the unix run measured. One fresh
calibration first, in a cache of this run (never /var/cache). Per direction: the medians over
the runs of the TCP latency, the predicted unix latency and its range, and the measured unix
latency; the error of the median prediction against the median measured; and the issue's
criterion: within 25 % and inside the (median) predicted range.
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import cpu_name, log, load1  # noqa: E402

REPO = Path(os.environ.get("REPO", Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(REPO / "scripts" / "recipes"))
import recipes as recipes_mod  # noqa: E402

UDSPROBE = os.environ.get("UDSPROBE", str(REPO / "udsprobe"))
REPS = int(os.environ.get("BENCH_REPS", "2" if os.environ.get("BENCH_QUICK") else "5"))
# --trace's default: as many probe hits per message on TCP as on UDS (docs/PREDICT.md)
DETAIL = os.environ.get("BENCH_DETAIL", "syscall")
GO = shutil.which("go") or ("/usr/local/go/bin/go" if os.access("/usr/local/go/bin/go", os.X_OK)
                            else None)
# the two directions of each recipe's busiest pair
PAIRS = {"python-connect": ("python3", "python3"), "go-pingpong": ("gopingpong.test",) * 2,
         "nginx-php-fpm": ("nginx", "php-fpm8.2")}


# clients that send one request at a time: their run time is their messages' and connections'
SERIAL = ("python-connect", "redis-c1", "redis-connect-c1", "go-pingpong")


def run_time(by):
    """(TCP client run, predicted unix run, its low and high, measured unix run), ns: the TCP
    run minus every TCP flow's messages x saving per message and its connections x saving per
    connection (once: both directions count the same connections)."""
    flows = [f for f in by["tcp"]["flows"] if "if_unix" in f and "none" not in f["if_unix"]]

    def saved(msg, conn):
        return (sum(f["messages"] * msg(f["if_unix"]) for f in flows) +
                max((f["connections"] * f["if_unix"]["per_connection"][conn] for f in flows),
                    default=0))
    t = by["tcp"]["wall_ns"]
    return (t, t - saved(lambda u: u["saved_ns_per_msg"], "saved_ns"),
            t - saved(lambda u: u["range"]["saved_high_ns"], "saved_high_ns"),
            t - saved(lambda u: u["range"]["saved_low_ns"], "saved_low_ns"),
            by["unix"]["wall_ns"])


def us(ns):
    return f"{ns / 1000:.1f}"


def main():
    cache = tempfile.mkdtemp(prefix="udsprobe-bench-cache-")
    os.environ["UDSPROBE_CACHE_DIR"] = cache
    os.environ["UDSPROBE_IF_UNIX"] = "cached"
    if GO:
        os.environ["PATH"] = f"{os.path.dirname(GO)}:{os.environ['PATH']}"
    try:
        log("prediction: calibrating")
        r = subprocess.run([UDSPROBE, "--trace", "--if-unix", "fresh", "--duration", "0.1"],
                           capture_output=True, text=True, timeout=900)
        if r.returncode:
            log(r.stderr)
            return 1
        rows, runs, loads = [], [], [load1()]
        for name, text in recipes_mod.recipes().items():
            if recipes_mod.needs_go(text) and not GO:
                rows.append((name, None, "Go not installed"))
                continue
            a, b = PAIRS.get(name, ("redis-benchmark", "redis-server"))
            got = {(a, b): [], (b, a): []}
            walls = []      # (TCP run, predicted unix run, its low, its high, unix run), ns
            for i in range(REPS):
                log(f"prediction: {name} run {i + 1}/{REPS}")
                with tempfile.TemporaryDirectory() as d:
                    res, doc = recipes_mod.run(text, f"{UDSPROBE} --detail {DETAIL}",
                                               Path(d) / "r.json", timeout=600)
                if res.returncode or not doc:
                    log(res.stderr)
                    return 1
                by = {x["transport"]: x for x in doc["results"]}
                for key in got:
                    ft = [f for f in by["tcp"]["flows"] if (f["sender"]["comm"], f["receiver"]["comm"]) == key]
                    fu = [f for f in by["unix"]["flows"] if (f["sender"]["comm"], f["receiver"]["comm"]) == key]
                    if ft and fu and "none" not in ft[0]["if_unix"]:
                        u = ft[0]["if_unix"]
                        got[key].append((ft[0]["latency_ns"]["mean"], u["latency_ns"]["mean"],
                                         u["range"]["mean_low_ns"], u["range"]["mean_high_ns"],
                                         fu[0]["latency_ns"]["mean"]))
                if name in SERIAL:
                    walls.append(run_time(by))
                loads.append(load1())
            for key, v in got.items():     # one key when both ends have one name
                rows.append((name, key, v))
            if walls:
                runs.append((name, walls))
    finally:
        shutil.rmtree(cache, ignore_errors=True)

    print("## Prediction from TCP alone\n")
    print(f"`scripts/bench.sh prediction` on {cpu_name()}, load {min(loads):.1f}–{max(loads):.1f}: "
          f"every recipe of docs/RECIPES.md run {REPS} times as written (unix client, then TCP, "
          f"each traced, `--detail {DETAIL}`); the TCP run's `--if-unix` prediction (docs/PREDICT.md) "
          "beside the latency the unix run measured, per direction of the busiest pair. Medians "
          "over the runs [min–max], µs per message; the error is the median prediction against "
          "the median measured; **ok** when it is within 25 % and the measured median lies "
          "inside the median predicted range (issue 30).\n")
    print("| recipe | direction | TCP measured | unix predicted [range] | unix measured | error | |")
    print("|---|---|---|---|---|---|---|")
    n_ok = n = 0
    for name, key, v in rows:
        if key is None:
            print(f"| {name} | | | | | | skipped: {v} |")
            continue
        if not v:
            print(f"| {name} | {key[0]} → {key[1]} | | no prediction | | | |")
            continue
        med = [statistics.median(x[i] for x in v) for i in range(5)]
        lo_m, hi_m = min(x[4] for x in v), max(x[4] for x in v)
        err = (med[1] - med[4]) / med[4]
        ok = abs(err) <= 0.25 and med[2] <= med[4] <= med[3]
        n += 1
        n_ok += ok
        print(f"| {name} | {key[0]} → {key[1]} | {us(med[0])} | {us(med[1])} [{us(med[2])}–{us(med[3])}] "
              f"| {us(med[4])} [{us(lo_m)}–{us(hi_m)}] | {100 * err:+.0f} % | {'**ok**' if ok else 'missed'} |")
    print(f"\n{n_ok} of {n} directions meet the criterion.")
    print("\nThe clients that send one request at a time, by their run time (ms): the TCP run "
          "minus what its flows' predictions save (messages x saving per message, connections x "
          "saving per connection), against the unix run.\n")
    print("| recipe | TCP run | unix predicted [range] | unix run | error | |")
    print("|---|---|---|---|---|---|")
    for name, w in runs:
        med = [statistics.median(x[i] for x in w) for i in range(5)]
        err = (med[1] - med[4]) / med[4]
        ok = abs(err) <= 0.25 and med[2] <= med[4] <= med[3]
        ms = lambda v: f"{v / 1e6:.0f}"
        print(f"| {name} | {ms(med[0])} | {ms(med[1])} [{ms(med[2])}–{ms(med[3])}] | {ms(med[4])} "
              f"[{ms(min(x[4] for x in w))}–{ms(max(x[4] for x in w))}] | {100 * err:+.0f} % | "
              f"{'**ok**' if ok else 'missed'} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
