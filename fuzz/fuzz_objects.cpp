// SPDX-License-Identifier: MIT
// Fuzz target: ObjectStore and ProximityIndex (objects.h, proximity_index.h)
// under random add / move / remove / layers / user values / clear with live,
// stale and forged handles, against a plain reference model: a dense list
// kept by append and swap-remove, with the handle of each entry. Checks every
// status, that failed operations change nothing, that no handle is issued
// twice, the dense arrays and handle_at(), and the index's find_near,
// find_near_radius and find_pairs against brute force over the model.
#include "fuzz_common.h"

#include "hashgrid/box_queries.h"
#include "hashgrid/objects.h"
#include "hashgrid/proximity_index.h"

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

namespace {

using namespace hashgrid_fuzz;
using hashgrid::ObjectBox;
using hashgrid::ObjectHandle;
using hashgrid::StatusCode;

struct Entry {
    ObjectHandle handle;
    ObjectBox box;
    uint32_t category;
    uint32_t mask;
    uint64_t user;
};

struct Model {
    uint32_t dims = 3;
    std::vector<Entry> dense;
    std::vector<ObjectHandle> dead; // handles issued and removed since
    std::set<std::pair<uint32_t, uint32_t>> issued;

    int find(ObjectHandle h) const {
        for (size_t i = 0; i < dense.size(); ++i)
            if (dense[i].handle == h) return static_cast<int>(i);
        return -1;
    }
    void remove_at(size_t i) {
        dead.push_back(dense[i].handle);
        dense[i] = dense.back();
        dense.pop_back();
    }
};

/// A box of the palette; `bad` lets NaN/inf and min > max through.
ObjectBox make_box(Input& in, uint32_t dims, float cell, bool& finite, bool& ordered) {
    ObjectBox b;
    finite = true;
    ordered = true;
    static const float extents[] = {0.0f, 0.5f, 1.0f, 2.0f, 0.25f, -1.0f, 8.0f};
    for (uint32_t d = 0; d < dims; ++d) {
        b.min[d] = scene_float(in, 0.0f, cell * 2.0f, 24);
        b.max[d] = b.min[d] + in.pick(extents) * cell;
        finite = finite && std::isfinite(b.min[d]) && std::isfinite(b.max[d]);
        ordered = ordered && b.min[d] <= b.max[d];
    }
    return b;
}

bool same_box(const ObjectBox& a, const ObjectBox& b, uint32_t dims) {
    for (uint32_t d = 0; d < dims; ++d)
        if (std::memcmp(&a.min[d], &b.min[d], sizeof(float)) != 0 ||
            std::memcmp(&a.max[d], &b.max[d], sizeof(float)) != 0)
            return false;
    return true;
}

void check_store(const hashgrid::ObjectStore& store, const Model& m) {
    FUZZ_CHECK(store.size() == m.dense.size(), "store size differs from the model");
    for (uint32_t i = 0; i < m.dense.size(); ++i) {
        const Entry& e = m.dense[i];
        FUZZ_CHECK(store.handle_at(i) == e.handle, "handle_at differs from the model's dense order");
        FUZZ_CHECK(store.dense_slots()[i] == e.handle.index, "dense_slots differs from handle_at");
        FUZZ_CHECK(store.contains(e.handle) && store.dense_index(e.handle) == i, "live handle not found");
        for (uint32_t d = 0; d < m.dims; ++d)
            FUZZ_CHECK(std::memcmp(&store.min_coords(d)[i], &e.box.min[d], sizeof(float)) == 0 &&
                           std::memcmp(&store.max_coords(d)[i], &e.box.max[d], sizeof(float)) == 0,
                       "dense box differs from the model");
        FUZZ_CHECK(store.categories()[i] == e.category && store.masks()[i] == e.mask &&
                       store.user_values()[i] == e.user,
                   "dense layers or user value differ from the model");
        ObjectBox got;
        FUZZ_CHECK(store.get_box(e.handle, got).ok() && same_box(got, e.box, m.dims), "get_box");
    }
    const ObjectHandle none = store.handle_at(static_cast<uint32_t>(m.dense.size()));
    FUZZ_CHECK(none.index == 0xffffffffu && none.generation == 0, "handle_at past size() is not ObjectHandle{}");
    for (const ObjectHandle& h : m.dead)
        FUZZ_CHECK(!store.contains(h) && store.dense_index(h) == hashgrid::kInvalidObjectIndex,
                   "stale handle accepted");
}

/// A handle that may be live, stale or forged.
ObjectHandle pick_handle(Input& in, const Model& m, uint32_t max_objects) {
    const uint8_t kind = in.byte() % 5;
    if (kind <= 1 && !m.dense.empty()) return m.dense[in.below(static_cast<uint32_t>(m.dense.size()))].handle;
    if (kind == 2 && !m.dead.empty()) return m.dead[in.below(static_cast<uint32_t>(m.dead.size()))];
    static const uint32_t gens[] = {0, 1, 2, 3, 0xffffffffu, 0x80000000u};
    ObjectHandle h;
    h.index = in.flag() ? in.below(max_objects + 2) : in.u32();
    h.generation = in.flag() ? in.pick(gens) : in.u32();
    return h;
}

/// A collision mask: all bits or random ones.
uint32_t kAllLayersOr(Input& in) { return in.flag() ? hashgrid::kAllLayers : in.u32(); }

bool live(const Model& m, ObjectHandle h) { return m.find(h) >= 0; }

void store_program(Input& in) {
    hashgrid::ObjectStoreConfig c;
    c.dimensions = in.flag() ? 3u : 2u;
    c.max_objects = 1 + in.below(64);
    c.handle_salt = in.flag() ? in.u32() : 0u;
    hashgrid::ObjectStore store;
    {
        const ObjectBox b;
        FUZZ_CHECK(!store.add(b, 1, 1, 0).status.ok(), "add before init succeeded");
    }
    FUZZ_CHECK(store.init_allocate(c).ok(), "ObjectStore init_allocate failed");
    Model m;
    m.dims = c.dimensions;
    const uint32_t ops = in.below(200);
    for (uint32_t op = 0; op < ops && !in.empty(); ++op) {
        const uint8_t kind = in.byte() % 8;
        if (kind <= 2) { // add
            bool finite = false;
            bool ordered = false;
            const ObjectBox b = make_box(in, c.dimensions, 1.0f, finite, ordered);
            const uint32_t cat = in.u32();
            const uint32_t mask = in.u32();
            const uint64_t user = in.u32();
            const hashgrid::ObjectAddResult r = store.add(b, cat, mask, user);
            if (!finite) {
                FUZZ_CHECK(r.status.code == StatusCode::invalid_position, "add: NaN/inf box not invalid_position");
            } else if (!ordered) {
                FUZZ_CHECK(r.status.code == StatusCode::invalid_box, "add: min > max not invalid_box");
            } else if (m.dense.size() >= store.capacity()) {
                FUZZ_CHECK(r.status.code == StatusCode::object_capacity && r.status.needed == m.dense.size() + 1,
                           "add: full store not object_capacity with needed = size() + 1");
            } else {
                FUZZ_CHECK(r.status.ok(), "add failed on a valid box");
                FUZZ_CHECK(r.handle.generation != 0 && r.handle.index < c.max_objects, "add: handle out of range");
                FUZZ_CHECK(m.issued.insert({r.handle.index, r.handle.generation}).second, "add: handle issued twice");
                m.dense.push_back({r.handle, b, cat, mask, user});
                continue;
            }
            FUZZ_CHECK(r.handle == ObjectHandle{}, "failed add returned a handle");
        } else if (kind == 3) { // move
            const ObjectHandle h = pick_handle(in, m, c.max_objects);
            bool finite = false;
            bool ordered = false;
            const ObjectBox b = make_box(in, c.dimensions, 1.0f, finite, ordered);
            const hashgrid::Status s = store.move(h, b);
            if (!live(m, h))
                FUZZ_CHECK(s.code == StatusCode::invalid_handle, "move: dead handle not invalid_handle");
            else if (!finite)
                FUZZ_CHECK(s.code == StatusCode::invalid_position, "move: NaN/inf box not invalid_position");
            else if (!ordered)
                FUZZ_CHECK(s.code == StatusCode::invalid_box, "move: min > max not invalid_box");
            else {
                FUZZ_CHECK(s.ok(), "move failed");
                m.dense[static_cast<size_t>(m.find(h))].box = b;
            }
        } else if (kind == 4 || kind == 5) { // remove
            const ObjectHandle h = pick_handle(in, m, c.max_objects);
            const hashgrid::Status s = store.remove(h);
            const int i = m.find(h);
            if (i < 0) {
                FUZZ_CHECK(s.code == StatusCode::invalid_handle, "remove: dead handle not invalid_handle");
            } else {
                FUZZ_CHECK(s.ok(), "remove failed on a live handle");
                m.remove_at(static_cast<size_t>(i));
            }
        } else if (kind == 6) { // layers / user value
            const ObjectHandle h = pick_handle(in, m, c.max_objects);
            const uint32_t cat = in.u32();
            const uint32_t mask = in.u32();
            const bool layers = in.flag();
            const hashgrid::Status s = layers ? store.set_layers(h, cat, mask) : store.set_user_value(h, cat);
            const int i = m.find(h);
            if (i < 0) {
                FUZZ_CHECK(s.code == StatusCode::invalid_handle, "set_layers/user: dead handle not invalid_handle");
            } else {
                FUZZ_CHECK(s.ok(), "set_layers/user failed on a live handle");
                Entry& e = m.dense[static_cast<size_t>(i)];
                if (layers) {
                    e.category = cat;
                    e.mask = mask;
                } else {
                    e.user = cat;
                }
            }
        } else if (in.below(4) == 0) { // clear
            store.clear();
            while (!m.dense.empty())
                m.remove_at(m.dense.size() - 1);
        }
        check_store(store, m);
    }
}

void index_program(Input& in) {
    hashgrid::ProximityIndexConfig c;
    c.grid.dimensions = in.flag() ? 3u : 2u;
    static const float cells[] = {1.0f, 2.0f, 0.5f};
    c.grid.cell_size = in.pick(cells);
    if (in.below(3) == 0) {
        c.grid.world = hashgrid::World::bounded;
        for (uint32_t& v : c.grid.cell_counts)
            v = 1 + in.below(8);
        c.grid.origin[0] = c.grid.origin[1] = c.grid.origin[2] = -4.0f;
        c.grid.out_of_bounds = in.flag() ? hashgrid::OutOfBounds::clamp : hashgrid::OutOfBounds::reject;
    }
    c.grid.max_objects = 1 + in.below(48);
    static const uint32_t entry_caps[] = {1, 8, 64, 1000};
    c.grid.max_cell_entries = in.pick(entry_caps);
    c.grid.max_pairs = 2000;
    static const uint32_t large[] = {64, 1, 4};
    c.grid.large_object_cells = in.pick(large);
    hashgrid::ProximityIndex index;
    FUZZ_CHECK(index.init_allocate(c).ok(), "ProximityIndex init_allocate failed");
    const hashgrid::ThreadBackend backend = in.flag() ? threaded() : serial();
    const uint32_t dims = c.grid.dimensions;
    std::vector<ObjectHandle> handles;
    std::vector<ObjectHandle> dead;
    const uint32_t ops = in.below(120);
    for (uint32_t op = 0; op < ops && !in.empty(); ++op) {
        const uint8_t kind = in.byte() % 6;
        float pos[3] = {0.0f, 0.0f, 0.0f};
        float ext[3] = {0.0f, 0.0f, 0.0f};
        for (uint32_t d = 0; d < dims; ++d) {
            pos[d] = scene_float(in, 0.0f, c.grid.cell_size * 2.0f, 32);
            ext[d] = size_float(in, c.grid.cell_size, in.below(8) == 0);
        }
        const uint32_t before = index.client_count();
        if (kind <= 1) {
            const hashgrid::ObjectAddResult r = index.create_client(pos, ext, in.u32() | 1u, kAllLayersOr(in));
            if (r.status.ok()) {
                handles.push_back(r.handle);
                FUZZ_CHECK(index.client_count() == before + 1 && index.dirty(), "create_client: count/dirty");
            } else {
                FUZZ_CHECK(index.client_count() == before, "failed create_client changed the count");
            }
        } else if (kind == 2 && !handles.empty()) {
            const uint32_t i = in.below(static_cast<uint32_t>(handles.size()));
            hashgrid::ObjectBox old;
            FUZZ_CHECK(index.objects().get_box(handles[i], old).ok(), "live client has no box");
            const hashgrid::Status s = index.update_client(handles[i], pos, ext);
            if (!s.ok()) {
                hashgrid::ObjectBox now;
                FUZZ_CHECK(index.objects().get_box(handles[i], now).ok() && same_box(now, old, dims),
                           "failed update_client moved the client");
            }
        } else if (kind == 3) {
            const bool stale = in.flag() && !dead.empty();
            if (stale) {
                FUZZ_CHECK(index.remove_client(dead[in.below(static_cast<uint32_t>(dead.size()))]).code ==
                               StatusCode::invalid_handle,
                           "remove_client: stale handle accepted");
            } else if (!handles.empty()) {
                const uint32_t i = in.below(static_cast<uint32_t>(handles.size()));
                FUZZ_CHECK(index.remove_client(handles[i]).ok(), "remove_client failed on a live handle");
                dead.push_back(handles[i]);
                handles.erase(handles.begin() + i);
            }
        } else if (kind == 4) { // queries against brute force over the store
            const uint32_t layer = in.flag() ? hashgrid::kAllLayers : in.u32();
            const float radius = in.flag() ? -1.0f : ext[0];
            std::vector<ObjectHandle> out(64);
            const bool by_radius = in.flag();
            const hashgrid::QueryResult r = by_radius ? index.find_near_radius(pos, radius, layer, out.data(), 64)
                                                      : index.find_near(pos, ext, layer, out.data(), 64);
            const bool bad = !std::isfinite(pos[0]) || !std::isfinite(pos[1]) ||
                             (dims == 3 && !std::isfinite(pos[2])) || (by_radius ? !(radius >= 0.0f) : false);
            if (bad) {
                FUZZ_CHECK(r.status.code == StatusCode::invalid_query, "find_near: bad query accepted");
                continue;
            }
            if (!by_radius) {
                bool ext_ok = true;
                for (uint32_t d = 0; d < dims; ++d)
                    ext_ok = ext_ok && ext[d] >= 0.0f;
                if (!ext_ok) {
                    FUZZ_CHECK(r.status.code == StatusCode::invalid_query, "find_near: negative dimensions accepted");
                    continue;
                }
            }
            FUZZ_CHECK(r.status.code == StatusCode::ok || r.status.code == StatusCode::output_too_small,
                       "find_near failed on a valid query");
            const hashgrid::ObjectStore& st = index.objects();
            std::vector<std::pair<uint32_t, uint32_t>> expect;
            for (uint32_t i = 0; i < st.size(); ++i) {
                float lo[3] = {0.0f, 0.0f, 0.0f};
                float hi[3] = {0.0f, 0.0f, 0.0f};
                // `d < 3` spelled out: GCC 12 under TSan cannot see dims <= 3 (-Warray-bounds).
                for (uint32_t d = 0; d < dims && d < 3; ++d) {
                    lo[d] = st.min_coords(d)[i];
                    hi[d] = st.max_coords(d)[i];
                }
                if ((st.categories()[i] & layer) == 0) continue;
                bool hit = true;
                if (by_radius) {
                    hit = hashgrid::point_box_distance2(pos, lo, hi, dims) <= radius * radius;
                } else {
                    for (uint32_t d = 0; d < dims; ++d) {
                        const float half = ext[d] * 0.5f;
                        hit = hit && lo[d] <= pos[d] + half && pos[d] - half <= hi[d];
                    }
                }
                if (hit) expect.push_back({st.handle_at(i).index, st.handle_at(i).generation});
            }
            FUZZ_CHECK(r.total == expect.size(), "find_near: count differs from brute force");
            if (r.written == r.total) {
                std::vector<std::pair<uint32_t, uint32_t>> got;
                for (uint32_t k = 0; k < r.written; ++k)
                    got.push_back({out[k].index, out[k].generation});
                std::sort(got.begin(), got.end());
                std::sort(expect.begin(), expect.end());
                FUZZ_CHECK(got == expect, "find_near differs from brute force");
            }
        } else { // pairs
            std::vector<hashgrid::Pair> pairs(2001);
            const hashgrid::PairResult r = index.find_pairs(pairs.data(), pairs.size(), backend);
            FUZZ_CHECK(r.status.ok() || r.status.code == StatusCode::pair_capacity, "find_pairs failed");
            const hashgrid::ObjectStore& st = index.objects();
            uint64_t expect = 0;
            for (uint32_t a = 0; a < st.size(); ++a)
                for (uint32_t b = a + 1; b < st.size(); ++b) {
                    bool hit = (st.categories()[a] & st.masks()[b]) != 0 && (st.categories()[b] & st.masks()[a]) != 0;
                    for (uint32_t d = 0; d < dims && hit; ++d)
                        hit = st.min_coords(d)[a] <= st.max_coords(d)[b] && st.min_coords(d)[b] <= st.max_coords(d)[a];
                    expect += hit;
                }
            FUZZ_CHECK(r.total == expect, "ProximityIndex find_pairs count differs from brute force");
        }
        if (in.below(4) == 0) FUZZ_CHECK(index.update_index(backend).ok(), "update_index failed");
        for (const ObjectHandle& h : handles)
            FUZZ_CHECK(index.contains(h), "live client lost");
        for (const ObjectHandle& h : dead)
            FUZZ_CHECK(!index.contains(h), "removed client still contained");
        FUZZ_CHECK(index.client_count() == handles.size(), "client_count differs from the model");
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    install_resume_hook();
    Input in(data, size);
    if (in.flag())
        index_program(in);
    else
        store_program(in);
    return 0;
}
