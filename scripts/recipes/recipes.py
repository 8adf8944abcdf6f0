#!/usr/bin/env python3
"""Run the recipes of docs/RECIPES.md exactly as written there, and summarise them.

Each recipe is a ```sh block under a `<!-- recipe: NAME -->` marker. Its lines run with bash
from the repository root, `sudo ./udsprobe` replaced by the binary under test with `--json`
added, so the documentation and what CI runs cannot drift apart
(tests/integration/test_recipes.py runs each once).

    scripts/recipes/recipes.py [--udsprobe PATH] [--repeat N] [--save DIR] [NAME...]  # as root

prints, per recipe, the client run times of both transports and TCP/unix over N runs:
the median and the range.
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


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--udsprobe", default=str(REPO / "udsprobe"))
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--save", metavar="DIR", help="keep each run's JSON as DIR/NAME-K.json")
    p.add_argument("names", nargs="*")
    args = p.parse_args()
    all_recipes = recipes()
    for name in args.names or all_recipes:
        walls = {"unix": [], "tcp": []}
        ratios = []
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
            tails = {t: by[t]["output"].strip().split("\n")[-1][-100:] for t in by}
            print(f"  {name}: unix {walls['unix'][-1]:.3f} s, tcp {walls['tcp'][-1]:.3f} s; "
                  f"unix says: {tails['unix']!r}; tcp says: {tails['tcp']!r}", flush=True)
        fmt = lambda v: f"{statistics.median(v):.3f} [{min(v):.3f}-{max(v):.3f}]"
        print(f"{name}: unix {fmt(walls['unix'])} s, tcp {fmt(walls['tcp'])} s, "
              f"tcp/unix {fmt(ratios)} over {args.repeat} runs", flush=True)


if __name__ == "__main__":
    main()
