#include "daemon/fast_path.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "routing/text.hpp"

namespace subnetd::daemon {
namespace {

namespace mad = discovery::mad;

}  // namespace

FastPath::FastPath(const routing::Topology& topo, const routing::LidMap& lids, NodeId sm_node,
                   PortNum sm_port, FastPathConfig config)
    : topo_(topo), lids_(lids), sm_node_(sm_node), sm_port_(sm_port), config_(config) {}

FastPath::~FastPath() = default;

Result<std::unique_ptr<FastPath>> FastPath::build(const routing::Topology& topo,
                                                  const routing::LidMap& lids,
                                                  std::shared_ptr<const routing::Routes> routes,
                                                  NodeId sm_node, PortNum sm_port,
                                                  FastPathConfig config, routing::WorkerPool& pool,
                                                  std::stop_token stop) {
  if (!sm_node.valid() || sm_node.value >= topo.num_nodes() || sm_port == 0 ||
      sm_port > topo.node(sm_node).num_ports) {
    return Error{Errc::kInvalidArgument, "fast path: the SM's port is not in the topology"};
  }
  const routing::Port& own = topo.port(sm_node, sm_port);
  if (!own.connected() || topo.node(own.remote_node).type != routing::NodeType::kSwitch) {
    return Error{Errc::kUnsupported,
                 fmt::format("fast path: the SM's port \"{}\" port {} is not cabled to a switch",
                             printable(topo.node(sm_node).description), sm_port)};
  }
  std::unique_ptr<FastPath> fp(new FastPath(topo, lids, sm_node, sm_port, config));
  auto rr = routing::Rerouter::build(topo, lids, std::move(routes), pool, stop);
  if (!rr.ok()) return rr.error();
  fp->rerouter_ = std::move(rr).value();
  const std::size_t n = topo.num_switches();
  fp->root_ = topo.node(own.remote_node).switch_index;
  fp->parent_.assign(n, kNoSwitch);
  fp->parent_port_.assign(n, 0);
  fp->depth_.assign(n, 0);
  fp->stamp_.assign(n, 0);
  fp->links_first_.assign(n + 1, 0);
  for (std::uint32_t s = 0; s < n; ++s) {
    fp->links_first_[s] = static_cast<std::uint32_t>(fp->links_.size());
    const NodeId node = topo.switch_node(SwitchIndex{s});
    for (unsigned pn = 1; pn <= topo.node(node).num_ports; ++pn) {
      const routing::Port& port = topo.port(node, static_cast<PortNum>(pn));
      if (!port.connected() || topo.node(port.remote_node).type != routing::NodeType::kSwitch)
        continue;
      fp->links_.push_back(
          {topo.node(port.remote_node).switch_index, static_cast<PortNum>(pn), port.remote_port});
    }
  }
  fp->links_first_[n] = static_cast<std::uint32_t>(fp->links_.size());
  fp->seen_.assign(n, 0);
  fp->queue_.reserve(n);
  fp->trap_mark_.assign(n, 0);
  fp->near_mark_.assign(n, 0);
  fp->near_count_.assign(n, 0);
  // Push scratch sized now (the rerouter's warm-up repair gives a typical
  // block count), so the first push allocates little.
  fp->path_len_.assign(n, 0);
  fp->path_slot_.assign(n, 0);
  const std::size_t blocks = std::max<std::size_t>(1024, 2 * fp->rerouter_->stats().warmup_blocks);
  fp->tmpl_buf_.resize(std::min<std::size_t>(n, blocks));
  fp->refresh_paths();
  fp->affinity_.release();  // built here; used on the SM strand from now on
  return fp;
}

bool FastPath::link_up_now(SwitchIndex sw, PortNum port) const {
  if (!rerouter_->link_live(sw, port)) return false;
  return std::none_of(suspect_.begin(), suspect_.end(),
                      [&](const routing::FailedLink& f) { return f.sw == sw && f.port == port; });
}

void FastPath::refresh_paths() {
  affinity_.check();
  std::fill(parent_.begin(), parent_.end(), kNoSwitch);
  std::fill(depth_.begin(), depth_.end(), 0);
  std::vector<std::uint8_t>& seen = seen_;
  std::fill(seen.begin(), seen.end(), 0);
  std::vector<SwitchIndex>& queue = queue_;
  queue.assign(1, root_);
  seen[root_.value] = 1;
  for (std::size_t i = 0; i < queue.size(); ++i) {
    const SwitchIndex s = queue[i];
    // The path to s holds the SM's port plus depth_[s] hops; a child needs
    // one more, within the 63 a directed route can hold.
    if (depth_[s.value] + 2U > mad::kMaxHopCount) continue;
    for (const SwitchLink& l : links_of(s)) {
      const std::uint32_t child = l.peer.value;
      if (seen[child] != 0 || !link_up_now(s, l.port)) continue;
      seen[child] = 1;
      parent_[child] = s;
      parent_port_[child] = l.port;
      depth_[child] = static_cast<std::uint8_t>(depth_[s.value] + 1);
      queue.push_back(l.peer);
    }
  }
}

bool FastPath::intact(SwitchIndex sw) const {
  for (SwitchIndex x = sw; x != root_; x = parent_[x.value]) {
    const SwitchIndex up = parent_[x.value];
    if (up == kNoSwitch || !link_up_now(up, parent_port_[x.value])) return false;
  }
  return true;
}

bool FastPath::descends_from(SwitchIndex sw, SwitchIndex ancestor) const {
  for (SwitchIndex x = sw; x != kNoSwitch; x = x == root_ ? kNoSwitch : parent_[x.value]) {
    if (x == ancestor) return true;
  }
  return false;
}

std::size_t FastPath::tree_path(SwitchIndex sw, std::array<std::uint8_t, 64>& out) const {
  const std::size_t len = std::size_t{depth_[sw.value]} + 1;
  out[0] = sm_port_;
  std::size_t i = len;
  for (SwitchIndex x = sw; x != root_; x = parent_[x.value]) out[--i] = parent_port_[x.value];
  return len;
}

std::size_t FastPath::path(SwitchIndex sw, std::array<std::uint8_t, 64>& out) const {
  if (sw == root_ || (parent_[sw.value] != kNoSwitch && intact(sw))) return tree_path(sw, out);
  // A failed link on sw's tree path: one hop from a neighbour whose own path
  // is intact and does not run through sw.
  return one_hop_off(
      sw,
      [&](SwitchIndex nb) {
        return (nb == root_ || (parent_[nb.value] != kNoSwitch && intact(nb))) &&
               !descends_from(nb, sw);
      },
      out);
}

std::size_t FastPath::table_path(SwitchIndex sw, std::array<std::uint8_t, 64>& out) const {
  const NodeId node = topo_.switch_node(sw);
  const std::uint32_t idx = topo_.port_index(node, 0);
  if (idx >= lids_.base_by_port.size() || !lids_.base_by_port[idx].valid()) return 0;
  const Lid lid = lids_.base_by_port[idx];
  std::size_t len = 0;
  out[len++] = sm_port_;
  for (SwitchIndex x = root_; x != sw;) {
    const PortNum e = rerouter_->entry(x, lid);
    if (e == 0 || e == routing::kDropPort || !link_up_now(x, e) || len == mad::kMaxHopCount)
      return 0;
    const routing::Port& port = topo_.port(topo_.switch_node(x), e);
    if (!port.connected() || topo_.node(port.remote_node).type != routing::NodeType::kSwitch)
      return 0;
    out[len++] = e;
    x = topo_.node(port.remote_node).switch_index;
  }
  return len;
}

std::vector<std::uint8_t> FastPath::path_to(SwitchIndex sw) const {
  affinity_.check();
  std::array<std::uint8_t, 64> buf{};
  std::size_t len = path(sw, buf);
  if (len == 0) len = table_path(sw, buf);
  return std::vector<std::uint8_t>(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(len));
}

discovery::mad::Smp FastPath::probe_smp(PortNum p, std::span<const std::uint8_t> route) const {
  return mad::make_dr_smp(mad::Method::kGet, mad::AttrId::kPortInfo, p, route, 0);
}

void FastPath::reset() {
  affinity_.check();
  rerouter_->reset();
  suspect_.clear();
  refresh_paths();
}

routing::Topology FastPath::live_topology() const {
  routing::Topology t = topo_;
  for (std::uint32_t si = 0; si < t.num_switches(); ++si) {
    const SwitchIndex s{si};
    const NodeId node = t.switch_node(s);
    for (unsigned pn = 1; pn <= t.node(node).num_ports; ++pn) {
      const auto p = static_cast<PortNum>(pn);
      if (!rerouter_->link_known(s, p) || rerouter_->link_live(s, p)) continue;
      const routing::Port& port = t.port(node, p);
      if (!port.connected()) continue;
      const PortRef far{port.remote_node, port.remote_port};
      t.disconnect({node, p});
      t.mutable_port(node, p).state = routing::PortState::kDown;
      t.mutable_port(far.node, far.port).state = routing::PortState::kDown;
    }
  }
  return t;
}

}  // namespace subnetd::daemon
