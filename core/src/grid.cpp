// Config validation, the memory layout and init.
#include "grid_internal.h"

#include "hashgrid/assert.h"

#include <cmath>
#include <cstring>

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
        uint64_t slots = 256;
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

constexpr int kPointerCount = 33;

/// Assigns (or measures) every array. Returns total bytes.
uint64_t lay_out(const GridConfig& c, const Sizes& s, unsigned char* base, void** pointers) {
    Layout l(base);
    const uint64_t padded = uint64_t{s.particles} + kPad;
    int i = 0;
    pointers[i++] = l.take<uint32_t>(padded);                               // order_
    for (uint32_t d = 0; d < 3; ++d)                                        //
        pointers[i++] = d < c.dimensions ? l.take<float>(padded) : nullptr; // sorted_[d]
    pointers[i++] = l.take<float>(padded);                                  // sorted_radius_
    pointers[i++] = l.take<uint32_t>(uint64_t{s.cells} + 1);                // cell_start_
    pointers[i++] = l.take<uint32_t>(uint64_t{s.cells} + 1);                // cell_cursor_
    pointers[i++] = l.take<uint32_t>(padded);                               // particle_cell_
    const bool hashed = c.world == World::unbounded;
    pointers[i++] = hashed ? l.take<uint64_t>(s.cells) : nullptr;                        // cell_key_
    pointers[i++] = hashed ? l.take<uint32_t>(s.cells) : nullptr;                        // cell_slot_
    pointers[i++] = hashed ? l.take<uint64_t>(s.slots) : nullptr;                        // slot_key_
    pointers[i++] = hashed ? l.take<uint32_t>(s.slots) : nullptr;                        // slot_cell_
    pointers[i++] = hashed ? l.take<uint64_t>(s.particles) : nullptr;                    // particle_key_
    pointers[i++] = hashed ? l.take<uint64_t>(s.cells) : nullptr;                        // key_tmp_
    pointers[i++] = hashed ? l.take<uint32_t>(uint64_t{s.radix_chunks} * 256) : nullptr; // radix_hist_
    pointers[i++] = l.take<uint64_t>(s.chunk_slots);                                     // chunk_scratch_
    pointers[i++] = l.take<BadParticle>(s.chunk_slots);                                  // bad_
    pointers[i++] = l.take<Pair>(uint64_t{s.pair_blocks} * kPairBlock);                  // pair_pool_
    pointers[i++] = l.take<uint32_t>(s.pair_blocks);                                     // block_next_
    pointers[i++] = l.take<uint32_t>(s.pair_chunks);                                     // chunk_first_block_
    pointers[i++] = l.take<uint64_t>(s.pair_chunks);                                     // chunk_pair_count_
    pointers[i++] = l.take<uint8_t>(s.pair_chunks);                                      // chunk_overflow_
    pointers[i++] = l.take<uint32_t>(uint64_t{s.sort_chunks} * s.buckets);               // bucket_hist_
    pointers[i++] = l.take<uint32_t>(uint64_t{s.buckets} + 1);                           // bucket_start_
    pointers[i++] = l.take<uint32_t>(s.particles);                                       // stage_cell_
    pointers[i++] = l.take<uint32_t>(s.particles);                                       // stage_index_
    for (uint32_t d = 0; d < 3; ++d)                                                     // stage_pos_[d]
        pointers[i++] = d < c.dimensions ? l.take<float>(s.particles) : nullptr;
    pointers[i++] = l.take<float>(s.particles);                                 // stage_radius_
    pointers[i++] = hashed ? l.take<uint32_t>(uint64_t{s.dense} + 1) : nullptr; // dense_start_
    pointers[i++] = hashed ? l.take<uint32_t>(uint64_t{s.dense} + 1) : nullptr; // dense_count_
    pointers[i++] = l.take<int32_t>(uint64_t{s.chunk_slots} * 6);               // chunk_box_
    HASHGRID_ASSERT(i == kPointerCount, "lay_out: pointer count");
    return l.bytes();
}

} // namespace

Status validate(const GridConfig& c) {
    if (c.dimensions != 2 && c.dimensions != 3) return config_error("dimensions must be 2 or 3");
    if (!positive_finite(c.cell_size)) return config_error("cell_size must be finite and > 0");
    if (!positive_finite(c.interaction_distance)) return config_error("interaction_distance must be finite and > 0");
    if (c.interaction_distance > c.cell_size) return config_error("interaction_distance must be <= cell_size");
    for (uint32_t d = 0; d < c.dimensions; ++d)
        if (!std::isfinite(c.origin[d])) return config_error("origin must be finite");
    if (c.max_particles == 0 || c.max_particles >= (1u << 31))
        return config_error("max_particles must be in [1, 2^31)");
    if (c.max_pairs >= (uint64_t{1} << 40)) return config_error("max_pairs must be < 2^40");
    if (c.world == World::bounded) {
        uint64_t cells = 1;
        for (uint32_t d = 0; d < c.dimensions; ++d) {
            if (c.cell_counts[d] == 0) return config_error("bounded world: cell_counts must be >= 1");
            cells *= c.cell_counts[d];
            if (cells >= (uint64_t{1} << 31)) return config_error("bounded world: total cells must be < 2^31");
        }
        if (c.out_of_bounds != OutOfBounds::reject && c.out_of_bounds != OutOfBounds::clamp)
            return config_error("out_of_bounds must be reject or clamp");
    } else if (c.world == World::unbounded) {
        if (c.max_cells == 0 || c.max_cells >= (1u << 30)) return config_error("max_cells must be in [1, 2^30)");
    } else {
        return config_error("world must be bounded or unbounded");
    }
    return {};
}

MemoryRequirements memory_requirements(const GridConfig& config) {
    MemoryRequirements r;
    r.status = validate(config);
    if (!r.status.ok()) return r;
    void* pointers[kPointerCount];
    const uint64_t bytes = lay_out(config, sizes_of(config), nullptr, pointers);
    if (bytes > SIZE_MAX) {
        r.status = config_error("capacities need more memory than this target can address");
        return r;
    }
    r.bytes = bytes;
    r.alignment = kAlignment;
    return r;
}

Grid::~Grid() { aligned_free_bytes(owned_memory_); }

Status Grid::init(const GridConfig& config, void* memory, size_t bytes) {
    const MemoryRequirements req = memory_requirements(config);
    if (!req.status.ok()) return req.status;
    if (const Status s = check_block(req, memory, bytes); !s.ok()) return s;
    const Sizes s = sizes_of(config);
    void* p[kPointerCount];
    lay_out(config, s, static_cast<unsigned char*>(memory), p);
    int i = 0;
    order_ = static_cast<uint32_t*>(p[i++]);
    for (float*& a : sorted_)
        a = static_cast<float*>(p[i++]);
    sorted_radius_ = static_cast<float*>(p[i++]);
    cell_start_ = static_cast<uint32_t*>(p[i++]);
    cell_cursor_ = static_cast<uint32_t*>(p[i++]);
    particle_cell_ = static_cast<uint32_t*>(p[i++]);
    cell_key_ = static_cast<uint64_t*>(p[i++]);
    cell_slot_ = static_cast<uint32_t*>(p[i++]);
    slot_key_ = static_cast<uint64_t*>(p[i++]);
    slot_cell_ = static_cast<uint32_t*>(p[i++]);
    particle_key_ = static_cast<uint64_t*>(p[i++]);
    key_tmp_ = static_cast<uint64_t*>(p[i++]);
    radix_hist_ = static_cast<uint32_t*>(p[i++]);
    chunk_scratch_ = static_cast<uint64_t*>(p[i++]);
    bad_ = p[i++];
    pair_pool_ = static_cast<Pair*>(p[i++]);
    block_next_ = static_cast<uint32_t*>(p[i++]);
    chunk_first_block_ = static_cast<uint32_t*>(p[i++]);
    chunk_pair_count_ = static_cast<uint64_t*>(p[i++]);
    chunk_overflow_ = static_cast<uint8_t*>(p[i++]);
    bucket_hist_ = static_cast<uint32_t*>(p[i++]);
    bucket_start_ = static_cast<uint32_t*>(p[i++]);
    stage_cell_ = static_cast<uint32_t*>(p[i++]);
    stage_index_ = static_cast<uint32_t*>(p[i++]);
    for (float*& a : stage_pos_)
        a = static_cast<float*>(p[i++]);
    stage_radius_ = static_cast<float*>(p[i++]);
    dense_start_ = static_cast<uint32_t*>(p[i++]);
    dense_count_ = static_cast<uint32_t*>(p[i++]);
    chunk_box_ = static_cast<int32_t*>(p[i++]);
    HASHGRID_ASSERT(i == kPointerCount, "layout and init disagree");

    config_ = config;
    slot_count_ = s.slots;
    slot_shift_ = 64;
    for (uint32_t v = s.slots; v > 1; v >>= 1)
        --slot_shift_;
    block_count_ = s.pair_blocks;
    sort_grain_ = s.sort_grain;
    bucket_capacity_ = s.buckets;
    dense_capacity_ = s.dense;
    // The sweep reads up to kPad values past the last particle: make them
    // ordinary numbers once (the lanes are masked out, but keep them defined).
    // The block fits in memory (memory_requirements checked it against
    // SIZE_MAX), so these sizes fit size_t on 32-bit targets too.
    const auto padded = static_cast<size_t>(s.particles) + kPad;
    std::memset(order_, 0, padded * sizeof(uint32_t));
    for (float* a : sorted_)
        if (a != nullptr) std::memset(a, 0, padded * sizeof(float));
    std::memset(sorted_radius_, 0, padded * sizeof(float));
    std::memset(particle_cell_, 0, padded * sizeof(uint32_t));
    std::memset(cell_start_, 0, (static_cast<size_t>(s.cells) + 1) * sizeof(uint32_t));
    count_ = 0;
    cell_count_ = 0;
    built_ = false;
    has_radius_ = false;
    table_needs_full_clear_ = true;
    initialized_ = true;
    release_owned(owned_memory_, memory);
    return {};
}

Status Grid::init_allocate(const GridConfig& config) {
    return init_allocate_block(memory_requirements(config), owned_memory_,
                               [&](void* block, size_t bytes) { return init(config, block, bytes); });
}

CellTableView Grid::cells() const {
    CellTableView v;
    if (!built_) return v;
    v.cell_count = cell_count_;
    v.start = cell_start_;
    if (config_.world == World::unbounded) {
        v.key = cell_key_;
        v.slot_count = slot_count_;
        v.slot_key = slot_key_;
        v.slot_cell = slot_cell_;
        v.wrapped = wrapped_;
    }
    return v;
}

} // namespace hashgrid
