#!/usr/bin/env python3
"""Run the recipes of docs/RECIPES.md exactly as written there, and summarise them.

Each recipe is a ```sh block under a `<!-- recipe: NAME -->` marker. Its lines run with bash
from the repository root, `sudo ./udsprobe` replaced by the binary under test with `--json`
added, so the documentation and what CI runs cannot drift apart
(tests/integration/test_recipes.py runs each once).

    scripts/recipes/recipes.py [--udsprobe PATH] [--repeat N] [--save DIR] [NAME...]  # as root

prints, per recipe, the client run times of both transports and TCP/unix over N runs:
the median and the range; with --stages, the stage table of the run with the median ratio
(markdown, the two busiest directions, each stage with the kernel stages it is cut into,
stages under 10 ns per message on both transports left out: the tables of docs/RECIPES.md).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "RECIPES.md"
MARK = re.compile(r"<!-- recipe: ([a-z0-9-]+) -->\s*\n```sh\n(.*?)\n```", re.S)


def recipes(doc=DOC):
    """{name: shell text} in the order of the document."""
    return {m.group(1): m.group(2) for m in MARK.finditer(Path(doc).read_text())}


def needs_go(text):
    return "go test" in text


def run(text, udsprobe, json_path, timeout=300):
    """Run one recipe; (CompletedProcess, parsed JSON or None)."""
    script = text.replace("\\\n", " ")
    script = script.replace("sudo ./udsprobe --compare",
                            f"{udsprobe} --compare --json {json_path}")
    env = dict(os.environ, GOTOOLCHAIN="local")
    res = subprocess.run(["bash", "-euc", script], cwd=REPO, capture_output=True, text=True,
                         timeout=timeout, env=env)
    doc = json.loads(Path(json_path).read_text()) if Path(json_path).exists() else None
    return res, doc


def fmt_ns(ns):
    return f"{ns / 1000:.1f} µs" if ns >= 1000 else f"{ns:.0f} ns"


def stage_rows(flow):
    """[(parent, name, ns per message, is a kernel stage)] in the order of the report."""
    rows = []
    for s in flow["stages"]:
        if not s["count"]:
            continue
        rows.append((s["name"], s["name"], s["ns_per_msg"], False))
        rows += [(s["name"], k["name"], k["ns_per_msg"], True) for k in flow["kernel_stages"]
                 if k["of"] == s["name"]]
    return rows


def merged_keys(tcp, unix):
    """The row keys of both transports in path order: TCP's (it has more kernel stages), a
    UDS-only one before the first TCP row that follows it on UDS's path."""
    out = [(p, n, k) for p, n, _, k in tcp]
    at = 0
    for p, n, _, k in unix:
        if (p, n, k) in out:
            at = out.index((p, n, k)) + 1
        else:
            out.insert(at, (p, n, k))
            at += 1
    return out


SMALL_NS = 10   # a stage under this on both transports (and its parts) is left out of a table


def stage_table(doc):
    """Markdown stage tables of the two busiest directions, unix vs TCP, per message."""
    by = {r["transport"]: sorted(r["flows"], key=lambda f: -f["messages"]) for r in doc["results"]}
    lines = []
    seen = set()
    for f in by["unix"][:2]:
        pair = (f["sender"]["comm"], f["receiver"]["comm"])
        tcp = next((g for g in by["tcp"] if (g["sender"]["comm"], g["receiver"]["comm"]) == pair
                    and id(g) not in seen), None)
        if not tcp:
            continue
        seen.add(id(tcp))
        u_rows, t_rows = stage_rows(f), stage_rows(tcp)
        vals = {t: {(p, n, k): ns for p, n, ns, k in rows}
                for t, rows in (("unix", u_rows), ("tcp", t_rows))}
        lines += [f"{pair[0]} → {pair[1]} ({f['messages']} / {tcp['messages']} messages)", "",
                  "| stage | unix | TCP |", "|---|---|---|"]
        for key in merged_keys(t_rows, u_rows):
            parent = (key[0], key[0], False)
            if all(vals[t].get(parent, 0) < SMALL_NS for t in vals):
                continue
            cells = [fmt_ns(vals[t][key]) if key in vals[t] else "—" for t in ("unix", "tcp")]
            label = f"&nbsp;&nbsp;{key[1]}" if key[2] else key[1]
            lines.append(f"| {label} | {cells[0]} | {cells[1]} |")
        lines.append(f"| mean latency | {fmt_ns(f['latency_ns']['mean'])} | "
                     f"{fmt_ns(tcp['latency_ns']['mean'])} |")
        lines.append("")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--udsprobe", default=str(REPO / "udsprobe"))
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--save", metavar="DIR", help="keep each run's JSON as DIR/NAME-K.json")
    p.add_argument("--stages", action="store_true",
                   help="print the median-ratio run's stage tables (markdown)")
    p.add_argument("names", nargs="*")
    args = p.parse_args()
    all_recipes = recipes()
    for name in args.names or all_recipes:
        walls = {"unix": [], "tcp": []}
        ratios = []
        docs = []
        for k in range(args.repeat):
            with tempfile.TemporaryDirectory() as d:
                res, doc = run(all_recipes[name], args.udsprobe, f"{d}/r.json")
            if args.save and doc:
                Path(args.save, f"{name}-{k}.json").write_text(json.dumps(doc, indent=1))
            if res.returncode != 0 or not doc:
                sys.exit(f"{name}: exit {res.returncode}\n{res.stderr}")
            by = {r["transport"]: r for r in doc["results"]}
            for t in walls:
                walls[t].append(by[t]["wall_ns"] / 1e9)
            ratios.append(doc["tcp_over_unix_wall"])
            docs.append(doc)
            tails = {t: by[t]["output"].strip().split("\n")[-1][-100:] for t in by}
            print(f"  {name}: unix {walls['unix'][-1]:.3f} s, tcp {walls['tcp'][-1]:.3f} s; "
                  f"unix says: {tails['unix']!r}; tcp says: {tails['tcp']!r}", flush=True)
        fmt = lambda v: f"{statistics.median(v):.3f} [{min(v):.3f}-{max(v):.3f}]"
        print(f"{name}: unix {fmt(walls['unix'])} s, tcp {fmt(walls['tcp'])} s, "
              f"tcp/unix {fmt(ratios)} over {args.repeat} runs", flush=True)
        if args.stages:
            median = sorted(range(len(ratios)), key=lambda i: ratios[i])[len(ratios) // 2]
            print(stage_table(docs[median]), flush=True)


if __name__ == "__main__":
    main()
