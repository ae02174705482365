// Rerouter: build() (the precompute: working tables, port classes, loads,
// down_ok and the legal-route closure, warm-up), the link queries, reset(),
// changed_blocks() and export_routes(). See rerouter.hpp.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <numeric>
#include <optional>

#include "routing/rerouter.hpp"
#include "routing/rerouter_internal.hpp"

namespace subnetd::routing {
namespace {

using namespace rerouter_internal;

}  // namespace

Rerouter::Rerouter(const Topology& topo, const LidMap& lids, std::shared_ptr<const Routes> routes)
    : topo_(topo), lids_(lids), base_(std::move(routes)), impl_(std::make_unique<Impl>()) {}

Rerouter::~Rerouter() = default;

Result<std::unique_ptr<Rerouter>> Rerouter::build(const Topology& topo, const LidMap& lids,
                                                  std::shared_ptr<const Routes> routes,
                                                  WorkerPool& pool, std::stop_token stop) {
  const auto t0 = Clock::now();
  if (!routes) return Error{Errc::kInvalidArgument, "rerouter: no routes"};
  const auto n = static_cast<std::uint32_t>(topo.num_switches());
  if (routes->updown_rank.empty()) {
    return Error{Errc::kUnsupported,
                 fmt::format("engine {} gives no up/down order; link failures are repaired by a "
                             "full recompute",
                             routes->engine)};
  }
  if (routes->updown_rank.size() != n || routes->lfts.size() != n) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("routes cover {} switches ({} ranks), the fabric has {}",
                             routes->lfts.size(), routes->updown_rank.size(), n)};
  }
  SwitchGraph g;
  SUBNETD_TRY_ASSIGN(g, SwitchGraph::build(topo, lids));

  std::unique_ptr<Rerouter> r(new Rerouter(topo, lids, std::move(routes)));
  const Routes& base = *r->base_;
  Impl& m = *r->impl_;
  r->n_ = n;
  std::uint32_t entries = (g.max_lid().value / kLftBlockSize + 1) * kLftBlockSize;
  for (const Lft& l : base.lfts) entries = std::max(entries, l.size());
  r->stride_ = entries;
  m.blocks_per_switch = entries / kLftBlockSize;
  m.words = (n + 63) / 64;

  // Port slots: classes from the rank, liveness from the cabling.
  const auto& rank = base.updown_rank;
  auto guid = [&](std::uint32_t s) {
    return topo.node(topo.switch_node(SwitchIndex{s})).guid.value;
  };
  auto before = [&](std::uint32_t a, std::uint32_t b) {
    return std::pair(rank[a], guid(a)) < std::pair(rank[b], guid(b));
  };
  m.port_base.assign(n + 1, 0);
  for (std::uint32_t s = 0; s < n; ++s)
    m.port_base[s + 1] =
        m.port_base[s] + topo.node(topo.switch_node(SwitchIndex{s})).num_ports + 1U;
  m.ports.assign(m.port_base[n], PortSlot{});
  m.up_first.assign(n + 1, 0);
  m.down_first.assign(n + 1, 0);
  m.has_endpoints.assign(n, 0);
  m.live_links.assign(n, 0);
  for (std::uint32_t s = 0; s < n; ++s) {
    const SwitchIndex sw{s};
    const NodeId node = topo.switch_node(sw);
    m.has_endpoints[s] = g.has_endpoints(sw) ? 1 : 0;
    for (unsigned p = 1; p <= topo.node(node).num_ports; ++p) {
      const Port& port = topo.port(node, static_cast<PortNum>(p));
      if (!port.connected() || p == kDropPort) continue;
      if (topo.node(port.remote_node).type != NodeType::kSwitch) {
        m.ports[m.port_base[s] + p].flags = kCaLink | kLive;
      }
    }
    for (const SwitchArc& a : g.arcs(sw)) {
      PortSlot& sl = m.ports[m.port_base[s] + a.local_port];
      sl.peer = a.to.value;
      sl.peer_port = a.remote_port;
      sl.flags = kSwitchLink | kLive | (before(a.to.value, s) ? kUp : 0);
      ++m.live_links[s];
      if (sl.up()) {
        m.up_list.push_back(a.local_port);
      } else {
        m.down_list.push_back(a.local_port);
      }
    }
    m.up_first[s + 1] = static_cast<std::uint32_t>(m.up_list.size());
    m.down_first[s + 1] = static_cast<std::uint32_t>(m.down_list.size());
  }
  m.live_links0 = m.live_links;

  m.lid.assign(entries, LidInfo{});
  const auto att = g.attachments();
  for (std::size_t d = 1; d < att.size() && d < entries; ++d) {
    if (!att[d].routable()) continue;
    m.lid[d] = LidInfo{att[d].sw.value, att[d].port, static_cast<std::uint8_t>(att[d].port != 0)};
  }
  m.lid0 = m.lid;

  // Working tables: one contiguous copy, rows filled in parallel.
  auto t = Clock::now();
  r->table_ = HugeBuffer(std::size_t{n} * entries);
  m.load.assign(m.ports.size(), 0);
  const std::size_t grain = std::max<std::size_t>(1, n / (std::size_t{pool.size()} * 16));
  pool.parallel_for(n, grain, [&](std::size_t b, std::size_t e, unsigned) {
    for (std::size_t s = b; s < e; ++s) {
      std::uint8_t* row = r->table_.get() + s * entries;
      const Lft& l = base.lfts[s];
      std::memcpy(row, l.data(), l.size());
      std::memset(row + l.size(), kDropPort, entries - l.size());
    }
  });
  r->stats_.t_tables = Clock::now() - t;
  if (stop.stop_requested()) return Error{Errc::kCancelled, "rerouter build cancelled"};

  // Per-port counts of data LIDs (the balance the repair keeps).
  t = Clock::now();
  pool.parallel_for(n, grain, [&](std::size_t b, std::size_t e, unsigned) {
    std::array<std::uint32_t, 256> count{};
    for (std::size_t si = b; si < e; ++si) {
      const auto s = static_cast<std::uint32_t>(si);
      count.fill(0);
      const std::uint8_t* row = r->table_.get() + si * entries;
      const LidInfo* info = m.lid.data();
      for (std::uint32_t d = 1; d < entries; ++d) {
        count[row[d]] += (info[d].data != 0 && info[d].sw != s) ? 1U : 0U;
      }
      for (unsigned p = 1; p < m.port_base[s + 1] - m.port_base[s]; ++p) {
        if (m.ports[m.port_base[s] + p].flags & kSwitchLink) m.load[m.port_base[s] + p] = count[p];
      }
    }
  });
  m.load0 = m.load;
  r->stats_.t_loads = Clock::now() - t;
  if (stop.stop_requested()) return Error{Errc::kCancelled, "rerouter build cancelled"};

  // down_ok: the closure of the down-links, switches from the bottom of the
  // order up; independent per word of the rows, so word ranges run in
  // parallel.
  t = Clock::now();
  std::vector<std::uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0U);
  std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return before(b, a);  // last in the order first
  });
  m.down_ok.assign(std::size_t{n} * m.words, 0);
  const std::uint32_t words = m.words;
  const std::size_t chunks = std::min<std::size_t>(words, std::size_t{pool.size()} * 4);
  pool.parallel_for(chunks, 1, [&](std::size_t cb, std::size_t ce, unsigned) {
    for (std::size_t c = cb; c < ce; ++c) {
      const std::uint32_t w0 = static_cast<std::uint32_t>(c * words / chunks);
      const std::uint32_t w1 = static_cast<std::uint32_t>((c + 1) * words / chunks);
      for (std::uint32_t s : order) {
        std::uint64_t* row = &m.down_ok[std::size_t{s} * words];
        if (s / 64 >= w0 && s / 64 < w1) row[s / 64] |= std::uint64_t{1} << (s % 64);
        for (std::uint32_t i = m.down_first[s]; i < m.down_first[s + 1]; ++i) {
          const std::uint32_t v = m.ports[m.port_base[s] + m.down_list[i]].peer;
          const std::uint64_t* src = &m.down_ok[std::size_t{v} * words];
          for (std::uint32_t w = w0; w < w1; ++w) row[w] |= src[w];
        }
      }
    }
  });
  m.down_ok0 = m.down_ok;

  // Switches with no up*/down* route at all to a destination switch (a core
  // that lost its only link into a pod): an engine may still give them
  // entries (ftree routes them down and then up), which no CA traffic can
  // enter — a route into them could not be up*down* either. They are
  // orphans from the start. legal[s] = down_ok[s] | legal of every switch
  // above s, closed from the top of the order down.
  m.orphan_count.assign(n, 0);
  m.orphan_slot.assign(n, kNone);
  m.lid_words = (entries + 63) / 64;
  // Room for 64 switches with orphans before the pool has to grow.
  m.orphan_pool.assign(std::size_t{64} * m.lid_words, 0);
  for (std::uint32_t i = 64; i-- > 0;) m.free_slots.push_back(i);
  {
    std::vector<std::uint64_t> legal(m.down_ok.size(), 0);
    std::vector<std::uint32_t> top_down(order.rbegin(), order.rend());
    m.by_pos = top_down;
    m.pos.assign(n, 0);
    for (std::uint32_t i = 0; i < n; ++i) m.pos[top_down[i]] = i;
    pool.parallel_for(chunks, 1, [&](std::size_t cb, std::size_t ce, unsigned) {
      for (std::size_t c = cb; c < ce; ++c) {
        const std::uint32_t w0 = static_cast<std::uint32_t>(c * words / chunks);
        const std::uint32_t w1 = static_cast<std::uint32_t>((c + 1) * words / chunks);
        for (std::uint32_t s : top_down) {
          std::uint64_t* row = &legal[std::size_t{s} * words];
          const std::uint64_t* own = &m.down_ok[std::size_t{s} * words];
          for (std::uint32_t w = w0; w < w1; ++w) row[w] = own[w];
          for (std::uint32_t i = m.up_first[s]; i < m.up_first[s + 1]; ++i) {
            const std::uint32_t u = m.ports[m.port_base[s] + m.up_list[i]].peer;
            const std::uint64_t* src = &legal[std::size_t{u} * words];
            for (std::uint32_t w = w0; w < w1; ++w) row[w] |= src[w];
          }
        }
      }
    });
    // A switch that carries CAs must have an up*/down* route to every
    // switch with CA/router LIDs in its part (the promise of lft.hpp);
    // otherwise its data would have to take an orphan route.
    std::vector<std::uint64_t> has_data(words, 0);
    for (std::uint32_t d = 1; d < entries; ++d) {
      if (m.lid[d].data != 0) has_data[m.lid[d].sw / 64] |= std::uint64_t{1} << (m.lid[d].sw % 64);
    }
    for (std::uint32_t s = 0; s < n; ++s) {
      const std::uint64_t* row = &legal[std::size_t{s} * words];
      for (std::uint32_t w = 0; w < words; ++w) {
        r->stats_.initial_orphan_pairs +=
            static_cast<std::uint64_t>(std::popcount(~row[w] & has_data[w]));
        if (m.has_endpoints[s] == 0) continue;
        for (std::uint64_t missing = ~row[w] & has_data[w]; missing != 0; missing &= missing - 1) {
          const std::uint32_t tt = w * 64 + static_cast<std::uint32_t>(std::countr_zero(missing));
          if (g.component(SwitchIndex{tt}) != g.component(SwitchIndex{s})) continue;
          const Node& a = topo.node(topo.switch_node(SwitchIndex{s}));
          const Node& b = topo.node(topo.switch_node(SwitchIndex{tt}));
          return Error{
              Errc::kInvalidArgument,
              fmt::format("routes of engine {} send CA traffic from \"{}\" ({:#018x}) to "
                          "\"{}\" ({:#018x}), which has no up*/down* route under their "
                          "order",
                          base.engine, a.description, a.guid.value, b.description, b.guid.value)};
        }
      }
    }
    m.legal_t.assign(legal.size(), 0);
    for (std::uint32_t s = 0; s < n; ++s) {
      for (std::uint32_t w = 0; w < words; ++w) {
        for (std::uint64_t b = legal[std::size_t{s} * words + w]; b != 0; b &= b - 1) {
          const std::uint32_t tt = w * 64 + static_cast<std::uint32_t>(std::countr_zero(b));
          m.legal_t[std::size_t{tt} * words + s / 64] |= std::uint64_t{1} << (s % 64);
        }
      }
    }
    m.legal_t0 = m.legal_t;
    m.legal0 = legal;
    m.legal = std::move(legal);
  }
  m.lids_first.assign(n + 1, 0);
  for (std::uint32_t d = 1; d < entries; ++d) {
    if (m.lid0[d].sw != kNoSwitch.value) ++m.lids_first[m.lid0[d].sw + 1];
  }
  for (std::uint32_t s = 0; s < n; ++s) m.lids_first[s + 1] += m.lids_first[s];
  m.lids_list.assign(m.lids_first[n], 0);
  {
    std::vector<std::uint32_t> at(m.lids_first.begin(), m.lids_first.end() - 1);
    for (std::uint32_t d = 1; d < entries; ++d) {
      if (m.lid0[d].sw != kNoSwitch.value) m.lids_list[at[m.lid0[d].sw]++] = d;
    }
  }
  r->stats_.t_down_ok = Clock::now() - t;

  m.dirty_since.assign((std::size_t{n} * m.blocks_per_switch + 63) / 64, 0);
  m.dirty_now.assign(m.dirty_since.size(), 0);
  m.seed_range.assign(n, {});
  m.touched.assign(n, 0);
  m.pick_state.assign(n, {});
  m.in_work.assign(n, 0);
  m.check_mark.assign(n, 0);
  m.blocked_mark.assign(n, 0);
  m.down_mark.assign(n, 0);
  m.orphan_hint.assign(n, 0);
  m.two_hop_hint.assign(n, 0);
  m.legal_pend.assign(m.legal.size(), 0);
  m.sum_words = (m.words + 63) / 64;
  m.legal_pend_sum.assign(std::size_t{n} * m.sum_words, 0);
  m.t_has_data.assign(n, 0);
  for (std::uint32_t d = 1; d < entries; ++d) {
    if (m.lid0[d].data != 0) m.t_has_data[m.lid0[d].sw] = 1;
  }

  const auto t_warm = Clock::now();
  r->warm_up();
  r->stats_.t_warmup = Clock::now() - t_warm;

  r->stats_.switches = n;
  r->stats_.lft_entries = entries;
  r->stats_.table_bytes = std::uint64_t{n} * entries;
  std::uint64_t bytes = r->stats_.table_bytes;
  bytes += (m.port_base.size() + m.up_first.size() + m.down_first.size()) * 4;
  bytes += m.ports.size() * sizeof(PortSlot) + m.up_list.size() + m.down_list.size();
  bytes += (m.lid.size() + m.lid0.size()) * sizeof(LidInfo);
  bytes += (m.load.size() + m.load0.size()) * 4 + (m.live_links.size() * 2) * 4;
  bytes += (m.down_ok.size() + m.down_ok0.size()) * 8;
  bytes += (m.dirty_since.size() + m.dirty_now.size()) * 8;
  bytes += n * (sizeof(Impl::SeedRange) + sizeof(Impl::PickState) + 4 + 4 + 1 + 1);
  bytes += (m.legal.size() + m.legal0.size() + m.legal_t.size() + m.legal_t0.size() +
            m.legal_pend.size() + m.legal_pend_sum.size()) *
               8 +
           m.orphan_pool.size() * 8 + m.rec_index.bytes() + n * 8;
  bytes += (m.lids_first.size() + m.lids_list.size()) * 4;
  r->stats_.memory_bytes = bytes;
  r->stats_.t_build = Clock::now() - t0;
  return r;
}

void Rerouter::warm_up() {
  const Impl& m = *impl_;
  std::optional<FailedLink> pick, fallback;
  for (std::uint32_t s = 0; s < n_ && !pick; ++s) {
    PortNum p = 0;
    if (m.up_first[s] < m.up_first[s + 1]) {
      p = m.up_list[m.up_first[s]];
    } else if (m.down_first[s] < m.down_first[s + 1]) {
      p = m.down_list[m.down_first[s]];
    }
    if (p == 0) continue;
    if (m.has_endpoints[s] != 0) {
      pick = FailedLink{SwitchIndex{s}, p};
    } else if (!fallback) {
      fallback = FailedLink{SwitchIndex{s}, p};
    }
  }
  if (!pick) pick = fallback;
  if (!pick) return;  // no switch-to-switch link to fail
  const FailedLink cut[] = {*pick};
  if (auto rep = repair(cut); rep.ok()) {
    stats_.warmup_changes = rep->changes.size();
    stats_.warmup_blocks = rep->blocks.size();
  }
  reset();
}

bool Rerouter::link_live(SwitchIndex sw, PortNum port) const {
  if (sw.value >= n_ || !impl_->has_port(sw.value, port)) return false;
  const std::uint8_t f = impl_->slot(sw.value, port).flags;
  return (f & kLive) != 0 && (f & (kSwitchLink | kCaLink)) != 0;
}

bool Rerouter::has_updown_route(SwitchIndex s, SwitchIndex t) const {
  if (s.value >= n_ || t.value >= n_) return false;
  return impl_->legal_bit(s.value, t.value) && impl_->legal_bit_by_dest(s.value, t.value);
}

bool Rerouter::link_known(SwitchIndex sw, PortNum port) const {
  if (sw.value >= n_ || !impl_->has_port(sw.value, port)) return false;
  return (impl_->slot(sw.value, port).flags & (kSwitchLink | kCaLink)) != 0;
}

void Rerouter::reset() {
  Impl& m = *impl_;
  const Routes& base = *base_;
  for (std::size_t w = 0; w < m.dirty_since.size(); ++w) {
    for (std::uint64_t bits = m.dirty_since[w]; bits != 0; bits &= bits - 1) {
      const std::size_t bit = w * 64 + static_cast<unsigned>(std::countr_zero(bits));
      const auto s = static_cast<std::uint32_t>(bit / m.blocks_per_switch);
      const auto b = static_cast<std::uint32_t>(bit % m.blocks_per_switch);
      std::uint8_t* dst = table_.get() + std::size_t{s} * stride_ + std::size_t{b} * kLftBlockSize;
      const Lft& l = base.lfts[s];
      for (std::uint32_t i = 0; i < kLftBlockSize; ++i) dst[i] = l.get(Lid{b * kLftBlockSize + i});
    }
    m.dirty_since[w] = 0;
  }
  for (PortSlot& sl : m.ports) {
    if (sl.flags & (kSwitchLink | kCaLink)) sl.flags |= kLive;
  }
  m.live_links = m.live_links0;
  m.load = m.load0;
  m.down_ok = m.down_ok0;
  m.legal = m.legal0;
  m.legal_t = m.legal_t0;
  m.lid = m.lid0;
  for (std::uint32_t s = 0; s < n_; ++s) {
    if (m.orphan_slot[s] == kNone) continue;
    std::fill_n(m.orphan_pool.begin() + std::size_t{m.orphan_slot[s]} * m.lid_words, m.lid_words,
                0);
    m.free_slots.push_back(m.orphan_slot[s]);
    m.orphan_slot[s] = kNone;
    m.orphan_count[s] = 0;
  }
  m.changes.clear();
  m.blocks.clear();
  m.new_failed.clear();
  m.new_dead.clear();
  m.legal_lost.clear();
  m.lost_recs.clear();
  m.lost_scanned = false;
  stale_ = false;
}

std::vector<DirtyBlock> Rerouter::changed_blocks() const {
  const Impl& m = *impl_;
  std::vector<DirtyBlock> out;
  for (std::size_t w = 0; w < m.dirty_since.size(); ++w) {
    for (std::uint64_t bits = m.dirty_since[w]; bits != 0; bits &= bits - 1) {
      const std::size_t bit = w * 64 + static_cast<unsigned>(std::countr_zero(bits));
      out.push_back({SwitchIndex{static_cast<std::uint32_t>(bit / m.blocks_per_switch)},
                     static_cast<std::uint32_t>(bit % m.blocks_per_switch)});
    }
  }
  return out;
}

Routes Rerouter::export_routes(WorkerPool& pool) const {
  const Impl& m = *impl_;
  Routes out;
  out.engine = base_->engine;
  out.max_lid = base_->max_lid;
  out.num_vls = base_->num_vls;
  out.lid_layer = base_->lid_layer;
  out.path_layers = base_->path_layers;
  out.hop_vls = base_->hop_vls;
  out.updown_rank = base_->updown_rank;
  out.vl0_rank = base_->vl0_rank;
  out.grid = base_->grid;  // repairs move no switch in its grid
  out.notes = base_->notes;
  out.lfts.resize(n_);
  const std::size_t grain = std::max<std::size_t>(1, n_ / (std::size_t{pool.size()} * 16));
  pool.parallel_for(n_, grain, [&](std::size_t b, std::size_t e, unsigned) {
    for (std::size_t s = b; s < e; ++s) {
      Lft& l = out.lfts[s];
      const std::uint32_t size = base_->lfts[s].size();
      l.resize(Lid{size == 0 ? 0 : size - 1});
      std::memcpy(l.data(), row(SwitchIndex{static_cast<std::uint32_t>(s)}),
                  std::min(size, stride_));
    }
  });
  std::uint64_t total = 0, links = 0, max_routes = 0;
  for (std::size_t i = 0; i < m.ports.size(); ++i) {
    if (!m.ports[i].live_switch()) continue;
    ++links;
    total += m.load[i];
    max_routes = std::max<std::uint64_t>(max_routes, m.load[i]);
  }
  out.load.links = links;
  out.load.max_routes = max_routes;
  out.load.mean_routes = links == 0 ? 0.0 : static_cast<double>(total) / static_cast<double>(links);
  return out;
}

}  // namespace subnetd::routing
