// SPDX-License-Identifier: MIT
// Fuzz target: configs and memory of Grid, BoxGrid, ObjectStore and
// ProximityIndex. Every config field takes good and bad values; validate()
// and memory_requirements() are checked against the ranges the headers
// document; init() gets a block that is too small, misaligned, null or
// exact; init_allocate() and init() are chained into re-init sequences,
// including failing ones, after which the object must still work exactly as
// before (AddressSanitizer sees any use of a freed block).
#include "fuzz_common.h"

#include "hashgrid/box_grid.h"
#include "hashgrid/grid.h"
#include "hashgrid/objects.h"
#include "hashgrid/proximity_index.h"

#include <vector>

namespace {

using namespace hashgrid_fuzz;
using hashgrid::StatusCode;

constexpr uint64_t kMostBytes = uint64_t{8} << 20; // blocks larger than this are not allocated here

uint32_t capacity_value(Input& in) {
    static const uint32_t values[] = {0,        1,          2, 7, 64, 300, (1u << 30) - 1, 1u << 30, (1u << 31) - 1,
                                      1u << 31, 0xffffffffu};
    return in.below(3) == 0 ? in.pick(values) : 1 + in.below(200);
}
uint64_t pair_value(Input& in) {
    static const uint64_t values[] = {0, 1, 1000, (uint64_t{1} << 40) - 1, uint64_t{1} << 40, ~uint64_t{0}};
    return in.below(3) == 0 ? in.pick(values) : in.below(5000);
}
float size_value(Input& in) {
    static const float values[] = {1.0f,
                                   0.5f,
                                   2.0f,
                                   0.0f,
                                   -1.0f,
                                   std::numeric_limits<float>::quiet_NaN(),
                                   std::numeric_limits<float>::infinity(),
                                   std::numeric_limits<float>::denorm_min(),
                                   std::numeric_limits<float>::max(),
                                   -0.0f,
                                   1e-30f};
    return in.pick(values);
}
float origin_value(Input& in) { return in.below(4) == 0 ? special_float(in) : static_cast<float>(in.below(9)) - 4.0f; }
uint32_t dims_value(Input& in) {
    static const uint32_t values[] = {2, 3, 3, 2, 0, 1, 4, 0xffffffffu};
    return in.pick(values);
}
uint32_t cell_count_value(Input& in) {
    static const uint32_t values[] = {0, 1, 2, 5, 1u << 20, (1u << 20) - 1, 1u << 16, 0xffffffffu};
    return in.below(3) == 0 ? in.pick(values) : 1 + in.below(8);
}

hashgrid::GridConfig grid_config(Input& in) {
    hashgrid::GridConfig c;
    c.dimensions = dims_value(in);
    c.cell_size = size_value(in);
    c.interaction_distance = in.flag() ? c.cell_size : size_value(in);
    for (float& o : c.origin)
        o = origin_value(in);
    const uint8_t world = in.byte() % 5;
    c.world = world < 2 ? hashgrid::World::unbounded
                        : (world < 4 ? hashgrid::World::bounded : static_cast<hashgrid::World>(7));
    for (uint32_t& v : c.cell_counts)
        v = cell_count_value(in);
    const uint8_t oob = in.byte() % 5;
    c.out_of_bounds = oob < 4 ? static_cast<hashgrid::OutOfBounds>(oob & 1) : static_cast<hashgrid::OutOfBounds>(9);
    c.max_particles = capacity_value(in);
    c.max_cells = capacity_value(in);
    c.max_pairs = pair_value(in);
    return c;
}

bool positive_finite(float v) { return v > 0.0f && std::isfinite(v); }

/// The ranges of config.h, written out again.
bool grid_config_valid(const hashgrid::GridConfig& c) {
    if (c.dimensions != 2 && c.dimensions != 3) return false;
    if (!positive_finite(c.cell_size) || !positive_finite(c.interaction_distance)) return false;
    if (c.interaction_distance > c.cell_size) return false;
    for (uint32_t d = 0; d < c.dimensions; ++d)
        if (!std::isfinite(c.origin[d])) return false;
    if (c.max_particles == 0 || c.max_particles >= (1u << 31)) return false;
    if (c.max_pairs >= (uint64_t{1} << 40)) return false;
    if (c.world == hashgrid::World::bounded) {
        uint64_t cells = 1;
        for (uint32_t d = 0; d < c.dimensions; ++d) {
            if (c.cell_counts[d] == 0) return false;
            cells *= c.cell_counts[d];
            if (cells >= (uint64_t{1} << 31)) return false;
        }
        return c.out_of_bounds == hashgrid::OutOfBounds::reject || c.out_of_bounds == hashgrid::OutOfBounds::clamp;
    }
    if (c.world != hashgrid::World::unbounded) return false;
    return c.max_cells >= 1 && c.max_cells < (1u << 30);
}

hashgrid::BoxGridConfig box_config(Input& in) {
    hashgrid::BoxGridConfig c;
    c.dimensions = dims_value(in);
    c.cell_size = size_value(in);
    for (float& o : c.origin)
        o = origin_value(in);
    const uint8_t world = in.byte() % 5;
    c.world = world < 2 ? hashgrid::World::unbounded
                        : (world < 4 ? hashgrid::World::bounded : static_cast<hashgrid::World>(7));
    for (uint32_t& v : c.cell_counts)
        v = cell_count_value(in);
    const uint8_t oob = in.byte() % 5;
    c.out_of_bounds = oob < 4 ? static_cast<hashgrid::OutOfBounds>(oob & 1) : static_cast<hashgrid::OutOfBounds>(9);
    c.max_objects = capacity_value(in);
    c.max_cell_entries = capacity_value(in);
    c.max_pairs = pair_value(in);
    static const uint32_t large[] = {64, 0, 1, 1000, 0xffffffffu};
    c.large_object_cells = in.pick(large);
    return c;
}

/// The ranges of box_grid.h; a bounded 3D axis also needs a packed key
/// (cell_key.h: at most 2^20 - 1 cells).
bool box_config_valid(const hashgrid::BoxGridConfig& c) {
    if (c.dimensions != 2 && c.dimensions != 3) return false;
    if (!positive_finite(c.cell_size)) return false;
    for (uint32_t d = 0; d < c.dimensions; ++d)
        if (!std::isfinite(c.origin[d])) return false;
    if (c.max_objects == 0 || c.max_objects >= (1u << 31)) return false;
    if (c.max_cell_entries == 0 || c.max_cell_entries >= (1u << 31)) return false;
    if (c.max_pairs >= (uint64_t{1} << 40) || c.large_object_cells == 0) return false;
    if (c.world == hashgrid::World::bounded) {
        uint64_t cells = 1;
        for (uint32_t d = 0; d < c.dimensions; ++d) {
            if (c.cell_counts[d] == 0) return false;
            if (c.dimensions == 3 && c.cell_counts[d] > uint32_t{hashgrid::kKeyLimit3} + 1) return false;
            cells *= c.cell_counts[d];
            if (cells >= (uint64_t{1} << 31)) return false;
        }
        return c.out_of_bounds == hashgrid::OutOfBounds::reject || c.out_of_bounds == hashgrid::OutOfBounds::clamp;
    }
    return c.world == hashgrid::World::unbounded;
}

void check_requirements(const hashgrid::MemoryRequirements& r, const Status& v, bool valid) {
    FUZZ_CHECK(v.ok() == valid, "validate() differs from the documented ranges");
    // A valid config whose block exceeds SIZE_MAX (32-bit targets) is refused
    // by memory_requirements alone, as documented.
    const bool beyond_address_space =
        v.ok() && r.status.code == StatusCode::invalid_config && r.bytes == 0 && sizeof(size_t) < sizeof(uint64_t);
    FUZZ_CHECK(r.status.code == v.code || beyond_address_space, "memory_requirements status differs from validate()");
    if (!valid) FUZZ_CHECK(v.code == StatusCode::invalid_config && r.bytes == 0, "rejected config: code or bytes");
    if (valid && !beyond_address_space)
        FUZZ_CHECK(r.bytes > 0 && is_pow2(r.alignment), "accepted config: bytes or alignment");
}

/// A block for init(): exact, too small by `short_by`, misaligned by
/// `shift` bytes, or null. Returns the expected status code.
struct Block {
    std::vector<unsigned char> storage;
    void* pointer = nullptr;
    size_t bytes = 0;
    StatusCode expect = StatusCode::ok;
};

Block make_block(Input& in, const hashgrid::MemoryRequirements& r) {
    Block b;
    const uint8_t kind = in.byte() % 5;
    const auto exact = static_cast<size_t>(r.bytes);
    b.storage.resize(exact + 2 * r.alignment + 8);
    auto base = reinterpret_cast<uintptr_t>(b.storage.data());
    base = (base + r.alignment - 1) & ~static_cast<uintptr_t>(r.alignment - 1);
    b.pointer = reinterpret_cast<void*>(base);
    b.bytes = exact;
    if (kind == 1) {
        b.bytes = exact - 1 - in.below(static_cast<uint32_t>(std::min<uint64_t>(exact, 1024)));
        b.expect = StatusCode::memory_too_small;
    } else if (kind == 2 && r.alignment > 1) {
        b.pointer = reinterpret_cast<void*>(base + 1 + in.below(r.alignment - 1));
        b.expect = StatusCode::memory_misaligned;
    } else if (kind == 3) {
        b.pointer = nullptr;
        b.expect = StatusCode::memory_too_small; // or invalid_argument
    } else if (kind == 4) {
        b.bytes = exact + in.below(64);
    }
    return b;
}

bool block_status_ok(const Status& s, const Block& b, uint64_t needed) {
    if (b.pointer == nullptr) return s.code == StatusCode::memory_too_small || s.code == StatusCode::invalid_argument;
    if (b.expect == StatusCode::memory_too_small) return s.code == b.expect && s.needed == needed;
    return s.code == b.expect;
}

/// grid_frame()'s answer when the frame's positions were rejected as data.
constexpr uint64_t kRejected = ~uint64_t{0} - 1;

/// A small valid particle frame for a grid; returns the pair count it finds
/// (compared before and after a failing re-init).
uint64_t grid_frame(hashgrid::Grid& g, uint32_t n, std::vector<hashgrid::Pair>& pairs) {
    const hashgrid::GridConfig& c = g.config();
    std::vector<float> p[3];
    for (uint32_t d = 0; d < 3; ++d) {
        p[d].resize(n);
        for (uint32_t i = 0; i < n; ++i)
            p[d][i] = c.origin[d] + c.cell_size * 0.09f * static_cast<float>((i * (d + 3)) % 7);
    }
    const hashgrid::ParticleSpans s{p[0].data(), p[1].data(), p[2].data(), nullptr, n};
    const Status st = g.rebuild(s, serial());
    // origin + offset can overflow to inf or leave the key range for extreme
    // configs: a documented rejection of the data, not a failure of the grid.
    if (st.code == StatusCode::invalid_position || st.code == StatusCode::position_out_of_range) return kRejected;
    if (!st.ok()) return ~uint64_t{0};
    pairs.resize(c.max_pairs + 1);
    return g.find_pairs(pairs.data(), pairs.size(), serial()).total;
}

void grid_program(Input& in) {
    hashgrid::Grid uninit;
    {
        const float x = 0.0f;
        const hashgrid::ParticleSpans s{&x, &x, &x, nullptr, 1};
        const StatusCode code = uninit.rebuild(s, serial()).code;
        FUZZ_CHECK(code == StatusCode::not_built || code == StatusCode::invalid_argument,
                   "rebuild on an uninitialised grid did not fail");
        FUZZ_CHECK(uninit.find_pairs(nullptr, 0, serial()).status.code != StatusCode::ok,
                   "find_pairs on an uninitialised grid succeeded");
    }
    hashgrid::Grid g;
    bool live = false;       // g holds a working config
    uint64_t live_pairs = 0; // pairs of its last frame
    std::vector<hashgrid::Pair> pairs;
    const uint32_t steps = 1 + in.below(5);
    for (uint32_t step = 0; step < steps; ++step) {
        const hashgrid::GridConfig c = grid_config(in);
        const Status v = hashgrid::validate(c);
        const hashgrid::MemoryRequirements r = hashgrid::memory_requirements(c);
        check_requirements(r, v, grid_config_valid(c));
        const bool small = r.status.ok() && r.bytes <= kMostBytes && c.max_pairs <= 100000;
        Status s;
        if (in.flag()) {
            if (r.status.ok() && !small) continue; // too big to allocate here
            s = g.init_allocate(c);
            FUZZ_CHECK(s.code == r.status.code, "init_allocate status differs from validate()");
        } else {
            if (!r.status.ok()) {
                s = g.init(c, nullptr, 0);
                FUZZ_CHECK(s.code == StatusCode::invalid_config, "init with a bad config is not invalid_config");
            } else {
                if (!small) continue;
                Block b = make_block(in, r);
                s = g.init(c, b.pointer, b.bytes);
                FUZZ_CHECK(block_status_ok(s, b, r.bytes), "init: block status differs from the documented one");
                if (s.ok()) {
                    // Caller memory must outlive the grid: keep using it in this step only.
                    const uint32_t n = 1 + in.below(std::min<uint32_t>(c.max_particles, 64));
                    const uint64_t found = grid_frame(g, n, pairs);
                    FUZZ_CHECK(found != ~uint64_t{0}, "rebuild failed after init on caller memory");
                    (void)found;
                    // Leave the grid on its own block again before the storage goes.
                    hashgrid::GridConfig tiny;
                    tiny.max_particles = 4;
                    tiny.max_cells = 4;
                    tiny.max_pairs = 16;
                    FUZZ_CHECK(g.init_allocate(tiny).ok(), "init_allocate of a tiny config failed");
                    live_pairs = grid_frame(g, 4, pairs);
                    live = live_pairs != ~uint64_t{0} && live_pairs != kRejected;
                    continue;
                }
            }
        }
        if (s.ok()) {
            live_pairs = grid_frame(g, 1 + in.below(std::min<uint32_t>(c.max_particles, 64)), pairs);
            FUZZ_CHECK(live_pairs != ~uint64_t{0}, "rebuild failed after init_allocate");
            live = live_pairs != kRejected; // a rejected first frame leaves nothing to compare
        } else if (live) {
            // A failed re-init keeps the grid exactly as it was, last frame included.
            const hashgrid::PairResult again = g.find_pairs(nullptr, 0, serial());
            FUZZ_CHECK(again.total == live_pairs, "a failed re-init changed the last frame");
            live_pairs = grid_frame(g, std::min<uint32_t>(g.config().max_particles, 4), pairs);
            FUZZ_CHECK(live_pairs != ~uint64_t{0}, "grid unusable after a failed re-init");
            live = live_pairs != kRejected;
        }
    }
}

void box_program(Input& in) {
    hashgrid::BoxGrid g;
    bool live = false;
    const uint32_t steps = 1 + in.below(5);
    for (uint32_t step = 0; step < steps; ++step) {
        const hashgrid::BoxGridConfig c = box_config(in);
        const Status v = hashgrid::BoxGrid::validate(c);
        const hashgrid::MemoryRequirements r = hashgrid::BoxGrid::memory_requirements(c);
        check_requirements(r, v, box_config_valid(c));
        if (r.status.ok() && (r.bytes > kMostBytes || c.max_pairs > 100000)) continue;
        Status s;
        if (in.flag() || !r.status.ok()) {
            s = g.init_allocate(c);
            FUZZ_CHECK(s.code == r.status.code, "BoxGrid init_allocate status differs from validate()");
        } else {
            Block b = make_block(in, r);
            s = g.init(c, b.pointer, b.bytes);
            FUZZ_CHECK(block_status_ok(s, b, r.bytes), "BoxGrid init: block status");
            if (s.ok()) {
                hashgrid::BoxGridConfig tiny;
                tiny.max_objects = 4;
                tiny.max_cell_entries = 64;
                FUZZ_CHECK(g.init_allocate(tiny).ok(), "BoxGrid init_allocate of a tiny config failed");
                s = Status{};
            }
        }
        if (s.ok()) live = true;
        if (live) {
            // Works after any sequence, including a failed re-init.
            const uint32_t n = std::min<uint32_t>(g.config().max_objects, 3);
            const float lo[3] = {0.0f, 0.5f, 1.0f};
            const float hi[3] = {1.0f, 1.5f, 1.0f};
            const hashgrid::BoxSpans spans{lo, lo, lo, hi, hi, hi, nullptr, nullptr, n};
            const Status rs = g.rebuild(spans, serial());
            if (rs.ok()) {
                hashgrid::Pair pairs[8];
                const hashgrid::PairResult p = g.find_pairs(pairs, 8, serial());
                FUZZ_CHECK(p.total == (n == 3 ? 3u : (n == 2 ? 1u : 0u)) || p.status.code == StatusCode::pair_capacity,
                           "BoxGrid pairs wrong after a re-init sequence");
            }
        }
    }
}

void store_program(Input& in) {
    hashgrid::ObjectStore store;
    hashgrid::ProximityIndex index;
    const uint32_t steps = 1 + in.below(5);
    uint32_t live_objects = 0;
    bool store_live = false;
    for (uint32_t step = 0; step < steps; ++step) {
        if (in.flag()) {
            hashgrid::ObjectStoreConfig c;
            c.dimensions = dims_value(in);
            c.max_objects = capacity_value(in);
            c.handle_salt = in.u32();
            const bool valid =
                (c.dimensions == 2 || c.dimensions == 3) && c.max_objects >= 1 && c.max_objects < (1u << 31);
            const hashgrid::MemoryRequirements r = hashgrid::ObjectStore::memory_requirements(c);
            check_requirements(r, hashgrid::ObjectStore::validate(c), valid);
            if (r.status.ok() && r.bytes > kMostBytes) continue;
            Status s;
            if (in.flag() || !r.status.ok()) {
                s = store.init_allocate(c);
            } else {
                Block b = make_block(in, r);
                s = store.init(c, b.pointer, b.bytes);
                FUZZ_CHECK(block_status_ok(s, b, r.bytes), "ObjectStore init: block status");
                if (s.ok()) {
                    hashgrid::ObjectStoreConfig tiny;
                    tiny.max_objects = 4;
                    FUZZ_CHECK(store.init_allocate(tiny).ok(), "ObjectStore init_allocate of a tiny config failed");
                }
            }
            if (s.ok()) {
                store_live = true;
                live_objects = 0;
            }
            if (store_live) {
                // A failed init keeps the objects; a successful one empties the store.
                FUZZ_CHECK(store.size() == live_objects, "ObjectStore size wrong after a (failed) re-init");
                const hashgrid::ObjectBox box;
                if (store.add(box, 1, 1, 7).status.ok()) ++live_objects;
                FUZZ_CHECK(store.size() == live_objects, "ObjectStore add after re-init");
            }
        } else {
            hashgrid::ProximityIndexConfig c;
            c.grid = box_config(in);
            c.handle_salt = in.u32();
            const hashgrid::MemoryRequirements r = hashgrid::ProximityIndex::memory_requirements(c);
            check_requirements(r, hashgrid::ProximityIndex::validate(c), box_config_valid(c.grid));
            if (r.status.ok() && (r.bytes > kMostBytes || c.grid.max_pairs > 100000)) continue;
            const uint32_t before = index.initialized() ? index.client_count() : 0;
            const Status s = index.init_allocate(c);
            FUZZ_CHECK(s.code == r.status.code, "ProximityIndex init_allocate status differs from validate()");
            if (!s.ok() && index.initialized())
                FUZZ_CHECK(index.client_count() == before, "a failed ProximityIndex re-init changed the clients");
            if (index.initialized()) {
                const float pos[3] = {0.0f, 0.0f, 0.0f};
                const float ext[3] = {1.0f, 1.0f, 1.0f};
                (void)index.create_client(pos, ext);
                hashgrid::ObjectHandle out[4];
                const hashgrid::QueryResult q = index.find_near(pos, ext, hashgrid::kAllLayers, out, 4);
                FUZZ_CHECK(q.status.ok() || q.status.code == StatusCode::output_too_small,
                           "ProximityIndex query failed after a re-init sequence");
                FUZZ_CHECK(q.total == index.client_count() || q.total <= index.client_count(),
                           "ProximityIndex query count after re-init");
            }
        }
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    install_resume_hook();
    Input in(data, size);
    const uint8_t which = in.byte() % 3;
    if (which == 0) grid_program(in);
    if (which == 1) box_program(in);
    if (which == 2) store_program(in);
    return 0;
}
