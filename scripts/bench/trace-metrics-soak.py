#!/usr/bin/python3
"""Trace soak with metrics (issue 34): scripts/bench/trace-soak.py's load and samples for
SOAK_DURATION seconds (default 600) with `--metrics` on, scraped every SOAK_SCRAPE_S s (default
1): memory stays flat with the scrapes' snapshots too, and every scrape is answered. Not in
`make bench` by default (ten minutes): `scripts/bench.sh trace-metrics-soak`."""
import os
import runpy
from pathlib import Path

os.environ.setdefault("SOAK_DURATION", "600")
os.environ.setdefault("SOAK_INTERVAL", "30")
os.environ["SOAK_METRICS"] = "1"
os.environ["SOAK_TITLE"] = "Trace soak with metrics"
runpy.run_path(str(Path(__file__).with_name("trace-soak.py")), run_name="__main__")
