#!/bin/sh
# Runs the sweeps, the frame-time recorder and the particle demo, and draws
# docs/plots/*.png from their output (profiling/plots/plot.py), from the
# repository root:
#
#   sh profiling/plots/make_plots.sh            # full: about 5 minutes on 2 cores
#   sh profiling/plots/make_plots.sh --quick    # a quick look (fewer points, 1 repetition)
#
# Needs the release build's benchmarks (Google Benchmark, oneTBB) and
# python3-matplotlib: sh tools/setup-bench.sh installs both. The raw data
# (Google Benchmark JSON, per-frame CSV) goes to docs/plots/data/ next to the
# pictures; the console output, with the Markdown summary plot.py prints, to
# build/plots/. Any further arguments go to bench_sweeps (Google Benchmark
# flags, e.g. --benchmark_filter=vs_cell).
#
# The machine's other load is recorded with every figure: on a shared machine,
# rerun a series whose other load is high.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
python=/usr/bin/python3 # Debian's, with python3-matplotlib (another python3 may come first in PATH)
[ -x "$python" ] || python=python3
out=docs/plots
data=$out/data
logs=build/plots
mkdir -p "$data" "$logs"

cmake --preset release >"$logs/configure.log"
cmake --build --preset release --target bench_sweeps bench_frames particles_demo >"$logs/build.log"
bin=build/release

echo "bench_sweeps $* (log: $logs/sweeps.txt)"
"$bin/profiling/bench_sweeps" --benchmark_out="$data/sweeps.json" --benchmark_out_format=json "$@" \
    >"$logs/sweeps.txt" 2>&1 || { cat "$logs/sweeps.txt"; exit 1; }
cat "$logs/sweeps.txt"

# 1000 measured frames at 1 and 2 threads; exit status 1 means the frames allocated.
echo "bench_frames (log: $logs/frames.txt)"
frames_status=0
"$bin/profiling/bench_frames" --csv "$data/frames.csv" >"$logs/frames.txt" 2>&1 || frames_status=$?
cat "$logs/frames.txt"

echo "particles_demo pictures (log: $logs/demo.txt)"
rm -rf "$logs/demo"
"$bin/examples/particles_demo" --frames 31 --particles 20000 --png "$logs/demo" --png-every 30 --png-size 512 \
    >"$logs/demo.txt"

"$python" profiling/plots/plot.py --sweeps "$data/sweeps.json" --frames "$data/frames.csv" \
    --demo-frame "$logs/demo/2d_0030.png" --out "$out" | tee "$logs/summary.txt"
if [ "$frames_status" -ne 0 ]; then
    echo "bench_frames exited with $frames_status (allocations in the measured frames, or a failed frame)"
    exit "$frames_status"
fi
