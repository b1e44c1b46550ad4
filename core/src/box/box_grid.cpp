// SPDX-License-Identifier: MIT
// BoxGrid: config validation, the memory layout, init and the view.
#include "box/box_grid_internal.h"
#include "common/block_layout.h"

#include "hashgrid/assert.h"
#include "hashgrid/objects.h"

#include <algorithm>
#include <cstring>
#include <new>

namespace hashgrid {

using namespace detail;

namespace {

/// Pool blocks: max_pairs always fits when every chunk leaves at most one
/// block partly filled, so the slack is a block per chunk find_pairs can
/// have with this config (cells <= entries, large objects <= objects), or,
/// when max_pairs is larger, as many blocks as max_pairs fills. Queries of
/// find_pairs_with in more chunks than that may find the pool exhausted: such
/// a chunk is simply searched again straight into the caller's buffer
/// (common/pair_output.h).
uint32_t pool_blocks_for(const BoxGridConfig& c) {
    const uint64_t full = (c.max_pairs + kBoxPairBlock - 1) / kBoxPairBlock;
    const uint64_t cell_chunks =
        std::min<uint64_t>(kMaxCellChunks, (uint64_t{c.max_cell_entries} + kCellPairGrain - 1) / kCellPairGrain);
    const uint64_t large_chunks =
        std::min<uint64_t>(kMaxLargeChunks, (uint64_t{c.max_objects} + kLargePairGrain - 1) / kLargePairGrain);
    const uint64_t slack = std::min<uint64_t>(kMaxPairChunks, std::max(full + 4, cell_chunks + large_chunks));
    return static_cast<uint32_t>(full + slack);
}

/// Assigns (or measures) every array; `state` is null when measuring. Returns total bytes.
uint64_t lay_out(const BoxGridConfig& c, unsigned char* base, BoxState* state) {
    Layout l(base);
    BoxState scratch_state;
    BoxState& s = state != nullptr ? *state : scratch_state;
    l.take<BoxState>(1); // the state itself comes first
    const uint64_t n = c.max_objects;
    const uint64_t e = c.max_cell_entries;
    for (uint32_t d = 0; d < 3; ++d) { // padded: vector loads of the large-object sweep
        s.min[d] = d < c.dimensions ? l.take<float>(n + kEntryPad) : nullptr;
        s.max[d] = d < c.dimensions ? l.take<float>(n + kEntryPad) : nullptr;
    }
    s.category = l.take<uint32_t>(n);
    s.mask = l.take<uint32_t>(n);
    s.is_large = l.take<uint8_t>(n);
    s.large_object = l.take<uint32_t>(n);
    s.cell_key = l.take<uint64_t>(e);
    s.cell_start = l.take<uint32_t>(e + 1);
    s.row_start = l.take<uint32_t>(e + 1);
    for (uint32_t d = 0; d < 3; ++d) {
        s.entry_min[d] = d < c.dimensions ? l.take<float>(e + kEntryPad) : nullptr;
        s.entry_max[d] = d < c.dimensions ? l.take<float>(e + kEntryPad) : nullptr;
    }
    s.entry_flags = l.take<uint32_t>(e + kEntryPad);
    s.spare_cell_key = l.take<uint64_t>(e);
    s.spare_cell_start = l.take<uint32_t>(e + 1);
    for (uint32_t d = 0; d < 3; ++d) {
        s.spare_entry_min[d] = d < c.dimensions ? l.take<float>(e + kEntryPad) : nullptr;
        s.spare_entry_max[d] = d < c.dimensions ? l.take<float>(e + kEntryPad) : nullptr;
    }
    s.spare_entry_flags = l.take<uint32_t>(e + kEntryPad);
    s.payload[0] = l.take<uint32_t>(e + kEntryPad);
    s.payload[1] = l.take<uint32_t>(e + kEntryPad);
    s.sort_key[0] = l.take<uint64_t>(e);
    s.sort_key[1] = l.take<uint64_t>(e);
    s.object = c.dimensions == 3 ? static_cast<void*>(l.take<ObjectRecord<3>>(n)) : l.take<ObjectRecord<2>>(n);
    s.block_summary = l.take<BlockSummary>((n + 63) / 64);
    s.change.moved = l.take<uint64_t>((n + 63) / 64);
    s.change.leaving = l.take<uint64_t>((n + 63) / 64);
    s.object_chunk = l.take<ObjectChunk>(kMaxObjectChunks);
    s.radix_hist = l.take<uint32_t>(uint64_t{kMaxEntryChunks} << kMaxDigitBits);
    s.entry_chunk = l.take<uint64_t>(kMaxEntryChunks + 1);
    s.merge_counts = l.take<MergeCounts>(kMaxEntryChunks);
    s.listed_chunk = l.take<ListedChunk>(kMaxListedChunks);
    s.query_bad = l.take<BadParticle>(kMaxPairChunks);
    s.pair_chunk_first_block = l.take<uint32_t>(kMaxPairChunks);
    s.pair_chunk_count = l.take<uint64_t>(kMaxPairChunks);
    s.pair_chunk_state = l.take<uint8_t>(kMaxPairChunks);
    s.pool_blocks = pool_blocks_for(c);
    s.pool = l.take<Pair>(uint64_t{s.pool_blocks} * kBoxPairBlock);
    s.block_next = l.take<uint32_t>(s.pool_blocks);
    s.coarse_cell = l.take<uint32_t>(n);
    s.coarse_start = l.take<uint32_t>(2 * (coarse_cell_capacity(c.max_objects) + 2));
    s.coarse_object = l.take<CoarseObject>(n);
    return l.bytes();
}

} // namespace

Status BoxGrid::validate(const BoxGridConfig& c) {
    if (const Status s = hashgrid::validate(static_cast<const LatticeConfig&>(c)); !s.ok()) return s;
    // Cells are named by packed keys (cell_key.h) in bounded worlds too.
    if (c.world == World::bounded && c.dimensions == 3)
        for (const uint32_t count : c.cell_counts)
            if (count > uint32_t{kKeyLimit3} + 1)
                return detail::make_status(StatusCode::invalid_config,
                                           "bounded 3D world: each cell count must be <= 2^20 - 1");
    if (c.max_objects == 0 || c.max_objects >= (1u << 31))
        return detail::make_status(StatusCode::invalid_config, "max_objects must be in [1, 2^31)");
    if (c.max_cell_entries == 0 || c.max_cell_entries >= (1u << 31))
        return detail::make_status(StatusCode::invalid_config, "max_cell_entries must be in [1, 2^31)");
    if (c.max_pairs >= (uint64_t{1} << 40))
        return detail::make_status(StatusCode::invalid_config, "max_pairs must be < 2^40");
    if (c.large_object_cells == 0)
        return detail::make_status(StatusCode::invalid_config, "large_object_cells must be >= 1");
    return {};
}

MemoryRequirements BoxGrid::memory_requirements(const BoxGridConfig& config) {
    return block_requirements(validate(config), [&] { return lay_out(config, nullptr, nullptr); });
}

BoxGrid::~BoxGrid() { aligned_free_bytes(owned_memory_); }

Status BoxGrid::init(const BoxGridConfig& config, void* memory, size_t bytes) {
    const MemoryRequirements req = memory_requirements(config);
    return init_on_block(req, memory, bytes, owned_memory_, [&](unsigned char* base) {
        BoxState* state = new (base) BoxState();
        const uint64_t laid = lay_out(config, base, state);
        HASHGRID_ASSERT(laid == req.bytes, "layout and memory_requirements disagree");
        (void)laid;
        state->dims = config.dimensions;
        state->max_objects = config.max_objects;
        state->max_entries = config.max_cell_entries;
        state->cells = make_lattice(config);
        // Vector loads read up to kEntryPad entries (objects) past the last one,
        // masked out: keep every slot defined. (Sizes fit: req.bytes <= SIZE_MAX.)
        const auto entry_slots = static_cast<size_t>(uint64_t{config.max_cell_entries} + kEntryPad);
        const auto object_slots = static_cast<size_t>(uint64_t{config.max_objects} + kEntryPad);
        for (uint32_t d = 0; d < config.dimensions; ++d) {
            std::memset(state->entry_min[d], 0, entry_slots * sizeof(float));
            std::memset(state->entry_max[d], 0, entry_slots * sizeof(float));
            std::memset(state->spare_entry_min[d], 0, entry_slots * sizeof(float));
            std::memset(state->spare_entry_max[d], 0, entry_slots * sizeof(float));
            std::memset(state->min[d], 0, object_slots * sizeof(float));
            std::memset(state->max[d], 0, object_slots * sizeof(float));
        }
        std::memset(state->entry_flags, 0, entry_slots * sizeof(uint32_t));
        std::memset(state->spare_entry_flags, 0, entry_slots * sizeof(uint32_t));
        for (uint32_t* objects : state->payload) // entry_object is one of them
            std::memset(objects, 0, entry_slots * sizeof(uint32_t));
        state->cell_start[0] = 0;
        state->entry_object = state->payload[0];

        config_ = config;
        state_ = state;
        built_ = false;
        initialized_ = true;
        ++frame_; // views of the old block are stale
        source_store_ = nullptr;
        source_layout_ = 0;
    });
}

Status BoxGrid::init_allocate(const BoxGridConfig& config) {
    return init_allocate_block(memory_requirements(config), owned_memory_,
                               [&](void* block, size_t bytes) { return init(config, block, bytes); });
}

Status BoxGrid::rebuild(const BoxSpans& boxes, const ThreadBackend& backend) {
    const Status s = Impl::rebuild(*this, boxes, backend);
    if (s.ok()) { // a rejected frame keeps the previous one, and its source
        source_store_ = nullptr;
        source_layout_ = 0;
    }
    return s;
}

Status BoxGrid::rebuild(const ObjectStore& store, const ThreadBackend& backend) {
    HASHGRID_ASSERT(initialized_, "BoxGrid::rebuild called before a successful init");
    if (!initialized_) return detail::make_status(StatusCode::not_built, "box grid not initialized");
    if (!store.initialized())
        return detail::make_status(StatusCode::invalid_argument,
                                   "BoxGrid::rebuild: ObjectStore used before a successful init");
    const ObjectStoreConfig& sc = store.config();
    if (sc.dimensions != config_.dimensions)
        return detail::make_status(
            StatusCode::invalid_config,
            "BoxGrid::rebuild: ObjectStoreConfig::dimensions differs from BoxGridConfig::dimensions");
    if (sc.max_objects > config_.max_objects)
        return detail::make_status(
            StatusCode::invalid_config,
            "BoxGrid::rebuild: ObjectStoreConfig::max_objects exceeds BoxGridConfig::max_objects");
    // Rebuilt from this store's layout before: its change log may list what changed since.
    const bool same_source = built_ && source_store_ == &store && source_layout_ == store.layout_generation();
    const Status s = same_source
                         ? Impl::rebuild_changed(*this, store.spans(), store.changes_since(source_clock_), backend)
                         : Impl::rebuild(*this, store.spans(), backend);
    if (s.ok()) {
        source_store_ = &store;
        source_layout_ = store.layout_generation();
        source_clock_ = store.change_clock();
    }
    return s;
}

// Both pair searches stamp their result with the frame's layout
// (QueryResult::layout: 0 unless the frame was rebuilt from a store), whatever
// the status.
PairResult BoxGrid::find_pairs(Pair* out, uint64_t capacity, const ThreadBackend& backend, PairFilter filter) {
    PairResult r = Impl::find_pairs(*this, out, capacity, backend, filter);
    r.layout = source_layout_;
    return r;
}

PairResult BoxGrid::find_pairs_with(const BoxSpans& queries, Pair* out, uint64_t capacity, const ThreadBackend& backend,
                                    PairFilter filter) {
    PairResult r = Impl::find_pairs_with(*this, queries, out, capacity, backend, filter);
    r.layout = source_layout_;
    return r;
}

BoxGridView BoxGrid::view() const {
    BoxGridView v;
    v.config = &config_;
    v.scale = key_scale(config_.cell_size);
    v.built = initialized_ && built_;
    v.live_frame = &frame_;
    v.frame = frame_;
    v.source_store = source_store_;
    v.source_layout = source_layout_;
    v.trace = trace_;
    if (!initialized_) return v;
    const BoxState& s = Impl::state(*this);
    for (uint32_t d = 0; d < 3; ++d) {
        v.min[d] = s.min[d];
        v.max[d] = s.max[d];
    }
    v.category = s.category;
    v.mask = s.mask;
    v.category_common = s.category_common;
    v.cell_key = s.cell_key;
    v.cell_start = s.cell_start;
    v.entry_object = s.entry_object;
    for (uint32_t d = 0; d < config_.dimensions; ++d) {
        v.entry_min[d] = s.entry_min[d];
        v.entry_max[d] = s.entry_max[d];
    }
    v.entry_flags = s.entry_flags;
    v.entry_padding = kEntryPad;
    if (s.valid.rows) v.row_start = s.row_start;
    v.large_object = s.large_object;
    if (!built_) return v; // an empty frame
    v.object_count = s.object_count;
    v.cell_count = s.cell_count;
    v.large_count = s.large_count;
    v.bounds = &s.bounds;
    return v;
}

uint32_t BoxGrid::object_count() const { return initialized_ && built_ ? Impl::state(*this).object_count : 0; }

uint32_t BoxGrid::entry_count() const { return initialized_ && built_ ? Impl::state(*this).entry_count : 0; }

} // namespace hashgrid
