// SPDX-License-Identifier: MIT
// nanoflann's dataset adaptor over structure-of-arrays float coordinates, for
// the profiling programs that compare Hashgrid with nanoflann's kd-tree
// (bench_pairs: 3D, bench_queries: 2D). Needs nanoflann (libnanoflann-dev).
#pragma once

#include <nanoflann.hpp>

#include <cstddef>
#include <cstdint>

namespace hashgrid_support {

/// `n` points whose coordinate a is axis[a][i]; the pointers must outlive the tree.
template <size_t D>
struct NanoflannCloud {
    const float* axis[D];
    size_t n;
    [[nodiscard]] size_t kdtree_get_point_count() const { return n; }
    [[nodiscard]] float kdtree_get_pt(size_t index, size_t dim) const { return axis[dim][index]; }
    template <class Box>
    bool kdtree_get_bbox(Box&) const {
        return false; // let nanoflann compute the bounding box
    }
};

/// The L2 kd-tree over a NanoflannCloud with 32-bit point indices.
template <size_t D>
using NanoflannKdTree = nanoflann::KDTreeSingleIndexAdaptor<nanoflann::L2_Simple_Adaptor<float, NanoflannCloud<D>>,
                                                            NanoflannCloud<D>, static_cast<int>(D), uint32_t>;

} // namespace hashgrid_support
