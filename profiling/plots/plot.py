#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Draws docs/plots/*.png from bench_sweeps' Google Benchmark JSON and
bench_frames' per-frame CSV (profiling/plots/make_plots.sh runs everything).

    plot.py --sweeps sweeps.json [rerun.json ...] --frames frames.csv --out docs/plots
            [--demo-frame particles/2d_0030.png]
    plot.py --sweeps sweeps.json [rerun.json ...] --noisy 0.2

With several --sweeps files, each benchmark is taken from the file in which
it ran with the least other load (reruns of noisy series). --noisy L prints a
Google Benchmark filter of the benchmarks whose other load exceeded L cores
in every file (empty when none) and draws nothing.

Writes time_vs_n.png, time_vs_neighbours.png, time_vs_threads.png,
time_vs_cell_size.png and frame_times.png (whichever inputs are given), and
with --demo-frame a recompressed copy of a particles_demo picture as
particles_2d.png. Prints a Markdown summary of key points (for
profiling/RESULTS.md). Needs python3-matplotlib (Agg backend: no display).
"""

import argparse
import collections
import csv
import json
import os
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)

DPI = 100
NOISY = 0.2  # cores of other load above which a point is drawn hollow


# ---------------------------------------------------------------------------
# Google Benchmark JSON.


class Series:
    """One benchmark (all repetitions): median/min/max real time in ms and the counters."""

    def __init__(self, name):
        self.name = name
        self.times = []  # ms, one per repetition
        self.counters = collections.defaultdict(list)
        self.median_ms = None

    def counter(self, key):
        values = self.counters.get(key, [])
        return statistics.median(values) if values else float("nan")

    @property
    def ms(self):
        return self.median_ms if self.median_ms is not None else statistics.median(self.times)

    @property
    def lo(self):
        return min(self.times)

    @property
    def hi(self):
        return max(self.times)

    @property
    def other_load(self):
        values = self.counters.get("other_load", [0.0])
        return max(values)


def to_ms(value, unit):
    return value * {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[unit]


def load_sweeps(paths):
    """The series of every file, each from the file where its other load was least."""
    context, best = {}, collections.OrderedDict()
    for path in paths:
        file_context, series = load_sweeps_file(path)
        context = context or file_context
        for s in series:
            if s.name not in best or s.other_load < best[s.name].other_load:
                best[s.name] = s
    return context, list(best.values())


def load_sweeps_file(path):
    with open(path) as f:
        data = json.load(f)
    series = collections.OrderedDict()
    counter_keys = (
        "pairs neighbours rebuild_ms query_ms ns_per_pair ns_per_particle grid_mib n k threads cell_factor "
        "bounded radius_op other_load"
    ).split()
    for b in data.get("benchmarks", []):
        if b.get("error_occurred"):
            print("skipped (error): %s: %s" % (b["name"], b.get("error_message")), file=sys.stderr)
            continue
        # The name without Google Benchmark's "/min_time:.../real_time" suffix.
        name = b.get("run_name", b["name"]).split("/min_time:")[0].split("/real_time")[0]
        s = series.setdefault(name, Series(name))
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == "median":
                s.median_ms = to_ms(b["real_time"], b["time_unit"])
            continue
        s.times.append(to_ms(b["real_time"], b["time_unit"]))
        for key in counter_keys:
            if key in b:
                s.counters[key].append(float(b[key]))
    return data.get("context", {}), [s for s in series.values() if s.times]


def machine_line(context):
    cpu = context.get("cpu_model", "unknown CPU")
    cores = context.get("num_cpus", context.get("hardware_threads", "?"))
    return "%s, %s cores" % (cpu, cores)


def group(series, prefix):
    return [s for s in series if s.name.startswith(prefix + "/")]


def load_note(rows):
    loads = [s.other_load for s in rows]
    noisy = sum(1 for v in loads if v > NOISY)
    note = "other load %.2f..%.2f cores" % (min(loads), max(loads))
    if noisy:
        note += " (hollow: > %.1f, %d of %d points)" % (NOISY, noisy, len(loads))
    return note


def finish(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    print("wrote %s (%d bytes)" % (path, os.path.getsize(path)))


def errorbars(ax, xs, rows, **kw):
    """Medians with min..max bars; points measured under more than NOISY cores of other load are hollow."""
    ms = [s.ms for s in rows]
    lo = [s.ms - s.lo for s in rows]
    hi = [s.hi - s.ms for s in rows]
    bars = ax.errorbar(xs, ms, yerr=[lo, hi], capsize=2, marker="o", markersize=4, **kw)
    noisy = [(x, s.ms) for x, s in zip(xs, rows) if s.other_load > NOISY]
    if noisy:
        ax.plot([p[0] for p in noisy], [p[1] for p in noisy], "o", markersize=5, markerfacecolor="white",
                markeredgecolor=bars[0].get_color(), zorder=5)
    return bars


def title(fig, what, context, rows):
    fig.suptitle(
        "%s\n%s; %s; medians, bars: min..max of %d repetitions"
        % (what, machine_line(context), load_note(rows), max(len(s.times) for s in rows)),
        fontsize=9,
    )


def frame_panel(ax, xs, rows):
    """The frame time (median, min..max bars) with its rebuild and find_pairs parts."""
    errorbars(ax, xs, rows, label="rebuild + find_pairs")
    ax.plot(xs, [s.counter("rebuild_ms") for s in rows], "s--", markersize=3, label="rebuild")
    ax.plot(xs, [s.counter("query_ms") for s in rows], "^--", markersize=3, label="find_pairs")
    ax.set_ylabel("ms per frame")


def plot_vs_n(context, series, out, summary):
    rows = sorted(group(series, "vs_n"), key=lambda s: s.counter("n"))
    if not rows:
        return
    n = [s.counter("n") for s in rows]
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    frame_panel(a, n, rows)
    a.set_xscale("log")
    a.set_yscale("log")
    a.set_xlabel("particles N (uniform unit cube, ~30 neighbours)")
    a.grid(True, which="both", alpha=0.3)
    a.legend(fontsize=8)
    b.plot(n, [s.counter("ns_per_particle") for s in rows], "o-", label="ns per particle")
    b.plot(n, [s.counter("ns_per_pair") for s in rows], "s-", label="ns per pair")
    b.set_xscale("log")
    b.set_ylim(bottom=0)
    b.set_xlabel("particles N")
    b.set_ylabel("ns")
    b.grid(True, which="both", alpha=0.3)
    b.legend(fontsize=8)
    threads = int(rows[0].counter("threads"))
    title(fig, "Hashgrid frame time vs particle count (bounded, cell = r, %d threads, random input order)" % threads,
          context, rows)
    finish(fig, os.path.join(out, "time_vs_n.png"))
    summary.append(("time vs N", ["N", "ms per frame", "ns/particle", "ns/pair", "other load"],
                    [["%d" % s.counter("n"), "%.3f [%.3f..%.3f]" % (s.ms, s.lo, s.hi),
                      "%.1f" % s.counter("ns_per_particle"), "%.2f" % s.counter("ns_per_pair"),
                      "%.2f" % s.other_load] for s in rows]))


def plot_vs_neighbours(context, series, out, summary):
    rows = sorted(group(series, "vs_neighbours"), key=lambda s: s.counter("k"))
    if not rows:
        return
    k = [s.counter("neighbours") for s in rows]
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    frame_panel(a, k, rows)
    a.set_xlabel("mean neighbours per particle (measured)")
    a.set_ylim(bottom=0)
    a.grid(True, alpha=0.3)
    a.legend(fontsize=8)
    b.plot(k, [s.counter("ns_per_pair") for s in rows], "s-", label="ns per pair")
    b2 = b.twinx()
    b2.plot(k, [s.counter("ns_per_particle") for s in rows], "o-", color="C1", label="ns per particle")
    b.set_xlabel("mean neighbours per particle")
    b.set_ylabel("ns per pair")
    b2.set_ylabel("ns per particle")
    b.set_ylim(bottom=0)
    b2.set_ylim(bottom=0)
    b.grid(True, alpha=0.3)
    lines = b.get_lines() + b2.get_lines()
    b.legend(lines, [line.get_label() for line in lines], fontsize=8)
    n = int(rows[0].counter("n"))
    threads = int(rows[0].counter("threads"))
    title(fig, "Hashgrid frame time vs neighbour count (N = %s, bounded, cell = r, %d threads)" % (f"{n:,}", threads),
          context, rows)
    finish(fig, os.path.join(out, "time_vs_neighbours.png"))
    summary.append(("time vs neighbours (N = %s)" % f"{n:,}",
                    ["neighbours", "ms per frame", "pairs", "ns/pair", "other load"],
                    [["%.1f" % s.counter("neighbours"), "%.2f [%.2f..%.2f]" % (s.ms, s.lo, s.hi),
                      "%d" % s.counter("pairs"), "%.2f" % s.counter("ns_per_pair"), "%.2f" % s.other_load]
                     for s in rows]))


def plot_vs_threads(context, series, out, summary):
    rows = sorted(group(series, "vs_threads"), key=lambda s: s.counter("threads"))
    if not rows:
        return
    t = [s.counter("threads") for s in rows]
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    frame_panel(a, t, rows)
    a.set_xlabel("threads (oneTBB)")
    a.set_xticks(t)
    a.set_ylim(bottom=0)
    a.grid(True, alpha=0.3)
    a.legend(fontsize=8)
    base = rows[0]
    b.plot(t, [base.ms / s.ms for s in rows], "o-", label="frame")
    b.plot(t, [base.counter("rebuild_ms") / s.counter("rebuild_ms") for s in rows], "s--", label="rebuild")
    b.plot(t, [base.counter("query_ms") / s.counter("query_ms") for s in rows], "^--", label="find_pairs")
    b.plot(t, t, ":", color="gray", label="ideal")
    b.set_xlabel("threads")
    b.set_ylabel("speed-up over 1 thread")
    b.set_xticks(t)
    b.grid(True, alpha=0.3)
    b.legend(fontsize=8)
    n = int(rows[0].counter("n"))
    title(fig, "Hashgrid frame time vs threads (N = %s, ~30 neighbours, bounded, cell = r)" % f"{n:,}", context, rows)
    finish(fig, os.path.join(out, "time_vs_threads.png"))
    summary.append(("time vs threads (N = %s)" % f"{n:,}",
                    ["threads", "ms per frame", "rebuild ms", "find_pairs ms", "speed-up", "other load"],
                    [["%d" % s.counter("threads"), "%.2f [%.2f..%.2f]" % (s.ms, s.lo, s.hi),
                      "%.2f" % s.counter("rebuild_ms"), "%.2f" % s.counter("query_ms"), "%.2f" % (base.ms / s.ms),
                      "%.2f" % s.other_load] for s in rows]))


def plot_vs_cell(context, series, out, summary):
    rows = group(series, "vs_cell")
    if not rows:
        return
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    table = []
    for ax, radius, what in ((axes[0], 0.0, "rebuild + find_pairs (all pairs)"),
                             (axes[1], 1.0, "rebuild + query_radius_batch (r around every particle)")):
        for bounded, label in ((1.0, "bounded"), (0.0, "unbounded")):
            sel = sorted([s for s in rows if s.counter("radius_op") == radius and s.counter("bounded") == bounded],
                         key=lambda s: s.counter("cell_factor"))
            if not sel:
                continue
            f = [s.counter("cell_factor") for s in sel]
            errorbars(ax, f, sel, label=label)
            best = min(sel, key=lambda s: s.ms)
            ax.annotate("fastest: %.3g r" % best.counter("cell_factor"), (best.counter("cell_factor"), best.ms),
                        textcoords="offset points", xytext=(4, 8), fontsize=7)
            for s in sel:
                table.append(["find_pairs" if radius == 0.0 else "radius queries", label,
                              "%.3f" % s.counter("cell_factor"), "%.2f [%.2f..%.2f]" % (s.ms, s.lo, s.hi),
                              "%.2f" % s.other_load])
        ax.set_title(what, fontsize=9)
        ax.set_xlabel("cell size / interaction radius r")
        ax.set_ylabel("ms per frame")
        ax.set_xlim(0.45, 2.05)
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].axvspan(0.45, 1.0, color="gray", alpha=0.15)
    axes[0].text(0.5, 0.05, "cell < r:\nnot allowed\nfor find_pairs", transform=axes[0].get_xaxis_transform(),
                 fontsize=7, color="dimgray")
    n = int(rows[0].counter("n"))
    threads = int(rows[0].counter("threads"))
    title(fig, "Hashgrid frame time vs cell size (N = %s, ~30 neighbours, %d threads)" % (f"{n:,}", threads),
          context, rows)
    finish(fig, os.path.join(out, "time_vs_cell_size.png"))
    summary.append(("time vs cell size (N = %s)" % f"{n:,}", ["operation", "world", "cell / r", "ms per frame",
                                                               "other load"], table))


# ---------------------------------------------------------------------------
# bench_frames CSV.


def load_frames(path):
    meta = {"series": {}}
    rows = collections.defaultdict(list)
    with open(path) as f:
        lines = f.readlines()
    body = []
    for line in lines:
        if line.startswith("# threads="):
            fields = dict(item.split("=", 1) for item in line[2:].split())
            meta["series"][int(fields["threads"])] = fields
        elif line.startswith("# bench_frames:"):
            meta["scene"] = line[len("# bench_frames:"):].strip()
        elif line.startswith("# ") and "=" in line:
            key, value = line[2:].strip().split("=", 1)
            meta[key] = value
        elif not line.startswith("#"):
            body.append(line)
    for r in csv.DictReader(body):
        rows[int(r["threads"])].append(float(r["total_ms"]))
    return meta, rows


def plot_frames(path, out, summary):
    meta, rows = load_frames(path)
    items = sorted(rows.items())
    fig, axes = plt.subplots(len(items), 1, figsize=(9, 1.2 + 2.2 * len(items)), sharex=True, squeeze=False)
    lo = min(min(v) for v in rows.values())
    hi = max(max(v) for v in rows.values())
    bins = [lo + (hi - lo) * i / 100 for i in range(101)]
    table = []
    allocations = []
    loads = []
    for i, (threads, times) in enumerate(items):
        ax = axes[i][0]
        colour = "C%d" % i
        m = meta["series"].get(threads, {})
        load = float(m.get("other_load", "nan"))
        ax.hist(times, bins=bins, color=colour, alpha=0.8)
        for key, style, label in (("p50_ms", "-", "p50"), ("p99_ms", "--", "p99"), ("max_ms", ":", "max")):
            value = float(m[key])
            ax.axvline(value, color="black", linestyle=style, linewidth=1, label="%s %.3f ms" % (label, value))
        ax.set_yscale("log")
        ax.set_ylabel("frames")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, loc="upper right",
                  title="%d thread%s, %d frames, other load %.2f cores, %s allocations"
                  % (threads, "" if threads == 1 else "s", len(times), load, m.get("allocations", "?")),
                  title_fontsize=8)
        allocations.append("%s (%d thread%s)" % (m.get("allocations", "?"), threads, "" if threads == 1 else "s"))
        loads.append(load)
        table.append(["%d" % threads, m.get("p50_ms"), m.get("p90_ms"), m.get("p99_ms"), m.get("max_ms"),
                      "%.2f" % (float(m["p99_ms"]) / float(m["p50_ms"])), m.get("allocations"), "%.2f" % load])
    axes[-1][0].set_xlabel("frame time, ms (rebuild + find_pairs)")
    fig.suptitle("Hashgrid frame times: %s\n%s, %s cores; other load <= %.2f cores; allocations in the measured "
                 "frames: %s" % (meta.get("scene", ""), meta.get("cpu_model", "unknown CPU"),
                                 meta.get("hardware_threads", "?"), max(loads), ", ".join(allocations)),
                 fontsize=9)
    finish(fig, os.path.join(out, "frame_times.png"))
    summary.append(("frame times (%s)" % meta.get("scene", ""),
                    ["threads", "p50 ms", "p90", "p99", "max", "p99/p50", "allocations", "other load"], table))


def write_demo_frame(source, out):
    from PIL import Image  # python3-pil, a dependency of python3-matplotlib

    target = os.path.join(out, "particles_2d.png")
    Image.open(source).save(target, optimize=True)
    print("wrote %s (%d bytes)" % (target, os.path.getsize(target)))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sweeps", nargs="+", help="bench_sweeps --benchmark_out JSON file(s)")
    parser.add_argument("--noisy", type=float, help="print a filter of the series above this other load, and stop")
    parser.add_argument("--frames", help="bench_frames --csv file")
    parser.add_argument("--demo-frame", help="a particles_demo --png picture to recompress into the output")
    parser.add_argument("--out", default="docs/plots", help="output folder (default docs/plots)")
    args = parser.parse_args()
    if args.noisy is not None:
        _, series = load_sweeps(args.sweeps)
        names = [s.name for s in series if s.other_load > args.noisy]
        print("^(%s)/" % "|".join(names) if names else "")
        return 0
    os.makedirs(args.out, exist_ok=True)
    summary = []
    if args.sweeps:
        context, series = load_sweeps(args.sweeps)
        plot_vs_n(context, series, args.out, summary)
        plot_vs_neighbours(context, series, args.out, summary)
        plot_vs_threads(context, series, args.out, summary)
        plot_vs_cell(context, series, args.out, summary)
        print("\nMachine: %s; load average at start %s; copy bandwidth %s / %s GB/s (1 / 2 threads)"
              % (machine_line(context), context.get("load_average_at_start"), context.get("copy_gb_per_s_1_thread"),
                 context.get("copy_gb_per_s_2_threads")))
    if args.frames:
        plot_frames(args.frames, args.out, summary)
    if args.demo_frame:
        write_demo_frame(args.demo_frame, args.out)
    for what, header, table in summary:
        print("\n%s\n\n| %s |\n|%s\n" % (what, " | ".join(header), "---|" * len(header)), end="")
        for row in table:
            print("| %s |" % " | ".join(str(c) for c in row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
