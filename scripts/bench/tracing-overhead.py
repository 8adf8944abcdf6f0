#!/usr/bin/python3
"""Tracing overhead: what tracing costs per message and per probe hit, in each attach mode.

Host: every mode `udsprobe --check` says works here (on our CI machines, tracepoint only),
same-CPU 64 B pingpong, REPS runs each pairing an untraced and a traced run; medians.
Also one 1,000,000-message traced run (misses must be zero). Hooks only (tracepoint mode,
.output/hooks_floor built): next to each pair, per transport, an untraced run while hooks_floor
holds an empty program on each hook that transport's traced run attaches: the hooks' own cost.
Guests (BENCH_VM=1, default): the same in fentry/kprobe/tracepoint inside Debian's 6.12 under qemu TCG (software
emulation: absolute numbers are ~10-50x a real CPU's; only the ratios mean something).
Per program: one more traced run (unix, then tcp, one --compare) with the kernel's BPF run-time
statistics on (BPF_ENABLE_STATS, held by a file descriptor, so they go off when we exit): how
often each of udsprobe's programs ran per message and what one run cost (run_time_ns / run_cnt,
the program body only: not the tracepoint's dispatch nor the syscall slow path).
Markdown on stdout, progress on stderr. Env: UDSPROBE, HOOKS_FLOOR, BENCH_REPS, BENCH_QUICK=1,
BENCH_VM=0.
"""
import ctypes
import datetime
import json
import os
import platform
import statistics
import struct
import subprocess
import tempfile
import time

from benchlib import NR_BPF, HOOKS_FLOOR, HooksFloor, bpf_progs_held, cpu_name, load1, log, prog_ids

UDSPROBE = os.environ.get("UDSPROBE", "./udsprobe")
QUICK = os.environ.get("BENCH_QUICK") == "1"
# issue 33 judges item 1 by the median of at least 7 alternating repeats
REPS = int(os.environ.get("BENCH_REPS", "2" if QUICK else "7"))
COUNT = 20000 if QUICK else 200000
MILLION_RT = 50000 if QUICK else 500000      # round trips: two messages each
VM = os.environ.get("BENCH_VM", "1") == "1" and not QUICK
VM_KERNEL = os.environ.get("BENCH_VM_KERNEL", "debian-6.12")


def run_json(cmd, timeout=1200, out=None):
    """Run cmd, which ends in `--json`, and return its JSON: from stdout, or through the file
    `out` (then stderr may be mixed into stdout, as vm-run.sh does with the guest's)."""
    res = subprocess.run(cmd + [out or "-"], capture_output=True, text=True, timeout=timeout)
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({res.returncode}):\n{res.stderr or res.stdout}")
    if not out:
        return json.loads(res.stdout)
    with open(out) as f:    # udsprobe replaced the file (rename): read it anew
        return json.load(f)


def host_modes():
    res = subprocess.run([UDSPROBE, "--check"], capture_output=True, text=True)
    modes = []
    for line in res.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] in ("fentry", "kprobe", "tracepoint") and parts[1] == "yes":
            modes.append(parts[0])
    return modes, res.stdout


def one(mode, count, prefix=()):
    cmd = [*prefix, UDSPROBE, "--compare", "--attach", mode, "--mode", "pingpong", "--cpu", "same",
           "--size", "64", "--count", str(count), "--json"]
    if not prefix:
        return run_json(cmd)
    # the guest's JSON goes through a file in the work dir, which it shares read-write at the
    # same path
    os.makedirs(".output", exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=".output", prefix="bench-vm-", suffix=".json") as f:
        return run_json(cmd, out=f.name)


def floor_run(tr, count):
    """tr's one-way mean in an untraced --compare run while hooks_floor holds an empty program on
    every hook --compare's tracer attaches for tr's traced run (tracepoint mode): the hooks' own
    cost, no program body. Returns (mean ns, the hooks)."""
    f = HooksFloor("--compare", tr)
    try:
        d = run_json([UDSPROBE, "--compare", "--no-trace", "--mode", "pingpong", "--cpu", "same",
                      "--size", "64", "--count", str(count), "--json"])
    finally:
        f.stop()
    return next(r for r in d["results"] if r["transport"] == tr)["latency_ns"]["mean"], f.hooks


def enable_bpf_stats():
    """BPF_ENABLE_STATS (cmd 32, BPF_STATS_RUN_TIME): on while the returned fd is open."""
    libc = ctypes.CDLL(None, use_errno=True)
    attr = ctypes.create_string_buffer(struct.pack("I", 0) + b"\0" * 124)
    fd = libc.syscall(NR_BPF, 32, attr, len(attr))
    if fd < 0:
        raise OSError(ctypes.get_errno(), "BPF_ENABLE_STATS")
    return fd


def has_children(pid):
    try:
        return any(open(f"/proc/{pid}/task/{t}/children").read().strip()
                   for t in os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return False


def prog_stats(ids):
    """id -> (name, run_cnt, run_time_ns) of the programs ids, from bpftool."""
    show = subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True, text=True).stdout
    return {pr["id"]: (pr.get("name"), pr.get("run_cnt", 0), pr.get("run_time_ns", 0))
            for pr in json.loads(show) if pr["id"] in ids}


def per_program(count):
    """One traced --compare with BPF run-time stats on: per program, runs per message and ns per
    run, from the end of the calibration (when the first workload child appears) to the end of
    the run; each program is held open by id (BPF_PROG_GET_FD_BY_ID) to be read after udsprobe
    exits."""
    libc = ctypes.CDLL(None, use_errno=True)
    stats_fd = enable_bpf_stats()
    held = {}
    try:
        p = subprocess.Popen([UDSPROBE, "--compare", "--attach", "tracepoint", "--mode", "pingpong",
                              "--cpu", "same", "--size", "64", "--count", str(count), "--json", "-"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        base = None
        while p.poll() is None and base is None:
            if has_children(p.pid):
                for i in prog_ids(p.pid) - held.keys():
                    attr = ctypes.create_string_buffer(struct.pack("I", i) + b"\0" * 124)
                    fd = libc.syscall(NR_BPF, 13, attr, len(attr))  # BPF_PROG_GET_FD_BY_ID
                    if fd >= 0:
                        held[i] = fd
                base = prog_stats(held.keys())
            time.sleep(0.02)
        d = json.loads(p.communicate()[0])
        end = prog_stats(held.keys())
    finally:
        for fd in held.values():
            os.close(fd)
        os.close(stats_fd)
    msgs = sum(r["messages"] for r in d["results"])
    rows = [(name, cnt - base.get(i, (0, 0, 0))[1], ns - base.get(i, (0, 0, 0))[2])
            for i, (name, cnt, ns) in end.items()]
    return sorted(rows, key=lambda x: -x[2]), msgs


def summarize(runs, floors=None):
    """Per transport: medians over runs of the numbers the table shows; floors (tracepoint mode
    on the host): per run, transport -> hooks-only mean of the floor run next to it."""
    out = {}
    for tr in ("unix", "tcp"):
        rows = [next(r for r in d["results"] if r["transport"] == tr) for d in runs]

        def med(f):
            return statistics.median(f(r) for r in rows)

        floor = None
        if floors:
            ratios = [fl[tr] / r["latency_ns"]["mean"] for fl, r in zip(floors, rows)]
            shares = [(fl[tr] - r["latency_ns"]["mean"]) / max(r["overhead_ns"], 1e-9)
                      for fl, r in zip(floors, rows)]
            floor = {"mean": statistics.median(fl[tr] for fl in floors),
                     "ratio": statistics.median(ratios), "range": (min(ratios), max(ratios)),
                     "share": statistics.median(shares)}

        out[tr] = {
            "untraced": med(lambda r: r["latency_ns"]["mean"]),
            "traced": med(lambda r: r["traced_latency_ns"]["mean"]),
            "ratio": med(lambda r: r["traced_latency_ns"]["mean"] / r["latency_ns"]["mean"]),
            "ratio_range": (min(r["traced_latency_ns"]["mean"] / r["latency_ns"]["mean"] for r in rows),
                            max(r["traced_latency_ns"]["mean"] / r["latency_ns"]["mean"] for r in rows)),
            "untraced_range": (min(r["latency_ns"]["mean"] for r in rows),
                               max(r["latency_ns"]["mean"] for r in rows)),
            "overhead": med(lambda r: r["overhead_ns"]),
            "hits": med(lambda r: r["probe_hits_per_msg"]),
            "per_hit": med(lambda r: r["overhead_ns"] / max(r["probe_hits_per_msg"], 1e-9)),
            "coverage": med(lambda r: r["coverage"]),
            "corrected": med(lambda r: r["corrected_sum_ns"] / r["latency_ns"]["mean"] - 1),
            "misses": sum(r["misses"] for r in rows),
            "ooo": sum(r["out_of_order"] for r in rows),
            "floor": floor,
        }
    out["cost"] = statistics.median(d["probe_cost_ns"] for d in runs)
    out["attach_ms"] = statistics.median(d["attach_ns"] for d in runs) / 1e6
    out["detach_ms"] = statistics.median(d["detach_ns"] for d in runs) / 1e6
    return out


def table(rows):
    print("| where | mode | transport | untraced mean | hooks only mean | hooks only/untraced "
          "| traced mean | traced/untraced | hooks' share of the overhead | overhead/msg "
          "| probe hits/msg | overhead/hit | calibrated cost/hit | coverage | corrected vs untraced "
          "| attach + detach |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for where, mode, s in rows:
        for tr in ("unix", "tcp"):
            x = s[tr]
            lo, hi = x["ratio_range"]
            ulo, uhi = x["untraced_range"]
            fl = x["floor"]
            hooks = (f"{fl['mean']:.0f} ns | {fl['ratio']:.2f} ({fl['range'][0]:.2f}–"
                     f"{fl['range'][1]:.2f})" if fl else "— | —")
            share = f"{100 * fl['share']:.0f} %" if fl else "—"
            print(f"| {where} | {mode} | {tr} | {x['untraced']:.0f} ns ({ulo:.0f}–{uhi:.0f}) | "
                  f"{hooks} | {x['traced']:.0f} ns | **{x['ratio']:.2f}** ({lo:.2f}–{hi:.2f}) | "
                  f"{share} | "
                  f"{x['overhead']:.0f} ns | {x['hits']:.1f} | "
                  f"{x['per_hit']:.0f} ns | {s['cost']:.0f} ns | {x['coverage']:.3f} | "
                  f"{100 * x['corrected']:+.0f} % | {s['attach_ms'] + s['detach_ms']:.0f} ms |")


def main():
    load_start, others_start = load1(), bpf_progs_held()
    modes, check = host_modes()
    log(f"tracing-overhead: host modes {modes}")
    rows, floor_hooks = [], {}
    with_floor = "tracepoint" in modes and os.access(HOOKS_FLOOR, os.X_OK)
    for mode in modes:
        runs, floors = [], []

        def pair():
            runs.append(one(mode, COUNT))

        def floor():
            fl = {}
            for tr in ("unix", "tcp"):
                fl[tr], floor_hooks[tr] = floor_run(tr, COUNT)
            floors.append(fl)

        steps = [pair, floor] if with_floor and mode == "tracepoint" else [pair]
        for i in range(REPS):
            log(f"tracing-overhead: host {mode} {i + 1}/{REPS}")
            # alternating: the floor runs before the traced pair in every other repetition
            for step in steps if i % 2 == 0 else steps[::-1]:
                step()
        rows.append((f"host {platform.release()}", mode, summarize(runs, floors)))
    log("tracing-overhead: 1,000,000-message run")
    big = one(modes[0], MILLION_RT)
    progs = None
    if "tracepoint" in modes:
        log("tracing-overhead: per-program run-time statistics")
        try:
            progs = per_program(COUNT)
        except (OSError, SystemExit) as e:
            log(f"tracing-overhead: no per-program statistics: {e}")
    load_end, others_end = load1(), bpf_progs_held()
    vm_rows, vm_note = [], ""
    if VM:
        prefix = ["scripts/vm-run.sh", "-k", VM_KERNEL, "-t", "900", "--"]
        for mode in ("fentry", "kprobe", "tracepoint"):
            log(f"tracing-overhead: guest {VM_KERNEL} {mode}")
            try:
                runs = [one(mode, 5000, prefix) for _ in range(2)]
            except SystemExit as e:
                log(f"tracing-overhead: guest {VM_KERNEL} {mode} failed: {e}")
                vm_note += f"\n- guest {VM_KERNEL} {mode}: failed: {str(e).splitlines()[0]}"
                continue
            rows.append((f"guest {VM_KERNEL} (TCG)", mode, summarize(runs)))

    print("## Tracing overhead\n")
    print(f"Measured {datetime.date.today()} on {platform.release()}, {cpu_name()} "
          f"({os.cpu_count()} CPUs), 1-minute load average {load_start:.2f} at the start and "
          f"{load_end:.2f} at the end of the host runs, BPF programs held by other processes "
          f"{others_start} and {others_end} (the machine is shared: other work on it lengthens "
          "both untraced and traced runs and widens the spread), "
          f"`make bench`; same-CPU 64 B pingpong, `--count {COUNT}` round trips per run, median of "
          f"{REPS} runs on the host (2 in guests). Each run pairs an untraced and a traced run of "
          "the same workload, so overhead = traced − untraced one-way mean; untraced mean and "
          "traced/untraced are medians over the runs, with their min–max. *overhead/hit* is that "
          "overhead divided by the probe hits per message (every BPF program run on the "
          "message's CPU while it was in flight, including runs for other tasks that return at "
          "the tid filter); *calibrated cost/hit* is udsprobe's start-up measurement (getppid() "
          "loop with one boundary program attached), which the corrected breakdown subtracts "
          "per hit together with its measured bookkeeping. *hooks only*: the same workload "
          "untraced while `.output/hooks_floor --compare unix|tcp` holds an empty program on "
          "every hook the traced run of that transport attaches (tracepoint mode; the set from "
          "udsprobe's own choice, scripts/hooks_floor.c), in a run of its own next to each "
          "pair, alternating before and after it: what the hooks cost with no program body, "
          "the floor no body can go below; *hooks' share* is (hooks only − untraced) / "
          "(traced − untraced). Targets: traced/untraced ≤ 1.3, coverage 0.95–1.05, corrected "
          "total within 10 % of untraced, attach + detach < 1 s (issue 3); traced/untraced "
          "≤ 1.15 in tracepoint mode (issue 33).\n")
    table(rows)
    print()
    for tr, hooks in floor_hooks.items():
        print(f"Hooks of the {tr} traced run ({len(hooks)}): {', '.join(hooks)}.\n")
    host_tp = next((s for w, m, s in rows if w.startswith("host") and m == "tracepoint"), None)
    if host_tp and host_tp["unix"]["floor"]:
        u, t = host_tp["unix"], host_tp["tcp"]
        print(f"**With empty programs on the same hooks, a message takes {u['floor']['ratio']:.2f}× "
              f"(unix) / {t['floor']['ratio']:.2f}× (tcp) its untraced time, against "
              f"{u['ratio']:.2f}× / {t['ratio']:.2f}× traced: {100 * u['floor']['share']:.0f} % / "
              f"{100 * t['floor']['share']:.0f} % of the overhead is the hooks themselves (the "
              "tracepoints' dispatch and the syscall slow path), the rest udsprobe's program "
              "bodies.**")
        for tr, x in (("unix", u), ("tcp", t)):
            hooks_ns = x["floor"]["mean"] - x["untraced"]
            budget = 0.15 * x["untraced"] - hooks_ns
            bodies_per_hit = (x["overhead"] - hooks_ns) / max(x["hits"], 1e-9)
            if budget <= 0:
                print(f"- {tr}: the hooks alone are above 1.15: with one hook per boundary no "
                      "program body, however small, reaches 1.15 on this CPU; only fewer hooks "
                      "per message can (docs/STAGES.md, \"Overhead, coverage and the corrected "
                      "breakdown\").")
            else:
                print(f"- {tr}: 1.15 leaves the program bodies {budget:.0f} ns per message, "
                      f"{budget / max(x['hits'], 1e-9):.0f} ns per hit ({x['hits']:.1f} hits), "
                      f"against {bodies_per_hit:.0f} ns per hit now.")
        print()
    if max(load_start, load_end) > os.cpu_count():
        print("**Loaded machine:** the load average exceeded the CPU count, so other tasks shared "
              "the pingpong's CPU: they lengthen the untraced runs and, more so, the traced ones "
              "(their syscalls and context switches run our filters too), and vary from run to "
              "run. The ratios above measure that more than tracing; re-measure on a quiet machine. "
              "The probe hits per message and the per-program costs below depend less on it.\n")
    ok = all(r["misses"] == 0 and r["out_of_order"] == 0 and r["messages"] == 2 * MILLION_RT
             for r in big["results"])
    print(f"**{2 * MILLION_RT:,} messages per transport** ({MILLION_RT:,} round trips, "
          f"{big['attach_mode']} mode): " + ", ".join(
              f"{r['transport']} attributed {r['messages']:,}, misses {r['misses']}, out of order "
              f"{r['out_of_order']}, coverage {r['coverage']:.3f}" for r in big["results"]) +
          (" — no unexplained misses." if ok else " — **MISSES: see above**."))
    if progs:
        rows_p, msgs = progs
        print(f"\nPer program, tracepoint mode (one more traced run, {msgs:,} messages of both "
              "transports, BPF run-time statistics on): runs per message, and the program "
              "body's cost per run (run_time_ns / run_cnt: without the tracepoint's dispatch "
              "and the syscall slow path, with the statistics' own clock reads). Counted from "
              "the end of the start-up calibration to the end of the run: warm-up included "
              "(the programs are detached in the untraced runs), and other tasks' hits that "
              "return at the tid filter, on both CPUs.\n")
        print("| program | runs | runs/message | ns/run |")
        print("|---|---|---|---|")
        for name, cnt, ns in rows_p:
            if cnt:
                print(f"| {name} | {cnt:,} | {cnt / max(msgs, 1):.2f} | {ns / cnt:.0f} |")
    if vm_note:
        print("\nNot measured:" + vm_note)
    print("\nWhat `udsprobe --check` said on the host:\n\n```\n" + check.strip() + "\n```")


if __name__ == "__main__":
    main()
