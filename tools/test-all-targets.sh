#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds and tests every configuration of the target matrix, each through its
# CMake workflow preset (configure, build, CTest; emulated targets run under
# qemu-user, MinGW under wine), after installing what is missing
# (tools/setup-cross.sh). One golden-hash file (tests/golden_hashes.h) is
# checked unchanged by all of them.
#
#   sh tools/setup-cross.sh && bash tools/test-all-targets.sh            # all six
#   bash tools/test-all-targets.sh aarch64 mingw                          # a subset
#   bash tools/test-all-targets.sh clang-asan-ubsan asan-ubsan tsan       # sanitizers
#
# Any workflow preset can be named (clang-asan-ubsan needs tools/setup-fuzz.sh
# for clang 14; asan-ubsan and tsan build with the native GCC).
#
# Prints one line per target (CTest's summary and the wall time), then a last
# line in CTest's format that totals all targets. Exits non-zero if any
# target failed to configure, build or pass.
set -uo pipefail
cd "$(dirname "$0")/.."
presets=("$@")
[ ${#presets[@]} -eq 0 ] && presets=(default clang-console aarch64 armhf s390x mingw)

declare -A summary seconds
failed=0 passed_total=0 failed_total=0 tests_total=0
for p in "${presets[@]}"; do
    log="build/test-all-$p.log"
    mkdir -p build
    start=$(date +%s)
    echo "=== $p: cmake --workflow --preset $p"
    cmake --workflow --preset "$p" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    seconds[$p]=$(($(date +%s) - start))
    line=$(grep -E '^[0-9]+% tests passed' "$log" | tail -n 1 || true)
    if [ -z "$line" ]; then
        summary[$p]="no CTest summary: configure or build failed (exit $rc)"
        failed=1
        continue
    fi
    summary[$p]=$line
    [ "$rc" -ne 0 ] && failed=1
    n=$(echo "$line" | sed -E 's/.* out of ([0-9]+).*/\1/')
    f=$(echo "$line" | sed -E 's/.* ([0-9]+) tests failed.*/\1/')
    tests_total=$((tests_total + n))
    failed_total=$((failed_total + f))
    passed_total=$((passed_total + n - f))
done
# wine keeps a server per prefix alive for a few seconds; stop it now.
if command -v wineserver >/dev/null 2>&1 && [ -d build/mingw/wineprefix ]; then
    WINEPREFIX="$PWD/build/mingw/wineprefix" wineserver -k 2>/dev/null || true
fi

echo
echo "=== target matrix"
for p in "${presets[@]}"; do
    printf '%-14s %5ss  %s\n' "$p" "${seconds[$p]}" "${summary[$p]}"
done
if [ "$tests_total" -gt 0 ]; then
    pct=$((100 * passed_total / tests_total))
else
    pct=0
fi
[ "$failed" -ne 0 ] && [ "$pct" -eq 100 ] && pct=99
echo "${pct}% tests passed, ${failed_total} tests failed out of ${tests_total} (all targets: ${presets[*]})"
exit "$failed"
