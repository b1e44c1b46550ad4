#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs the sweeps, the frame-time recorder and the particle demo, and draws
# docs/plots/*.png from their output (profiling/plots/plot.py), from the
# repository root:
#
#   sh profiling/plots/make_plots.sh            # full: about 3-6 minutes on 2 cores
#   sh profiling/plots/make_plots.sh --quick    # a quick look (fewer points, 1 repetition)
#
# Needs the release build's benchmarks (Google Benchmark, oneTBB) and
# python3-matplotlib: sh tools/setup-bench.sh installs both. The raw data
# (Google Benchmark JSON, per-frame CSV) goes to docs/plots/data/ next to the
# pictures; the console output, with the Markdown summary plot.py prints, to
# build/plots/. Any further arguments go to bench_sweeps (Google Benchmark
# flags, e.g. --benchmark_filter=vs_cell).
#
# Other load: every benchmark records the cores other processes took while it
# ran. Benchmarks above QUIET_LOAD (default 0.2 cores) are rerun up to RETRIES
# times (default 2, after a 20 s pause; the files sweeps_rerun_N.json), and
# plot.py takes each benchmark from the run with the least other load; the
# same for bench_frames (the CSV with the least other load is kept). What
# stays noisy is written in the plots' titles.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
python=/usr/bin/python3 # Debian's, with python3-matplotlib (another python3 may come first in PATH)
[ -x "$python" ] || python=python3
quiet=${QUIET_LOAD:-0.2}
retries=${RETRIES:-2}
out=docs/plots
data=$out/data
logs=build/plots
mkdir -p "$data" "$logs"
rm -f "$data"/sweeps_rerun_*.json

cmake --preset release >"$logs/configure.log"
cmake --build --preset release --target bench_sweeps bench_frames particles_demo >"$logs/build.log"
bin=build/release

echo "bench_sweeps $* (log: $logs/sweeps.txt)"
"$bin/profiling/bench_sweeps" --benchmark_out="$data/sweeps.json" --benchmark_out_format=json "$@" \
    >"$logs/sweeps.txt" 2>&1 || { cat "$logs/sweeps.txt"; exit 1; }
cat "$logs/sweeps.txt"
sweeps="$data/sweeps.json"
attempt=1
while [ "$attempt" -le "$retries" ]; do
    # shellcheck disable=SC2086 # $sweeps is a list of file names without spaces
    noisy=$("$python" profiling/plots/plot.py --sweeps $sweeps --noisy "$quiet")
    [ -n "$noisy" ] || break
    echo "rerun $attempt of the series above $quiet cores of other load: $noisy"
    sleep 20
    "$bin/profiling/bench_sweeps" --benchmark_out="$data/sweeps_rerun_$attempt.json" --benchmark_out_format=json \
        "$@" --benchmark_filter="$noisy" >"$logs/sweeps_rerun_$attempt.txt" 2>&1 ||
        { cat "$logs/sweeps_rerun_$attempt.txt"; exit 1; }
    sweeps="$sweeps $data/sweeps_rerun_$attempt.json"
    attempt=$((attempt + 1))
done

# 1000 measured frames at 1 and 2 threads; exit status 1 means the frames allocated.
frames_load() { sed -n 's/^# threads=.* other_load=\([0-9.]*\).*/\1/p' "$1" | sort -g | tail -1; }
frames_status=1
attempt=0
while [ "$attempt" -le "$retries" ]; do
    echo "bench_frames (log: $logs/frames_$attempt.txt)"
    status=0
    "$bin/profiling/bench_frames" --csv "$logs/frames_$attempt.csv" >"$logs/frames_$attempt.txt" 2>&1 || status=$?
    cat "$logs/frames_$attempt.txt"
    load=$(frames_load "$logs/frames_$attempt.csv")
    if [ "$attempt" -eq 0 ] || "$python" -c "import sys; sys.exit(not $load < $best_load)"; then
        cp "$logs/frames_$attempt.csv" "$data/frames.csv"
        best_load=$load
        frames_status=$status
    fi
    "$python" -c "import sys; sys.exit(not $best_load > $quiet)" || break
    echo "bench_frames: other load $best_load cores; rerunning"
    sleep 20
    attempt=$((attempt + 1))
done

echo "particles_demo pictures (log: $logs/demo.txt)"
rm -rf "$logs/demo"
"$bin/examples/particles_demo" --frames 31 --particles 20000 --png "$logs/demo" --png-every 30 --png-size 512 \
    >"$logs/demo.txt"

# shellcheck disable=SC2086
"$python" profiling/plots/plot.py --sweeps $sweeps --frames "$data/frames.csv" \
    --demo-frame "$logs/demo/2d_0030.png" --out "$out" | tee "$logs/summary.txt"
if [ "$frames_status" -ne 0 ]; then
    echo "bench_frames exited with $frames_status (allocations in the measured frames, or a failed frame)"
    exit "$frames_status"
fi
