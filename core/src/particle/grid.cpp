// SPDX-License-Identifier: MIT
// Config validation, the memory layout and init.
#include "lattice/cell_table.h"
#include "particle/grid_internal.h"
#include "particle/grid_state.h"

#include "hashgrid/assert.h"

#include <cstring>
#include <new>

namespace hashgrid {

using namespace detail;

namespace {

Sizes sizes_of(const GridConfig& c) {
    Sizes s{};
    s.particles = c.max_particles;
    if (c.world == World::bounded) {
        uint64_t cells = uint64_t{c.cell_counts[0]} * c.cell_counts[1];
        if (c.dimensions == 3) cells *= c.cell_counts[2];
        s.cells = static_cast<uint32_t>(cells);
        s.slots = 0;
    } else {
        s.cells = c.max_cells;
        uint64_t slots = kMinTableSlots;
        while (slots < 2 * uint64_t{c.max_cells})
            slots *= 2;
        s.slots = static_cast<uint32_t>(slots);
    }
    uint64_t chunks = chunk_count(uint64_t{s.particles} + 1, kParticleGrain);
    const uint64_t candidates[] = {chunk_count(uint64_t{s.cells} + 1, kCellGrain), chunk_count(s.slots, kCellGrain),
                                   chunk_count(uint64_t{s.particles} + 1, kCellGrain)};
    for (uint64_t v : candidates)
        chunks = v > chunks ? v : chunks;
    s.chunk_slots = static_cast<uint32_t>(chunks + 1);
    s.radix_chunks = c.world == World::unbounded ? chunk_count(s.cells, kRadixGrain) : 0;
    s.pair_chunks = chunk_count(s.particles, kPairGrain);
    s.sort_grain = sort_grain_for(s.particles);
    s.sort_chunks = chunk_count(s.particles, s.sort_grain);
    s.buckets = bucket_capacity_for(s.particles);
    // A box of up to ~2 cells per particle: dense counting costs about as much
    // as the particles themselves, and far less than hashing each of them.
    s.dense = c.world == World::unbounded ? static_cast<uint32_t>(2 * uint64_t{s.particles} + 64) : 0;
    // Every chunk can leave one block partly filled: max_pairs always fits.
    s.pair_blocks = static_cast<uint32_t>((c.max_pairs + kPairBlock - 1) / kPairBlock + s.pair_chunks);
    return s;
}

/// Lays the block out: every array, each assigned to its field of `a` by
/// name, then room for the GridState itself at *state_at (base null:
/// measures only). Returns the total bytes.
uint64_t lay_out(const GridConfig& c, const Sizes& s, unsigned char* base, GridState& a, GridState** state_at) {
    Layout l(base);
    const uint64_t padded = uint64_t{s.particles} + kPad;
    const bool hashed = c.world == World::unbounded;
    a.order = l.take<uint32_t>(padded);
    for (uint32_t d = 0; d < 3; ++d)
        a.sorted[d] = d < c.dimensions ? l.take<float>(padded) : nullptr;
    a.sorted_radius = l.take<float>(padded);
    a.cell_start = l.take<uint32_t>(uint64_t{s.cells} + 1);
    a.cell_cursor = l.take<uint32_t>(uint64_t{s.cells} + 1);
    a.particle_cell = l.take<uint32_t>(padded);
    a.cell_key = hashed ? l.take<uint64_t>(s.cells) : nullptr;
    a.cell_slot = hashed ? l.take<uint32_t>(s.cells) : nullptr;
    a.slot_key = hashed ? l.take<uint64_t>(s.slots) : nullptr;
    a.slot_cell = hashed ? l.take<uint32_t>(s.slots) : nullptr;
    a.particle_key = hashed ? l.take<uint64_t>(s.particles) : nullptr;
    a.key_tmp = hashed ? l.take<uint64_t>(s.cells) : nullptr;
    a.radix_hist = hashed ? l.take<uint32_t>(uint64_t{s.radix_chunks} * 256) : nullptr;
    a.chunk_scratch = l.take<uint64_t>(s.chunk_slots);
    a.bad = l.take<BadParticle>(s.chunk_slots);
    a.pair_pool = l.take<Pair>(uint64_t{s.pair_blocks} * kPairBlock);
    a.block_next = l.take<uint32_t>(s.pair_blocks);
    a.chunk_first_block = l.take<uint32_t>(s.pair_chunks);
    a.chunk_pair_count = l.take<uint64_t>(s.pair_chunks);
    a.chunk_state = l.take<uint8_t>(s.pair_chunks);
    a.bucket_hist = l.take<uint32_t>(uint64_t{s.sort_chunks} * s.buckets);
    a.bucket_start = l.take<uint32_t>(uint64_t{s.buckets} + 1);
    // One region: the counting sort's scatter writes it as records of
    // (cell, index, position, radius) words, the merge as the arrays below.
    const uint64_t stage_words = uint64_t{s.particles} * (3 + c.dimensions);
    // Its parts are offsets into it (Layout: no pointer arithmetic while measuring).
    const uint64_t stage = l.reserve<uint32_t>(stage_words);
    const uint64_t column = uint64_t{s.particles} * sizeof(uint32_t);
    a.stage = l.at<uint32_t>(stage);
    a.stage_cell = a.stage;
    a.stage_index = l.at<uint32_t>(stage + column);
    for (uint32_t d = 0; d < 3; ++d)
        a.stage_pos[d] = d < c.dimensions ? l.at<float>(stage + column * (2 + d)) : nullptr;
    a.stage_radius = l.at<float>(stage + column * (2 + c.dimensions));
    a.dense_start = hashed ? l.take<uint32_t>(uint64_t{s.dense} + 1) : nullptr;
    a.dense_count = hashed ? l.take<uint32_t>(uint64_t{s.dense} + 1) : nullptr;
    a.chunk_box = l.take<int32_t>(uint64_t{s.chunk_slots} * 6);
    GridState* at = l.take<GridState>(1);
    if (state_at != nullptr) *state_at = at;
    return l.bytes();
}

} // namespace

Status validate(const GridConfig& c) {
    if (const Status s = validate(static_cast<const LatticeConfig&>(c)); !s.ok()) return s;
    if (!positive_finite(c.interaction_distance))
        return make_status(StatusCode::invalid_config, "interaction_distance must be finite and > 0");
    if (c.interaction_distance > c.cell_size)
        return make_status(StatusCode::invalid_config, "interaction_distance must be <= cell_size");
    if (c.max_particles == 0 || c.max_particles >= (1u << 31))
        return make_status(StatusCode::invalid_config, "max_particles must be in [1, 2^31)");
    if (c.max_pairs >= (uint64_t{1} << 40)) return make_status(StatusCode::invalid_config, "max_pairs must be < 2^40");
    if (c.world == World::unbounded && (c.max_cells == 0 || c.max_cells >= (1u << 30)))
        return make_status(StatusCode::invalid_config, "max_cells must be in [1, 2^30)");
    return {};
}

MemoryRequirements memory_requirements(const GridConfig& config) {
    return block_requirements(validate(config), [&] {
        GridState scratch;
        return lay_out(config, sizes_of(config), nullptr, scratch, nullptr);
    });
}

Grid::~Grid() { aligned_free_bytes(owned_memory_); }

Status Grid::init(const GridConfig& config, void* memory, size_t bytes) {
    return init_on_block(memory_requirements(config), memory, bytes, owned_memory_, [&](unsigned char* base) {
        const Sizes s = sizes_of(config);
        // The state lives in the new block, after the arrays; the old block (if
        // any) is not touched, and nothing can fail from here on.
        GridState arrays{};
        GridState* at = nullptr;
        lay_out(config, s, base, arrays, &at);
        auto* state = new (at) GridState(arrays);
        // The first frame's clear empties every slot (table_needs_full_clear).
        state->slot_capacity = s.slots;
        state->slot_count = s.slots;
        state->slot_shift = table_shift(s.slots);
        state->block_count = s.pair_blocks;
        state->sort_grain = s.sort_grain;
        state->bucket_capacity = s.buckets;
        state->dense_capacity = s.dense;
        // The sweep reads up to kPad values past the last particle: make them
        // ordinary numbers once (the lanes are masked out, but keep them defined).
        // The block fits in memory (memory_requirements checked it against
        // SIZE_MAX), so these sizes fit size_t on 32-bit targets too.
        const auto padded = static_cast<size_t>(s.particles) + kPad;
        std::memset(state->order, 0, padded * sizeof(uint32_t));
        for (float* a : state->sorted)
            if (a != nullptr) std::memset(a, 0, padded * sizeof(float));
        std::memset(state->sorted_radius, 0, padded * sizeof(float));
        std::memset(state->particle_cell, 0, padded * sizeof(uint32_t));
        std::memset(state->cell_start, 0, (static_cast<size_t>(s.cells) + 1) * sizeof(uint32_t));

        config_ = config;
        state_ = state;
        initialized_ = true;
    });
}

Status Grid::init_allocate(const GridConfig& config) {
    return init_allocate_block(memory_requirements(config), owned_memory_,
                               [&](void* block, size_t bytes) { return init(config, block, bytes); });
}

CellTableView Grid::cells() const {
    CellTableView v;
    if (state_ == nullptr || !state_->built) return v;
    v.cell_count = state_->cell_count;
    v.start = state_->cell_start;
    if (config_.world == World::unbounded) {
        v.key = state_->cell_key;
        v.wrapped = state_->wrapped;
        if (state_->mapped) {
            v.map_cell = state_->dense_count;
            for (uint32_t d = 0; d < 3; ++d) {
                v.map_lo[d] = state_->map_lo[d];
                v.map_extent[d] = state_->map_extent[d];
            }
        } else {
            v.slot_count = state_->slot_count;
            v.slot_key = state_->slot_key;
            v.slot_cell = state_->slot_cell;
        }
    }
    return v;
}

uint32_t Grid::particle_count() const { return state_ != nullptr ? state_->count : 0; }
const uint32_t* Grid::sorted_to_original() const { return state_ != nullptr ? state_->order : nullptr; }
const float* Grid::sorted_x() const { return state_ != nullptr ? state_->sorted[0] : nullptr; }
const float* Grid::sorted_y() const { return state_ != nullptr ? state_->sorted[1] : nullptr; }
const float* Grid::sorted_z() const { return state_ != nullptr ? state_->sorted[2] : nullptr; }
const float* Grid::sorted_radius() const {
    return state_ != nullptr && state_->has_radius ? state_->sorted_radius : nullptr;
}
uint32_t Grid::table_slots() const { return state_ != nullptr && !state_->mapped ? state_->slot_count : 0; }

const RebuildTimings& Grid::last_rebuild_timings() const {
    static const RebuildTimings kNone{};
    return state_ != nullptr ? state_->rebuild_timings : kNone;
}
const PairTimings& Grid::last_pair_timings() const {
    static const PairTimings kNone{};
    return state_ != nullptr ? state_->pair_timings : kNone;
}

} // namespace hashgrid
