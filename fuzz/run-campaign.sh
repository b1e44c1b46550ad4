#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs every fuzz target (or those named) one after another, for a number of
# executions or seconds each, and prints executions, crashes and timeouts per
# target. Inputs that crash or time out are kept under WORK/<target>/artifacts/.
#
#   fuzz/run-campaign.sh [--runs N | --seconds S] [--max-len B] [--build DIR] [--work DIR] [--merge] [target...]
#
# --runs N     executions per target (e.g. 2000000 for a 10-million campaign over five targets)
# --seconds S  seconds per target instead (default 60)
# --max-len B  largest input in bytes (libFuzzer -max_len; small inputs mean
#              small scenes and thousands of executions per second)
# --build DIR  build directory of the `fuzz` preset (default build/fuzz)
# --work DIR   scratch corpora and artifacts (default build/fuzz/campaign)
# --merge      merge each target's new inputs into fuzz/corpus/<target>/ afterwards (-merge=1)
# A target whose run stops on a crash is restarted from its corpus until its
# budget is spent, so one finding does not end the campaign.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
runs=""
seconds=60
build="$root/build/fuzz"
work=""
merge=0
max_len=()
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --merge) merge=1; shift ;;
    --max-len) max_len=(-max_len="$2"); shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[ -n "$work" ] || work="$build/campaign"
[ ${#targets[@]} -gt 0 ] || targets=(config_memory particle_grid box_grid queries objects)

total_execs=0
total_crashes=0
total_timeouts=0
printf '%-16s %12s %9s %9s %10s\n' target execs crashes timeouts execs/s
for t in "${targets[@]}"; do
  bin="$build/fuzz/fuzz_$t"
  if [ ! -x "$bin" ]; then
    echo "missing $bin: cmake --workflow --preset fuzz (or cmake --build --preset fuzz) first" >&2
    exit 2
  fi
  dir="$work/$t"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  cp -n "$here/corpus/$t/"* "$dir/corpus/" 2>/dev/null || true
  execs=0
  start=$(date +%s)
  left_runs=${runs:-0}
  while :; do
    if [ -n "$runs" ]; then
      [ "$left_runs" -gt 0 ] || break
      budget=(-runs="$left_runs")
    else
      left=$(( seconds - ($(date +%s) - start) ))
      [ "$left" -gt 0 ] || break
      budget=(-max_total_time="$left")
    fi
    log="$dir/last.log"
    "$bin" "${budget[@]}" ${max_len[@]+"${max_len[@]}"} -timeout=2 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$dir/artifacts/" "$dir/corpus" >"$log" 2>&1
    n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    [ -n "$n" ] || n=$(sed -n 's/^#\([0-9]*\).*/\1/p' "$log" | tail -1)
    n=${n:-0}
    execs=$(( execs + n ))
    left_runs=$(( left_runs - n ))
    # A clean finish ends this target; a crash or timeout restarts it.
    grep -q -E 'ERROR: libFuzzer|SUMMARY: ' "$log" || break
    cp "$log" "$dir/artifacts/log-$(date +%s%N)"
    [ "$n" -gt 0 ] || left_runs=$(( left_runs - 1 ))
  done
  crashes=$(find "$dir/artifacts" -name 'crash-*' -o -name 'leak-*' -o -name 'oom-*' | wc -l)
  timeouts=$(find "$dir/artifacts" -name 'timeout-*' | wc -l)
  elapsed=$(( $(date +%s) - start ))
  [ "$elapsed" -gt 0 ] || elapsed=1
  printf '%-16s %12d %9d %9d %10d\n' "$t" "$execs" "$crashes" "$timeouts" $(( execs / elapsed ))
  total_execs=$(( total_execs + execs ))
  total_crashes=$(( total_crashes + crashes ))
  total_timeouts=$(( total_timeouts + timeouts ))
  if [ "$merge" = 1 ]; then
    mkdir -p "$here/corpus/$t"
    "$bin" -merge=1 -timeout=2 -rss_limit_mb=2048 "$here/corpus/$t" "$dir/corpus" >"$dir/merge.log" 2>&1
  fi
done
printf '%-16s %12d %9d %9d\n' total "$total_execs" "$total_crashes" "$total_timeouts"
[ "$total_crashes" -eq 0 ] && [ "$total_timeouts" -eq 0 ]
