// SPDX-License-Identifier: MIT
// What else the machine was doing while a benchmark ran (Linux: /proc and
// getrusage). On a 2-core machine a busy neighbour turns 2 threads into 1, so
// the benchmarks measure the load other processes put on the machine during
// each series, rerun noisy series, and print the CPU and load average with
// their figures.
#pragma once

#include "hashgrid/platform/timer.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <string>

namespace hashgrid_support {

/// Busy seconds of all CPUs since boot (/proc/stat), or -1 when unavailable.
inline double machine_busy_s() {
    std::ifstream in("/proc/stat");
    std::string cpu;
    unsigned long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    if (!(in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) || cpu != "cpu")
        return -1.0;
    const long ticks = sysconf(_SC_CLK_TCK);
    return static_cast<double>(user + nice + system + irq + softirq + steal) /
           static_cast<double>(ticks > 0 ? ticks : 100);
}

/// CPU seconds of this process (all threads, user + system).
inline double self_cpu_s() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    const auto seconds = [](const timeval& t) {
        return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
    };
    return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

/// Other load: CPU time the whole machine spent busy minus this process's own,
/// per second of wall time, i.e. how many cores other processes took while a
/// series ran. On a 2-core machine anything above ~0.2 spoils 2-thread figures.
class OtherLoad {
public:
    OtherLoad() : busy_(machine_busy_s()), self_(self_cpu_s()), start_(hashgrid::platform::now_ns()) {}
    /// Cores used by other processes on average since construction (-1: unknown).
    [[nodiscard]] double cores() const {
        const double busy = machine_busy_s();
        if (busy_ < 0.0 || busy < 0.0) return -1.0;
        const double wall = hashgrid::platform::elapsed_ms(start_) * 1e-3;
        return std::max(0.0, ((busy - busy_) - (self_cpu_s() - self_)) / wall);
    }

private:
    double busy_;
    double self_;
    uint64_t start_;
};

/// /proc/loadavg's first three fields, or "unknown".
inline std::string load_average() {
    std::ifstream in("/proc/loadavg");
    std::string one, five, fifteen;
    if (!(in >> one >> five >> fifteen)) return "unknown";
    return one + " " + five + " " + fifteen;
}

/// The first "model name" of /proc/cpuinfo, or "unknown".
inline std::string cpu_model() {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("model name", 0) == 0) {
            const size_t colon = line.find(':');
            if (colon != std::string::npos) return line.substr(colon + 2);
        }
    }
    return "unknown";
}

} // namespace hashgrid_support
