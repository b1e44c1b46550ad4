// SPDX-License-Identifier: MIT
// The grid a user would write by hand instead of using Hashgrid: a bounded
// dense grid of cell edge r, rebuilt every frame by a counting sort, and a
// pair kernel that tests each home cell against its forward neighbours.
// bench_pairs runs it next to Hashgrid so that Hashgrid's figures can be read
// against what a few hundred plain lines do on the same machine in the same
// run. It is a yardstick, not part of the library: no validation, no
// unbounded worlds, no radii, memory proportional to the box's cell count.
//
// The pair set is meant to be Hashgrid's exactly (bench_pairs checks it):
// cells come from the same guarded double-precision formula
// (hashgrid/cell_key.h), so a pair that passes the float test is never two
// cells apart, and the test is the same float expression, strict, in the
// same operation order (core/src/particle/sweep_impl.inc).
#pragma once

#include "hashgrid/platform/timer.h"
#include "hashgrid/thread_backend.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#define HASHGRID_DENSE_REFERENCE_AVX2 1
#endif

namespace dense_reference {

/// A pair of original (input) indices; the order within a pair is unspecified.
struct IndexPair {
    uint32_t a, b;
};

/// The grid's box: `cells[d]` cells of edge `r` from `origin` on each used
/// axis (1 on unused ones); points outside are clamped into the edge cells.
struct Box {
    uint32_t dims = 3;
    float origin[3] = {0.0f, 0.0f, 0.0f};
    uint32_t cells[3] = {1, 1, 1};
    float r = 1.0f;
};

namespace detail {

/// Candidate particles [begin, end) in sorted order.
struct Range {
    uint32_t begin, end;
};

/// What a sweep reads.
struct Frame {
    const float* x;
    const float* y;
    const float* z;
    const uint32_t* orig;
    const uint32_t* start;
    uint32_t cells[3];
    float r2;
};

/// One thread's output: its own region of the pair buffer (write mode), and
/// the exact count even when the region is full.
struct Out {
    IndexPair* cur = nullptr;
    IndexPair* end = nullptr;
    uint64_t dropped = 0;
    uint64_t counted = 0; ///< Count mode.

    void push(uint32_t a, uint32_t b) {
        if (cur == end) {
            ++dropped;
            return;
        }
        *cur++ = IndexPair{a, b};
    }
};

/// Homes per tile: two vectors of 8 keep a tile's coordinates in registers
/// (6 of AVX2's 16), so a candidate is loaded once for up to 16 homes.
constexpr uint32_t kTile = 16;

// The scalar fallback: the same test, lane by lane.
struct ScalarKernel {
    template <uint32_t D, bool Write, uint32_t G>
    [[gnu::always_inline]] static inline void tile(const Frame& f, uint32_t base, uint32_t homes, uint32_t right_end,
                                                   const Range* rows, uint32_t row_count, Out& out) {
        const auto test = [&](uint32_t i, uint32_t j) {
            const float dx = f.x[j] - f.x[i];
            const float dy = f.y[j] - f.y[i];
            float d2 = dx * dx + dy * dy;
            if constexpr (D == 3) {
                const float dz = f.z[j] - f.z[i];
                d2 = d2 + dz * dz;
            }
            if (d2 < f.r2) {
                if constexpr (Write)
                    out.push(f.orig[i], f.orig[j]);
                else
                    ++out.counted;
            }
        };
        for (uint32_t j = base + 1; j < right_end; ++j) {
            const uint32_t stop = std::min(j, base + homes);
            for (uint32_t i = base; i < stop; ++i)
                test(i, j);
        }
        for (uint32_t row = 0; row < row_count; ++row)
            for (uint32_t j = rows[row].begin; j < rows[row].end; ++j)
                for (uint32_t i = base; i < base + homes; ++i)
                    test(i, j);
    }
};

#if HASHGRID_DENSE_REFERENCE_AVX2
/// kCompress[m]: the set lanes of mask m, the k-th in slot {0, 1, 4, 5, 2, 3,
/// 6, 7}[k], because unpacklo/unpackhi interleave within 128-bit halves: the
/// pairs then come out as hits 0-3 and 4-7, in order (as in Hashgrid's kernel).
struct CompressTable {
    uint8_t lanes[256][8];
    constexpr CompressTable() : lanes{} {
        constexpr uint32_t kSlot[8] = {0, 1, 4, 5, 2, 3, 6, 7};
        for (uint32_t m = 0; m < 256; ++m) {
            uint32_t n = 0;
            for (uint32_t lane = 0; lane < 8; ++lane)
                if ((m >> lane) & 1u) lanes[m][kSlot[n++]] = static_cast<uint8_t>(lane);
        }
    }
};
inline constexpr CompressTable kCompress{};

// Homes in the lanes (up to G vectors of 8), each candidate broadcast once
// and tested against all of them.
struct Avx2Kernel {
    /// Bits of the first `count` lanes (count clamped into [0, 8]).
    [[gnu::always_inline]] __attribute__((target("avx2,popcnt"))) static inline uint32_t first_lanes(int64_t count) {
        return count <= 0 ? 0u : count >= 8 ? 0xffu : (1u << count) - 1u;
    }

    /// A candidate's coordinates in every lane.
    struct Candidate {
        __m256 x, y, z;
    };

    template <uint32_t D>
    [[gnu::always_inline]] __attribute__((target("avx2,popcnt"))) static inline Candidate
    candidate(const float* x, const float* y, const float* z, uint32_t j) {
        return Candidate{_mm256_set1_ps(x[j]), _mm256_set1_ps(y[j]),
                         D == 3 ? _mm256_set1_ps(z[j]) : _mm256_setzero_ps()};
    }

    /// Lanes whose home is within r of the candidate: d2 = (dx * dx + dy * dy) + dz * dz, strict, as in Hashgrid.
    template <uint32_t D>
    [[gnu::always_inline]] __attribute__((target("avx2,popcnt"))) static inline uint32_t
    hits(const Candidate& c, __m256 hx, __m256 hy, __m256 hz, __m256 r2) {
        const __m256 dx = _mm256_sub_ps(c.x, hx);
        const __m256 dy = _mm256_sub_ps(c.y, hy);
        __m256 d2 = _mm256_add_ps(_mm256_mul_ps(dx, dx), _mm256_mul_ps(dy, dy));
        if constexpr (D == 3) {
            const __m256 dz = _mm256_sub_ps(c.z, hz);
            d2 = _mm256_add_ps(d2, _mm256_mul_ps(dz, dz));
        }
        return static_cast<uint32_t>(_mm256_movemask_ps(_mm256_cmp_ps(d2, r2, _CMP_LT_OQ)));
    }

    template <bool Write>
    [[gnu::always_inline]] __attribute__((target("avx2,popcnt"))) static inline void
    emit(uint32_t m, __m256i home_orig, uint32_t cand, const uint32_t* home_orig_scalar, Out& out) {
        if constexpr (!Write) {
            out.counted += static_cast<uint32_t>(__builtin_popcount(m));
        } else if (out.end - out.cur >= 8) [[likely]] {
            // Always both stores and no branch on m: a hit mask is as good as random.
            const __m256i pick =
                _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(kCompress.lanes[m])));
            const __m256i homes = _mm256_permutevar8x32_epi32(home_orig, pick);
            const __m256i other = _mm256_set1_epi32(static_cast<int>(cand));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.cur), _mm256_unpacklo_epi32(homes, other));
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(out.cur + 4), _mm256_unpackhi_epi32(homes, other));
            out.cur += __builtin_popcount(m);
        } else {
            for (; m != 0; m &= m - 1)
                out.push(home_orig_scalar[__builtin_ctz(m)], cand);
        }
    }

    template <uint32_t D, bool Write, uint32_t G>
    __attribute__((target("avx2,popcnt"))) static inline void tile(const Frame& f, uint32_t base, uint32_t homes,
                                                                   uint32_t right_end, const Range* rows,
                                                                   uint32_t row_count, Out& tile_out) {
        // Locals, not fields behind references: the pair stores may alias
        // anything, so those would be reloaded (and `out` stored) around
        // every store, which cost the write mode a third (P3) to a half (C3)
        // of its time.
        Out out = tile_out;
        const float* const x = f.x;
        const float* const y = f.y;
        const float* const z = f.z;
        const uint32_t* const orig = f.orig;
        __m256 hx[G], hy[G], hz[G];
        __m256i ho[G];
        uint32_t valid[G];
#pragma GCC unroll 2
        for (uint32_t g = 0; g < G; ++g) {
            const uint32_t at = base + 8 * g;
            hx[g] = _mm256_loadu_ps(x + at);
            hy[g] = _mm256_loadu_ps(y + at);
            hz[g] = D == 3 ? _mm256_loadu_ps(z + at) : _mm256_setzero_ps();
            ho[g] = Write ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(orig + at)) : _mm256_setzero_si256();
            valid[g] = first_lanes(int64_t{homes} - 8 * g);
        }
        const __m256 r2 = _mm256_set1_ps(f.r2);
        // The home cell and the next one in x (contiguous): candidate j pairs
        // only with the homes before it, so each pair is found once.
        for (uint32_t j = base + 1; j < right_end; ++j) {
            const Candidate c = candidate<D>(x, y, z, j);
            const uint32_t o = orig[j];
#pragma GCC unroll 2
            for (uint32_t g = 0; g < G; ++g) {
                const uint32_t m =
                    hits<D>(c, hx[g], hy[g], hz[g], r2) & valid[g] & first_lanes(int64_t{j} - base - 8 * g);
                emit<Write>(m, ho[g], o, orig + base + 8 * g, out);
            }
        }
        for (uint32_t row = 0; row < row_count; ++row) {
            for (uint32_t j = rows[row].begin; j < rows[row].end; ++j) {
                const Candidate c = candidate<D>(x, y, z, j);
                const uint32_t o = orig[j];
#pragma GCC unroll 2
                for (uint32_t g = 0; g < G; ++g)
                    emit<Write>(hits<D>(c, hx[g], hy[g], hz[g], r2) & valid[g], ho[g], o, orig + base + 8 * g, out);
            }
        }
        tile_out = out;
    }
};
#endif

/// Sweeps home cells [cell_begin, cell_end). The forward half of the
/// neighbourhood, with x fastest, is the rest of the home cell plus the next
/// cell in x (one range), and whole 3-cell rows: y + 1 in the home plane, and
/// y - 1 .. y + 1 in the plane z + 1 (3D).
template <uint32_t D, bool Write, typename Kernel>
[[gnu::always_inline]] inline void sweep_cells(const Frame& f, uint32_t cell_begin, uint32_t cell_end, Out& out) {
    const uint32_t nx = f.cells[0], ny = f.cells[1], nz = f.cells[2];
    uint32_t x = cell_begin % nx, y = cell_begin / nx % ny, z = cell_begin / nx / ny;
    for (uint32_t c = cell_begin; c < cell_end; ++c) {
        const uint32_t s0 = f.start[c], s1 = f.start[c + 1];
        if (s0 != s1) {
            const uint32_t right_end = f.start[x + 1 < nx ? c + 2 : c + 1];
            const uint32_t x0 = x > 0 ? x - 1 : 0;
            const uint32_t x1 = x + 1 < nx ? x + 1 : x;
            Range rows[4];
            uint32_t row_count = 0;
            const auto add_row = [&](uint32_t ry, uint32_t rz) {
                const uint32_t row = nx * (ry + ny * rz);
                const Range r{f.start[row + x0], f.start[row + x1 + 1]};
                if (r.begin != r.end) rows[row_count++] = r;
            };
            if (y + 1 < ny) add_row(y + 1, z);
            if (D == 3 && z + 1 < nz) {
                if (y > 0) add_row(y - 1, z + 1);
                add_row(y, z + 1);
                if (y + 1 < ny) add_row(y + 1, z + 1);
            }
            for (uint32_t base = s0; base < s1; base += kTile) {
                const uint32_t homes = std::min(s1 - base, kTile);
                if (homes <= kTile / 2)
                    Kernel::template tile<D, Write, 1>(f, base, homes, right_end, rows, row_count, out);
                else
                    Kernel::template tile<D, Write, 2>(f, base, homes, right_end, rows, row_count, out);
            }
        }
        if (++x == nx) {
            x = 0;
            if (++y == ny) {
                y = 0;
                ++z;
            }
        }
    }
}

template <uint32_t D, bool Write>
void sweep_scalar(const Frame& f, uint32_t cell_begin, uint32_t cell_end, Out& out) {
    sweep_cells<D, Write, ScalarKernel>(f, cell_begin, cell_end, out);
}

#if HASHGRID_DENSE_REFERENCE_AVX2
template <uint32_t D, bool Write>
__attribute__((target("avx2,popcnt"))) void sweep_avx2(const Frame& f, uint32_t cell_begin, uint32_t cell_end,
                                                       Out& out) {
    sweep_cells<D, Write, Avx2Kernel>(f, cell_begin, cell_end, out);
}
#endif

/// Linear cells of points [begin, end). A loop of its own (no histogram in
/// it) so the compiler vectorizes the double arithmetic.
template <uint32_t D>
[[gnu::always_inline]] inline void cells_of(const float* const* pos, const double* origin, double scale,
                                            const uint32_t* n, uint32_t begin, uint32_t end,
                                            uint32_t* __restrict cell) {
    const float* __restrict px = pos[0];
    const float* __restrict py = pos[1];
    const float* __restrict pz = D == 3 ? pos[2] : pos[0];
    const double hx = n[0] - 1.0, hy = n[1] - 1.0, hz = n[2] - 1.0;
    for (uint32_t i = begin; i < end; ++i) {
        const double tx = std::min(std::max((static_cast<double>(px[i]) - origin[0]) * scale, 0.0), hx);
        const double ty = std::min(std::max((static_cast<double>(py[i]) - origin[1]) * scale, 0.0), hy);
        uint32_t c = static_cast<uint32_t>(tx) + n[0] * static_cast<uint32_t>(ty);
        if constexpr (D == 3) {
            const double tz = std::min(std::max((static_cast<double>(pz[i]) - origin[2]) * scale, 0.0), hz);
            c += n[0] * n[1] * static_cast<uint32_t>(tz);
        }
        cell[i] = c;
    }
}

template <uint32_t D>
void cells_scalar(const float* const* pos, const double* origin, double scale, const uint32_t* n, uint32_t begin,
                  uint32_t end, uint32_t* cell) {
    cells_of<D>(pos, origin, scale, n, begin, end, cell);
}

#if HASHGRID_DENSE_REFERENCE_AVX2
template <uint32_t D>
__attribute__((target("avx2"))) void cells_avx2(const float* const* pos, const double* origin, double scale,
                                                const uint32_t* n, uint32_t begin, uint32_t end, uint32_t* cell) {
    cells_of<D>(pos, origin, scale, n, begin, end, cell);
}
#endif

} // namespace detail

/// Rebuild timings of the last frame, in ns.
struct RebuildTimes {
    uint64_t keys = 0;    ///< Cells and per-thread histograms.
    uint64_t scan = 0;    ///< Prefix sum into cell starts and per-thread offsets.
    uint64_t scatter = 0; ///< Original indices in sorted order.
    uint64_t gather = 0;  ///< Sorted coordinates.
};

/// The grid. Every buffer is allocated at construction; rebuild() and the
/// pair functions allocate nothing. Work is split statically: thread t of T
/// takes the t-th contiguous share of the points (rebuild) or of the sorted
/// points, cut at cell boundaries (pairs).
class DenseGrid {
public:
    /// `threads`: the parallel_for's worker count the grid will be run with.
    /// `region_capacity`: pairs each thread's region holds (0: count mode only).
    DenseGrid(const Box& box, uint32_t max_points, uint32_t threads, uint64_t region_capacity)
        : box_(box), threads_(std::max(threads, 1u)), cell_count_(box.cells[0] * box.cells[1] * box.cells[2]) {
        // The guarded cell edge of hashgrid/cell_key.h: with it a pair that
        // passes the float test lies at most one cell apart per axis.
        scale_ = 1.0 / (static_cast<double>(box.r) * (1.0 + 1.0 / (1 << 18)));
        for (uint32_t d = 0; d < 3; ++d)
            origin_[d] = box.origin[d];
        cell_.resize(max_points);
        hist_.resize(size_t{threads_} * cell_count_);
        start_.resize(size_t{cell_count_} + 2);
        // Padding: a tile loads 8 homes from its base, past the last point.
        for (std::vector<float>* v : {&x_, &y_, &z_})
            v->assign(size_t{max_points} + detail::kTile, 0.0f);
        orig_.assign(size_t{max_points} + detail::kTile, 0u);
        chunk_total_.resize(threads_);
        cell_split_.resize(size_t{threads_} + 1);
        out_.resize(threads_);
        counts_.resize(threads_);
        grow_regions(region_capacity);
#if HASHGRID_DENSE_REFERENCE_AVX2
        avx2_ = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt");
#endif
    }

    /// Regions of `capacity` pairs per thread (a frame found more than fit).
    void grow_regions(uint64_t capacity) {
        region_capacity_ = capacity;
        regions_ = capacity == 0 ? nullptr : std::make_unique_for_overwrite<IndexPair[]>(threads_ * capacity);
    }
    [[nodiscard]] uint64_t region_capacity() const { return region_capacity_; }

    /// Sorts points [0, n) of pos[d][i] (d < dims) into cells.
    void rebuild(const float* const pos[3], uint32_t n, const hashgrid::ThreadBackend& backend) {
        n_ = n;
        const uint32_t cells = cell_count_;
        const uint64_t t0 = hashgrid::platform::now_ns();
        on_threads(backend, [&](uint32_t t) {
            const uint32_t begin = share(n, t), end = share(n, t + 1);
            uint32_t* hist = hist_.data() + size_t{t} * cells;
            std::memset(hist, 0, size_t{cells} * sizeof(uint32_t));
            // Blocks: their cells are still in L1 when the histogram reads them.
            constexpr uint32_t kBlock = 1024;
            for (uint32_t b = begin; b < end; b += kBlock) {
                const uint32_t e = std::min(end, b + kBlock);
                cells_block(pos, b, e);
                for (uint32_t i = b; i < e; ++i)
                    ++hist[cell_[i]];
            }
        });
        const uint64_t t1 = hashgrid::platform::now_ns();
        // Two passes over the histograms, split by cells: totals per share,
        // then each share's starts and per-thread offsets from its base.
        on_threads(backend, [&](uint32_t t) {
            uint32_t total = 0;
            for (uint32_t c = share(cells, t); c < share(cells, t + 1); ++c)
                for (uint32_t u = 0; u < threads_; ++u)
                    total += hist_[size_t{u} * cells + c];
            chunk_total_[t] = total;
        });
        on_threads(backend, [&](uint32_t t) {
            uint32_t running = 0;
            for (uint32_t u = 0; u < t; ++u)
                running += chunk_total_[u];
            for (uint32_t c = share(cells, t); c < share(cells, t + 1); ++c) {
                start_[c] = running;
                for (uint32_t u = 0; u < threads_; ++u) {
                    uint32_t& h = hist_[size_t{u} * cells + c];
                    const uint32_t count = h;
                    h = running;
                    running += count;
                }
            }
        });
        start_[cells] = n;
        start_[cells + 1] = n;
        const uint64_t t2 = hashgrid::platform::now_ns();
        // Only the index is scattered, then the coordinates gathered in
        // sorted order: one random write per point instead of four.
        on_threads(backend, [&](uint32_t t) {
            uint32_t* offset = hist_.data() + size_t{t} * cells;
            for (uint32_t i = share(n, t); i < share(n, t + 1); ++i)
                orig_[offset[cell_[i]]++] = i;
        });
        const uint64_t t3 = hashgrid::platform::now_ns();
        on_threads(backend, [&](uint32_t t) {
            const float* px = pos[0];
            const float* py = pos[1];
            const float* pz = box_.dims == 3 ? pos[2] : nullptr;
            for (uint32_t k = share(n, t); k < share(n, t + 1); ++k) {
                const uint32_t i = orig_[k];
                x_[k] = px[i];
                y_[k] = py[i];
                if (pz != nullptr) z_[k] = pz[i];
            }
        });
        const uint64_t t4 = hashgrid::platform::now_ns();
        times_ = {t1 - t0, t2 - t1, t3 - t2, t4 - t3};
    }

    /// Counts this frame's pairs (d2 < r * r).
    uint64_t count_pairs(const hashgrid::ThreadBackend& backend) { return sweep(backend, false); }

    /// Writes this frame's pairs into the threads' regions (region(t), region_count(t))
    /// and returns their total; more than fit are counted, not written (overflowed()).
    uint64_t write_pairs(const hashgrid::ThreadBackend& backend) { return sweep(backend, true); }

    [[nodiscard]] uint32_t threads() const { return threads_; }
    [[nodiscard]] const IndexPair* region(uint32_t t) const { return regions_.get() + t * region_capacity_; }
    /// Pairs written into region t (the last write_pairs).
    [[nodiscard]] uint64_t region_count(uint32_t t) const { return static_cast<uint64_t>(out_[t].cur - region(t)); }
    /// Pairs found by thread t (the last sweep), written or not.
    [[nodiscard]] uint64_t found(uint32_t t) const { return counts_[t]; }
    [[nodiscard]] bool overflowed() const {
        for (const detail::Out& o : out_)
            if (o.dropped != 0) return true;
        return false;
    }
    /// sorted_to_original()[k]: the input index of sorted point k.
    [[nodiscard]] const uint32_t* sorted_to_original() const { return orig_.data(); }
    [[nodiscard]] const RebuildTimes& last_rebuild_times() const { return times_; }

private:
    /// Start of share t of `count` items split T ways.
    [[nodiscard]] uint32_t share(uint32_t count, uint32_t t) const {
        return static_cast<uint32_t>(uint64_t{count} * t / threads_);
    }

    /// body(t) for every t < T, one chunk each. Through the benchmark's own
    /// backend, not a tbb::task_arena of our own: the backend's persistent
    /// loops hold oneTBB's workers, and a second arena would find none (it
    /// runs on the calling thread alone).
    template <typename Body>
    void on_threads(const hashgrid::ThreadBackend& backend, Body&& body) {
        hashgrid::parallel_chunks(backend, threads_, 1, [&](uint32_t begin, uint32_t end, uint32_t) {
            for (uint32_t t = begin; t < end; ++t)
                body(t);
        });
    }

    void cells_block(const float* const pos[3], uint32_t begin, uint32_t end) {
        using Fn = void (*)(const float* const*, const double*, double, const uint32_t*, uint32_t, uint32_t, uint32_t*);
        Fn fn = box_.dims == 3 ? &detail::cells_scalar<3> : &detail::cells_scalar<2>;
#if HASHGRID_DENSE_REFERENCE_AVX2
        if (avx2_) fn = box_.dims == 3 ? &detail::cells_avx2<3> : &detail::cells_avx2<2>;
#endif
        fn(pos, origin_, scale_, box_.cells, begin, end, cell_.data());
    }

    uint64_t sweep(const hashgrid::ThreadBackend& backend, bool write) {
        using Fn = void (*)(const detail::Frame&, uint32_t, uint32_t, detail::Out&);
        const bool d3 = box_.dims == 3;
        Fn fn = write ? (d3 ? &detail::sweep_scalar<3, true> : &detail::sweep_scalar<2, true>)
                      : (d3 ? &detail::sweep_scalar<3, false> : &detail::sweep_scalar<2, false>);
#if HASHGRID_DENSE_REFERENCE_AVX2
        if (avx2_)
            fn = write ? (d3 ? &detail::sweep_avx2<3, true> : &detail::sweep_avx2<2, true>)
                       : (d3 ? &detail::sweep_avx2<3, false> : &detail::sweep_avx2<2, false>);
#endif
        const detail::Frame f{x_.data(),      y_.data(),     z_.data(),
                              orig_.data(),   start_.data(), {box_.cells[0], box_.cells[1], box_.cells[2]},
                              box_.r * box_.r};
        // Home cells cut where the sorted points are shared evenly.
        for (uint32_t t = 0; t <= threads_; ++t)
            cell_split_[t] = t == threads_
                                 ? cell_count_
                                 : static_cast<uint32_t>(
                                       std::lower_bound(start_.begin(), start_.begin() + cell_count_, share(n_, t)) -
                                       start_.begin());
        on_threads(backend, [&](uint32_t t) {
            detail::Out& o = out_[t];
            o = {};
            if (write) {
                o.cur = regions_.get() + t * region_capacity_;
                o.end = o.cur + region_capacity_;
            }
            fn(f, cell_split_[t], cell_split_[t + 1], o);
            counts_[t] = write ? static_cast<uint64_t>(o.cur - region(t)) + o.dropped : o.counted;
        });
        uint64_t total = 0;
        for (uint64_t c : counts_)
            total += c;
        return total;
    }

    Box box_;
    uint32_t threads_;
    uint32_t cell_count_;
    uint32_t n_ = 0;
    double scale_ = 1.0;
    double origin_[3] = {0.0, 0.0, 0.0};
    bool avx2_ = false;
    std::vector<uint32_t> cell_;  ///< Per input point: its linear cell.
    std::vector<uint32_t> hist_;  ///< Per thread and cell: count, then next slot.
    std::vector<uint32_t> start_; ///< Per cell: first sorted point; [cells] = [cells + 1] = n.
    std::vector<float> x_, y_, z_;
    std::vector<uint32_t> orig_;
    std::vector<uint32_t> chunk_total_;
    std::vector<uint32_t> cell_split_;
    std::vector<detail::Out> out_;
    std::vector<uint64_t> counts_;
    std::unique_ptr<IndexPair[]> regions_;
    uint64_t region_capacity_ = 0;
    RebuildTimes times_;
};

} // namespace dense_reference
