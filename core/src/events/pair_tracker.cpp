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

/// One update: the source check, lookup_frame, finish_frame (pair_diff.h).
template <typename Read>
Status track_frame(PairTrackerState& s, const ThreadBackend& b, uint32_t n, bool two_sets, bool generations,
                   PairSource source, const ObjectStore* store, Read&& read) {
    s.events = PairEvents{};
    const bool has_prev = s.prev_source != PairSource::none;
    if (has_prev && (s.prev_source != source || s.prev_store != store))
        return make_status(StatusCode::invalid_argument,
                           "the previous frame came from another update form or store: reset() first");
    FrameInput f;
    f.n = n;
    f.np = has_prev ? s.prev_count : 0;
    f.two_sets = two_sets;
    f.generations = generations;
    f.renewed = store != nullptr && has_prev && s.prev_store_init != store->init_layout();
    if (const Status st = lookup_frame(s, b, f, read); !st.ok()) return st;
    return finish_frame(s, b, f, source, store);
}

} // namespace
} // namespace detail

using detail::PairEnds;
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
    if (state_ == nullptr) return detail::not_initialized();
    if (result.layout != 0) {
        state_->events = PairEvents{};
        return detail::make_status(StatusCode::invalid_argument,
                                   "pairs of a frame rebuilt from an ObjectStore name dense indices, which move: use "
                                   "update(store, frame, result, pairs, backend)");
    }
    if (const Status s = detail::check_result(result, pairs, config_.max_pairs); !s.ok()) {
        state_->events = PairEvents{};
        return s;
    }
    const uint32_t sensors = categories != nullptr ? config_.sensor_layers : 0;
    return detail::track_frame(*state_, backend, static_cast<uint32_t>(result.written), false, false, PairSource::index,
                               nullptr, [&](uint32_t i) {
                                   const Pair p = pairs[i];
                                   PairEnds e;
                                   e.a = p.a;
                                   e.b = p.b;
                                   if (sensors != 0 && p.a < config_.max_ids && p.b < config_.max_ids)
                                       e.sensor = ((categories[p.a] | categories[p.b]) & sensors) != 0;
                                   return e;
                               });
}

Status PairTracker::update_with(const PairResult& result, const Pair* pairs, const ThreadBackend& backend,
                                const uint32_t* categories) {
    if (state_ == nullptr) return detail::not_initialized();
    if (result.layout != 0) {
        state_->events = PairEvents{};
        return detail::make_status(StatusCode::invalid_argument,
                                   "pairs of a frame rebuilt from an ObjectStore name dense indices, which move: use "
                                   "update_with(store, frame, result, pairs, backend)");
    }
    if (const Status s = detail::check_result(result, pairs, config_.max_pairs); !s.ok()) {
        state_->events = PairEvents{};
        return s;
    }
    const uint32_t sensors = categories != nullptr ? config_.sensor_layers : 0;
    return detail::track_frame(*state_, backend, static_cast<uint32_t>(result.written), true, false,
                               PairSource::index_with, nullptr, [&](uint32_t i) {
                                   const Pair p = pairs[i];
                                   PairEnds e;
                                   e.a = p.a;
                                   e.b = p.b;
                                   if (sensors != 0 && p.b < config_.max_ids)
                                       e.sensor = (categories[p.b] & sensors) != 0;
                                   return e;
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
        return detail::make_status(StatusCode::invalid_argument,
                                   "PairTrackerConfig::max_ids is below the store's max_objects (ids are slots)");
    return {};
}

} // namespace

Status PairTracker::update(const ObjectStore& store, const BoxGridView& frame, const PairResult& result,
                           const Pair* pairs, const ThreadBackend& backend) {
    if (state_ == nullptr) return detail::not_initialized();
    if (const Status s = check_store(store, frame, result, pairs, config_); !s.ok()) {
        state_->events = PairEvents{};
        return s;
    }
    const uint32_t size = store.size();
    const uint32_t* const category = store.categories();
    const uint32_t sensors = config_.sensor_layers;
    return detail::track_frame(*state_, backend, static_cast<uint32_t>(result.written), false, true, PairSource::store,
                               &store, [&](uint32_t i) {
                                   const Pair p = pairs[i];
                                   PairEnds e;
                                   if (p.a >= size || p.b >= size) return e; // unreadable
                                   const ObjectHandle ha = store.handle_at(p.a);
                                   const ObjectHandle hb = store.handle_at(p.b);
                                   e.a = ha.index;
                                   e.a_generation = ha.generation;
                                   e.b = hb.index;
                                   e.b_generation = hb.generation;
                                   e.sensor = ((category[p.a] | category[p.b]) & sensors) != 0;
                                   return e;
                               });
}

Status PairTracker::update_with(const ObjectStore& store, const BoxGridView& frame, const PairResult& result,
                                const Pair* pairs, const ThreadBackend& backend) {
    if (state_ == nullptr) return detail::not_initialized();
    if (const Status s = check_store(store, frame, result, pairs, config_); !s.ok()) {
        state_->events = PairEvents{};
        return s;
    }
    const uint32_t size = store.size();
    const uint32_t* const category = store.categories();
    const uint32_t sensors = config_.sensor_layers;
    return detail::track_frame(*state_, backend, static_cast<uint32_t>(result.written), true, true,
                               PairSource::store_with, &store, [&](uint32_t i) {
                                   const Pair p = pairs[i];
                                   PairEnds e;
                                   if (p.b >= size) return e; // unreadable
                                   const ObjectHandle hb = store.handle_at(p.b);
                                   e.a = p.a;
                                   e.b = hb.index;
                                   e.b_generation = hb.generation;
                                   e.sensor = (category[p.b] & sensors) != 0;
                                   return e;
                               });
}

} // namespace hashgrid
