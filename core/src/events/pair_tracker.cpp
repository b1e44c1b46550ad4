// SPDX-License-Identifier: MIT
// PairTracker's public calls (pair_tracker.h): the checks of each update form
// and how it reads a pair; the update itself is in pair_diff.h / .cpp.
#include "events/pair_diff.h"

#include "common/block_layout.h"
#include "common/status_make.h"

#include "hashgrid/assert.h"
#include "hashgrid/pair_tracker.h"

namespace hashgrid {
namespace detail {
namespace {

Status not_initialized() {
    HASHGRID_ASSERT(false, "PairTracker used before init");
    return make_status(StatusCode::invalid_argument, "PairTracker used before a successful init");
}

/// The checks every form makes on the search result and the pairs buffer.
Status check_result(const PairResult& result, const Pair* pairs, uint32_t max_pairs) {
    if (result.status.code != StatusCode::ok)
        return make_status(StatusCode::invalid_argument,
                           "the pair search did not succeed (status not ok): events need every pair of the frame");
    if (pairs == nullptr && result.written > 0)
        return make_status(StatusCode::invalid_argument, "null pairs with pairs to read");
    if (result.written > max_pairs)
        return capacity_status(StatusCode::pair_capacity, "more pairs than PairTrackerConfig::max_pairs",
                               result.written);
    return {};
}

/// One update: the source check, then the steps of pair_diff.h.
template <typename Read>
Status track_frame(PairTrackerState& s, const PairTrackerConfig& config, const ThreadBackend& b, FrameInput& f,
                   PairSource source, Read&& read) {
    s.events = PairEvents{};
    const bool has_prev = s.prev_source != PairSource::none;
    if (has_prev && (s.prev_source != source || s.prev_store != f.store))
        return make_status(StatusCode::invalid_argument,
                           "the previous frame came from another update form or store: reset() first");
    f.np = has_prev ? s.prev_count : 0;
    f.renewed = f.store != nullptr && has_prev && s.prev_store_init != f.store->init_layout();
    build_tables(s, config, b, f);
    if (const Status st = build_keys(s, b, f, read); !st.ok()) return st;
    return finish_frame(s, b, f, source);
}

} // namespace
} // namespace detail

using detail::PairSource;

PairTracker::~PairTracker() { aligned_free_bytes(owned_memory_); }

Status PairTracker::validate(const PairTrackerConfig& c) {
    if (c.max_ids == 0 || c.max_ids >= (1u << 31))
        return detail::make_status(StatusCode::invalid_config, "PairTrackerConfig::max_ids must be in [1, 2^31)");
    if (c.max_pairs == 0)
        return detail::make_status(StatusCode::invalid_config, "PairTrackerConfig::max_pairs must be at least 1");
    return {};
}

MemoryRequirements PairTracker::memory_requirements(const PairTrackerConfig& config) {
    return detail::block_requirements(validate(config),
                                      [&] { return detail::lay_out_tracker(config, nullptr, nullptr); });
}

Status PairTracker::init(const PairTrackerConfig& config, void* memory, size_t bytes) {
    return detail::init_on_block(memory_requirements(config), memory, bytes, owned_memory_, [&](unsigned char* base) {
        detail::lay_out_tracker(config, base, &state_);
        config_ = config;
    });
}

Status PairTracker::init_allocate(const PairTrackerConfig& config) {
    return detail::init_allocate_block(memory_requirements(config), owned_memory_,
                                       [&](void* block, size_t bytes) { return init(config, block, bytes); });
}

Status PairTracker::grow(const PairTrackerConfig& bigger, void* memory, size_t bytes) {
    if (state_ == nullptr) return detail::not_initialized();
    if (bigger.max_ids < config_.max_ids || bigger.max_pairs < config_.max_pairs)
        return detail::make_status(StatusCode::invalid_config,
                                   "grow never lowers PairTrackerConfig::max_ids or max_pairs");
    const MemoryRequirements req = memory_requirements(bigger);
    if (!req.status.ok()) return req.status;
    if (const Status s = detail::check_block(req, memory, bytes); !s.ok()) return s;
    if (memory == static_cast<void*>(state_)) // the state is at the start of its block
        return detail::make_status(StatusCode::invalid_argument, "grow needs a block other than the tracker's own");
    detail::touch_pages(static_cast<unsigned char*>(memory), req.bytes);
    detail::PairTrackerState* moved = nullptr;
    detail::lay_out_tracker(bigger, static_cast<unsigned char*>(memory), &moved);
    detail::move_tracker(*state_, *moved);
    state_ = moved;
    config_ = bigger;
    detail::release_owned(owned_memory_, memory);
    return {};
}

Status PairTracker::grow_allocate(const PairTrackerConfig& bigger) {
    if (state_ == nullptr) return detail::not_initialized();
    return detail::grow_allocate_block(memory_requirements(bigger), owned_memory_,
                                       [&](void* block, size_t bytes) { return grow(bigger, block, bytes); });
}

PairEvents PairTracker::events() const { return state_ != nullptr ? state_->events : PairEvents{}; }

void PairTracker::reset() {
    if (state_ == nullptr) return;
    state_->prev_source = PairSource::none;
    state_->prev_store = nullptr;
    state_->prev_count = 0;
    state_->events = PairEvents{};
}

Status PairTracker::update(const PairResult& result, const Pair* pairs, const ThreadBackend& backend,
                           const uint32_t* categories) {
    return update_index(result, pairs, backend, categories, false);
}

Status PairTracker::update_with(const PairResult& result, const Pair* pairs, const ThreadBackend& backend,
                                const uint32_t* categories) {
    return update_index(result, pairs, backend, categories, true);
}

Status PairTracker::update_index(const PairResult& result, const Pair* pairs, const ThreadBackend& backend,
                                 const uint32_t* categories, bool two_sets) {
    if (state_ == nullptr) return detail::not_initialized();
    Status s;
    if (result.layout != 0)
        s = detail::make_status(StatusCode::invalid_argument,
                                "pairs of a frame rebuilt from an ObjectStore name dense indices, which move: use "
                                "the store form of update() or update_with()");
    else
        s = detail::check_result(result, pairs, config_.max_pairs);
    if (!s.ok()) {
        state_->events = PairEvents{};
        return s;
    }
    detail::FrameInput f;
    f.n = static_cast<uint32_t>(result.written);
    f.two_sets = two_sets;
    f.categories = categories;
    return detail::track_frame(*state_, config_, backend, f, two_sets ? PairSource::index_with : PairSource::index,
                               [&](uint32_t i) {
                                   return detail::PairIds{pairs[i].a, pairs[i].b};
                               });
}

namespace {

/// The store forms' checks before the pairs are read.
Status check_store(const ObjectStore& store, const BoxGridView& frame, const PairResult& result, const Pair* pairs,
                   const PairTrackerConfig& config) {
    // handles_at() with nothing to map runs exactly the checks of a result against the store and the frame.
    if (const Status s = store.handles_at(frame, result, pairs, 0, 0, nullptr); !s.ok()) return s;
    if (const Status s = detail::check_result(result, pairs, config.max_pairs); !s.ok()) return s;
    if (store.config().max_objects > config.max_ids)
        return detail::capacity_status(StatusCode::invalid_argument,
                                       "PairTrackerConfig::max_ids is below the store's max_objects (needed)",
                                       store.config().max_objects);
    return {};
}

} // namespace

Status PairTracker::update(const ObjectStore& store, const BoxGridView& frame, const PairResult& result,
                           const Pair* pairs, const ThreadBackend& backend) {
    return update_store(store, frame, result, pairs, backend, false);
}

Status PairTracker::update_with(const ObjectStore& store, const BoxGridView& frame, const PairResult& result,
                                const Pair* pairs, const ThreadBackend& backend) {
    return update_store(store, frame, result, pairs, backend, true);
}

Status PairTracker::update_store(const ObjectStore& store, const BoxGridView& frame, const PairResult& result,
                                 const Pair* pairs, const ThreadBackend& backend, bool two_sets) {
    if (state_ == nullptr) return detail::not_initialized();
    if (const Status s = check_store(store, frame, result, pairs, config_); !s.ok()) {
        state_->events = PairEvents{};
        return s;
    }
    detail::FrameInput f;
    f.n = static_cast<uint32_t>(result.written);
    f.two_sets = two_sets;
    f.store = &store;
    const uint32_t size = store.size();
    // The walk's ids are dense indices (an index past the store's objects is unreadable).
    return detail::track_frame(*state_, config_, backend, f, two_sets ? PairSource::store_with : PairSource::store,
                               [&](uint32_t i) {
                                   const Pair p = pairs[i];
                                   if ((!two_sets && p.a >= size) || p.b >= size) return detail::PairIds{};
                                   return detail::PairIds{p.a, p.b};
                               });
}

} // namespace hashgrid
