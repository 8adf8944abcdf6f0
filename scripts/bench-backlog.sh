#!/usr/bin/env bash
# Re-measure only the "Backlog watch overhead" section of docs/BENCHMARKS.md
# (scripts/bench/backlog-overhead.py through scripts/bench.sh, which keeps every other section).
# Needs root, nginx-light, php-fpm and wrk (scripts/install-deps.sh). BENCH_QUICK=1: smoke run.
set -euo pipefail
cd "$(dirname "$0")/.."
exec scripts/bench.sh backlog-overhead "$@"
