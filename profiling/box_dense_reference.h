// SPDX-License-Identifier: MIT
// The box grid a user would write by hand for a level of small boxes and a
// few large ones: a bounded dense grid of 3D boxes, rebuilt every frame by a
// counting sort, with the large objects kept out of it. bench_boxes runs it
// next to Hashgrid on the game-level scenes (G3, U3) so that the cost of
// mixed sizes can be read against what plain code pays for them on the same
// machine in the same run. It is a yardstick, not part of the library: one
// thread, no validation, no unbounded worlds, no layers, pairs in no fixed
// order, memory proportional to the box's cell count.
//
//   small objects (at most 2 cells on every axis): an entry in each cell
//       they cover, with a copy of the box and a bit per axis saying whether
//       the cell is the object's first on that axis;
//   small-small pairs: within each cell holding two or more entries, a pair
//       counts at the cell of the minimum corner of the two boxes'
//       intersection (each entry's first-cell bits, or-ed, cover every axis);
//   large-small pairs: each large object walks the rows of cells its box
//       covers; a row's entries are one contiguous run of the dense start
//       array, tested eight at a time (AVX2, where the CPU has it) with the
//       same minimum-corner rule: on x, entries past the box's first cell
//       must be their object's first, so no entry needs its own cell. Rows
//       lie far apart in memory, so each row's starts and entries are
//       prefetched a few rows before it is scanned;
//   large-large pairs: a sweep over the large objects sorted by min x.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#define HASHGRID_BOX_REFERENCE_AVX2 1
#endif

namespace box_dense_reference {

/// A pair of object indices, the smaller first; pairs come in no fixed order.
struct IndexPair {
    uint32_t a, b;
};

class BoxDenseGrid {
public:
    /// cells[d] cells of edge `cell` from origin[d] on each axis; boxes
    /// outside are clamped into the edge cells.
    BoxDenseGrid(const float origin[3], float cell, const uint32_t cells[3], uint32_t max_objects, uint32_t max_entries,
                 uint64_t max_pairs)
        : inv_cell_(1.0f / cell), count_(static_cast<size_t>(cells[0]) * cells[1] * cells[2] + 1),
          start_(count_.size()), entry_object_(max_entries + kPad), entry_flags_(max_entries + kPad),
          pairs_(max_pairs + 1), capacity_(max_pairs) {
#if HASHGRID_BOX_REFERENCE_AVX2
        avx2_ = __builtin_cpu_supports("avx2") != 0;
#endif
        for (uint32_t d = 0; d < 3; ++d) {
            origin_[d] = origin[d];
            cells_[d] = cells[d];
            entry_min_[d].resize(max_entries + kPad);
            entry_max_[d].resize(max_entries + kPad);
            cell_lo_[d].resize(max_objects);
            cell_hi_[d].resize(max_objects);
        }
        large_.reserve(max_objects);
        busy_cells_.reserve(count_.size());
    }

    /// Bins the boxes; false when they need more entries than max_entries.
    bool rebuild(const float* const lo[3], const float* const hi[3], uint32_t n) {
        for (uint32_t d = 0; d < 3; ++d) {
            lo_[d] = lo[d];
            hi_[d] = hi[d];
        }
        large_.clear();
        std::fill(count_.begin(), count_.end(), 0u);
        uint64_t entries = 0;
        for (uint32_t i = 0; i < n; ++i) {
            for (uint32_t d = 0; d < 3; ++d) {
                cell_lo_[d][i] = cell_of(d, lo[d][i]);
                cell_hi_[d][i] = cell_of(d, hi[d][i]);
            }
            if (!small(i)) {
                large_.push_back(i);
                continue;
            }
            for_cells(i, [&](uint32_t c, uint32_t) {
                ++count_[c];
                ++entries;
            });
        }
        if (entries > entry_object_.size() - kPad) return false;
        // Starts, and the cells where small-small pairs can be.
        busy_cells_.clear();
        uint32_t at = 0;
        for (size_t c = 0; c + 1 < count_.size(); ++c) {
            start_[c] = at;
            if (count_[c] >= 2) busy_cells_.push_back(static_cast<uint32_t>(c));
            at += count_[c];
            count_[c] = start_[c]; // the next free slot of cell c
        }
        start_[count_.size() - 1] = at;
        for (uint32_t i = 0; i < n; ++i) {
            if (!small(i)) continue;
            for_cells(i, [&](uint32_t c, uint32_t flags) {
                const uint32_t e = count_[c]++;
                entry_object_[e] = i;
                entry_flags_[e] = flags;
                for (uint32_t d = 0; d < 3; ++d) {
                    entry_min_[d][e] = lo[d][i];
                    entry_max_[d][e] = hi[d][i];
                }
            });
        }
        // The large objects by min x, for their sweep.
        const float* lo_x = lo[0];
        std::sort(large_.begin(), large_.end(),
                  [lo_x](uint32_t a, uint32_t b) { return lo_x[a] < lo_x[b] || (lo_x[a] == lo_x[b] && a < b); });
        return true;
    }

    /// Finds every overlapping pair (closed boxes) into pairs(); returns the
    /// count (pairs past max_pairs are counted, not kept).
    uint64_t find_pairs() {
        n_ = 0;
        candidates_ = 0;
        small_pairs();
        large_small_pairs();
        large_large_pairs();
        return n_;
    }

    [[nodiscard]] const IndexPair* pairs() const { return pairs_.data(); }
    /// Box tests the last find_pairs made (entry pairs, entries of the large objects' rows, large pairs).
    [[nodiscard]] uint64_t candidates() const { return candidates_; }

private:
    /// Entries past the last one, read (and masked off) by the 8-wide row scan.
    static constexpr uint32_t kPad = 8;

    uint32_t cell_of(uint32_t d, float v) const {
        const float x = std::floor((v - origin_[d]) * inv_cell_);
        const float last = static_cast<float>(cells_[d] - 1);
        return static_cast<uint32_t>(std::clamp(x, 0.0f, last));
    }
    [[nodiscard]] uint32_t linear(uint32_t x, uint32_t y, uint32_t z) const {
        return (z * cells_[1] + y) * cells_[0] + x;
    }
    /// Object i spans at most 2 cells on every axis: it goes into the grid.
    [[nodiscard]] bool small(uint32_t i) const {
        return cell_hi_[0][i] - cell_lo_[0][i] <= 1 && cell_hi_[1][i] - cell_lo_[1][i] <= 1 &&
               cell_hi_[2][i] - cell_lo_[2][i] <= 1;
    }
    /// f(cell, first-cell bits) for every cell of small object i.
    template <typename F>
    void for_cells(uint32_t i, F&& f) const {
        for (uint32_t z = cell_lo_[2][i]; z <= cell_hi_[2][i]; ++z)
            for (uint32_t y = cell_lo_[1][i]; y <= cell_hi_[1][i]; ++y)
                for (uint32_t x = cell_lo_[0][i]; x <= cell_hi_[0][i]; ++x)
                    f(linear(x, y, z), (x == cell_lo_[0][i] ? 1u : 0u) | (y == cell_lo_[1][i] ? 2u : 0u) |
                                           (z == cell_lo_[2][i] ? 4u : 0u));
    }
    /// Keeps (a, b) when `keep` (branch-free: whether a pair holds is unpredictable).
    void emit(uint32_t a, uint32_t b, bool keep) {
        const uint64_t slot = n_ < capacity_ ? n_ : capacity_;
        pairs_[slot] = IndexPair{std::min(a, b), std::max(a, b)};
        n_ += keep ? 1u : 0u;
    }
    /// 1 when entries e and f overlap (closed), else 0; no branch.
    [[nodiscard]] uint32_t entries_overlap(uint32_t e, uint32_t f) const {
        uint32_t hit = 1;
        for (uint32_t d = 0; d < 3; ++d)
            hit &= static_cast<uint32_t>(entry_min_[d][e] <= entry_max_[d][f]) &
                   static_cast<uint32_t>(entry_min_[d][f] <= entry_max_[d][e]);
        return hit;
    }

    void small_pairs() {
        for (const uint32_t c : busy_cells_) {
            const uint32_t end = start_[c + 1];
            candidates_ += uint64_t{end - start_[c]} * (end - start_[c] - 1) / 2;
            for (uint32_t e = start_[c]; e < end; ++e)
                for (uint32_t f = e + 1; f < end; ++f)
                    emit(entry_object_[e], entry_object_[f],
                         (entries_overlap(e, f) & static_cast<uint32_t>((entry_flags_[e] | entry_flags_[f]) == 7u)) !=
                             0);
        }
    }

    /// The entries [e0, e1) that overlap box `big` and carry the first-cell bits `need`.
    void scan_run(uint32_t big, const float box_lo[3], const float box_hi[3], uint32_t need, uint32_t e0, uint32_t e1) {
        candidates_ += e1 - e0;
        for (uint32_t e = e0; e < e1; ++e) {
            auto hit = static_cast<uint32_t>((entry_flags_[e] & need) == need);
            for (uint32_t d = 0; d < 3; ++d)
                hit &= static_cast<uint32_t>(entry_min_[d][e] <= box_hi[d]) &
                       static_cast<uint32_t>(box_lo[d] <= entry_max_[d][e]);
            emit(entry_object_[e], big, hit != 0);
        }
    }

#if HASHGRID_BOX_REFERENCE_AVX2
    /// The entries [e0, e1) that overlap box `big` and carry the first-cell
    /// bits `need`, plus bit x from entry `split` on: the row's two runs in
    /// one pass, eight entries at a time. Pairs go to the buffer from `n` on
    /// (those past the capacity all to its last slot); returns the new n.
    __attribute__((target("avx2"))) uint64_t scan_row_avx2(uint32_t big, const __m256 box_lo[3], const __m256 box_hi[3],
                                                           uint32_t need, uint32_t e0, uint32_t split, uint32_t e1,
                                                           uint64_t n) {
        const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        const __m256i need_v = _mm256_set1_epi32(static_cast<int>(need));
        const __m256i one = _mm256_set1_epi32(1);
        const __m256i last_of_first_run = _mm256_set1_epi32(static_cast<int>(split) - 1);
        const uint64_t limit = capacity_;
        for (uint32_t e = e0; e < e1; e += 8) {
            const __m256i index = _mm256_add_epi32(_mm256_set1_epi32(static_cast<int>(e)), lane);
            const __m256i need_e =
                _mm256_or_si256(need_v, _mm256_and_si256(_mm256_cmpgt_epi32(index, last_of_first_run), one));
            const __m256i flags = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(entry_flags_.data() + e));
            __m256 hit = _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(flags, need_e), need_e));
            for (uint32_t d = 0; d < 3; ++d) {
                hit =
                    _mm256_and_ps(hit, _mm256_cmp_ps(_mm256_loadu_ps(entry_min_[d].data() + e), box_hi[d], _CMP_LE_OQ));
                hit =
                    _mm256_and_ps(hit, _mm256_cmp_ps(box_lo[d], _mm256_loadu_ps(entry_max_[d].data() + e), _CMP_LE_OQ));
            }
            const uint32_t left = e1 - e;
            auto mask = static_cast<uint32_t>(_mm256_movemask_ps(hit)) & (left >= 8 ? 0xffu : (1u << left) - 1u);
            for (; mask != 0; mask &= mask - 1) {
                const uint32_t o = entry_object_[e + static_cast<uint32_t>(__builtin_ctz(mask))];
                pairs_[n < limit ? n : limit] = IndexPair{o < big ? o : big, o < big ? big : o};
                ++n;
            }
        }
        return n;
    }
#endif

    /// Rows ahead whose starts, then entries, are requested from memory
    /// before they are scanned: rows are far apart, so each is a cache miss.
    static constexpr uint32_t kStartsAhead = 4;
    static constexpr uint32_t kEntriesAhead = 2;

    void large_small_pairs() {
        for (const uint32_t big : large_) {
            const float box_lo[3] = {lo_[0][big], lo_[1][big], lo_[2][big]};
            const float box_hi[3] = {hi_[0][big], hi_[1][big], hi_[2][big]};
            const uint32_t x0 = cell_lo_[0][big], x1 = cell_hi_[0][big];
            const uint32_t rows = (cell_hi_[1][big] - cell_lo_[1][big] + 1) * (cell_hi_[2][big] - cell_lo_[2][big] + 1);
            if (row_cell_.size() < rows) {
                row_cell_.resize(rows); // grows to the largest object's rows, then stays
                row_need_.resize(rows);
            }
            uint32_t* const row_cell = row_cell_.data(); // the row's cell at the big box's first x
            uint32_t* const row_need = row_need_.data();
            uint32_t r = 0;
            for (uint32_t z = cell_lo_[2][big]; z <= cell_hi_[2][big]; ++z)
                for (uint32_t y = cell_lo_[1][big]; y <= cell_hi_[1][big]; ++y, ++r) {
                    row_cell[r] = linear(x0, y, z);
                    // Bits the entry must carry on y and z: none where the row is the big box's first.
                    row_need[r] = (y == cell_lo_[1][big] ? 0u : 2u) | (z == cell_lo_[2][big] ? 0u : 4u);
                }
            const uint32_t span = x1 - x0; // cells after the first in a row
#if HASHGRID_BOX_REFERENCE_AVX2
            if (avx2_) {
                large_rows_avx2(big, box_lo, box_hi, row_cell, row_need, rows, span);
                continue;
            }
#endif
            for (uint32_t row = 0; row < rows; ++row) {
                const uint32_t c = row_cell[row];
                scan_run(big, box_lo, box_hi, row_need[row], start_[c], start_[c + 1]);
                scan_run(big, box_lo, box_hi, row_need[row] | 1u, start_[c + 1], start_[c + span + 1]);
            }
        }
    }

#if HASHGRID_BOX_REFERENCE_AVX2
    /// The rows of one large object, each row's starts and entries requested
    /// from memory a few rows before it is scanned: rows lie far apart, and
    /// each would otherwise wait for its cache lines.
    __attribute__((target("avx2"))) void large_rows_avx2(uint32_t big, const float box_lo[3], const float box_hi[3],
                                                         const uint32_t* row_cell, const uint32_t* row_need,
                                                         uint32_t rows, uint32_t span) {
        __m256 lo_v[3], hi_v[3];
        for (uint32_t d = 0; d < 3; ++d) {
            lo_v[d] = _mm256_set1_ps(box_lo[d]);
            hi_v[d] = _mm256_set1_ps(box_hi[d]);
        }
        const float* const arrays[6] = {entry_min_[0].data(), entry_min_[1].data(), entry_min_[2].data(),
                                        entry_max_[0].data(), entry_max_[1].data(), entry_max_[2].data()};
        uint64_t n = n_;
        for (uint32_t r = 0; r < rows; ++r) {
            if (r + kStartsAhead < rows) __builtin_prefetch(&start_[row_cell[r + kStartsAhead]]);
            if (r + kEntriesAhead < rows) {
                const uint32_t e = start_[row_cell[r + kEntriesAhead]];
                for (const float* array : arrays)
                    __builtin_prefetch(array + e);
                __builtin_prefetch(entry_flags_.data() + e);
            }
            const uint32_t c = row_cell[r];
            candidates_ += start_[c + span + 1] - start_[c];
            n = scan_row_avx2(big, lo_v, hi_v, row_need[r], start_[c], start_[c + 1], start_[c + span + 1], n);
        }
        n_ = n;
    }
#endif

    void large_large_pairs() {
        for (size_t p = 0; p < large_.size(); ++p) {
            const uint32_t a = large_[p];
            for (size_t q = p + 1; q < large_.size() && lo_[0][large_[q]] <= hi_[0][a]; ++q) {
                const uint32_t b = large_[q];
                ++candidates_;
                uint32_t hit = 1;
                for (uint32_t d = 1; d < 3; ++d)
                    hit &=
                        static_cast<uint32_t>(lo_[d][a] <= hi_[d][b]) & static_cast<uint32_t>(lo_[d][b] <= hi_[d][a]);
                emit(a, b, hit != 0);
            }
        }
    }

    float origin_[3] = {0.0f, 0.0f, 0.0f};
    uint32_t cells_[3] = {1, 1, 1};
    float inv_cell_ = 1.0f;
    const float* lo_[3] = {};
    const float* hi_[3] = {};
    std::vector<uint32_t> cell_lo_[3], cell_hi_[3]; ///< Per object.
    std::vector<uint32_t> count_, start_;           ///< Per cell (+ 1).
    std::vector<uint32_t> busy_cells_;              ///< Cells with two or more entries.
    std::vector<uint32_t> large_;                   ///< Large objects by min x.
    std::vector<float> entry_min_[3], entry_max_[3];
    std::vector<uint32_t> entry_object_, entry_flags_;
    std::vector<uint32_t> row_cell_, row_need_; ///< One large object's rows.
    std::vector<IndexPair> pairs_;              ///< capacity_ + 1 (the last takes what does not fit).
    uint64_t capacity_ = 0;
    uint64_t n_ = 0;
    uint64_t candidates_ = 0;
    bool avx2_ = false;
};

} // namespace box_dense_reference
