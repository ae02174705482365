#pragma once
// Shared helpers for the bring-up tests (sweeper_test, programmer_test,
// bringup_test, ibdmchk_test, vl_tables_test, layered_resweep_test): the
// simulator on a spec, the fabrics every family is tested on, a
// GUID-keyed comparison of a discovered Topology against the generator's
// truth, a check that each directed-route path really leads to its node, and
// a LID-routed probe of every LID through the switches' own tables.
//
// Nothing here trusts the code under test: the comparison walks the truth
// Topology the simulator was built from, and the probe sends real SMPs and
// reads the answers the simulated nodes give.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/transport_factory.hpp"
#include "discovery/mad/smp.hpp"
#include "discovery/mad_engine.hpp"
#include "discovery/sim/sim_fabric.hpp"
#include "discovery/sweeper.hpp"
#include "routing/lid_map.hpp"
#include "routing/topology.hpp"

namespace subnetd::bringup_testing {

using routing::NodeType;
using routing::Topology;

// The embedded simulator running the generator spec or net file `spec`
// (null, with a failure, when it does not load).
inline std::unique_ptr<discovery::sim::SimFabric> sim_of(const std::string& spec) {
  auto truth = daemon::load_topology(spec);
  EXPECT_TRUE(truth.ok()) << spec << ": " << (truth.ok() ? "" : truth.error().message);
  if (!truth.ok()) return nullptr;
  auto made = discovery::sim::SimFabric::create(std::move(truth).value(), {});
  EXPECT_TRUE(made.ok()) << spec << ": " << (made.ok() ? "" : made.error().message);
  return made.ok() ? std::move(made).value() : nullptr;
}

// Every generator family at a small size: fat trees of 2 and 3 levels (and
// dual-port CAs cabled to two switches), PGFTs with parallel links, 2-D and
// 3-D tori, meshes, a ring, a dragonfly and Jellyfish random graphs.
inline const std::vector<std::string>& family_specs() {
  static const std::vector<std::string> specs = {
      "fat-tree:levels=2,radix=8",
      "fat-tree:levels=2,radix=6,ca_ports=2",
      "fat-tree:levels=3,k=4",
      "fat-tree:levels=3,k=6,hosts=20",
      "pgft:h=2,m=4.4,w=1.4,p=1.2",
      "pgft:h=3,m=2.2.3,w=1.2.2,p=1.2.1",
      "torus:dims=4x4",
      "torus:dims=3x3x3",
      "torus:dims=3x4,ca_ports=2",
      "mesh:dims=3x4,hosts=2",
      "mesh:dims=2x3x2",
      "ring:switches=6,hosts=2",
      "dragonfly:a=4,p=2,h=2,g=5",
      "random:switches=16,degree=4,hosts=2,seed=7",
      "random:switches=24,degree=5,hosts=1,seed=11",
  };
  return specs;
}

inline constexpr const char* kIbsimExamples = "/usr/share/doc/ibsim-utils/net-examples";

// The ibsim example net files present on this machine (net, net.1, ...).
inline std::vector<std::string> ibsim_net_files() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(kIbsimExamples, ec)) {
    const std::string name = e.path().filename().string();
    if (name == "net" || name.rfind("net.", 0) == 0) out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A gtest-safe parameter name.
inline std::string param_name(std::string_view s) {
  std::string out;
  for (char c : s) out.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return out;
}

inline std::string describe(const Topology& t, NodeId n) {
  return fmt::format("\"{}\" ({:#018x})", t.node(n).description, t.node(n).guid.value);
}

// Nodes of `t` reachable from `from` the way directed-route SMPs travel:
// out of the SM's own port, onward only through switches.
inline std::set<std::uint32_t> dr_reachable(const Topology& t, PortRef from) {
  std::set<std::uint32_t> seen{from.node.value};
  std::vector<NodeId> stack;
  const routing::Port& first = t.port(from);
  if (first.connected() && seen.insert(first.remote_node.value).second) {
    stack.push_back(first.remote_node);
  }
  while (!stack.empty()) {
    const NodeId n = stack.back();
    stack.pop_back();
    if (t.node(n).type != NodeType::kSwitch) continue;
    for (unsigned p = 1; p <= t.node(n).num_ports; ++p) {
      const routing::Port& port = t.port(n, static_cast<PortNum>(p));
      if (port.connected() && seen.insert(port.remote_node.value).second) {
        stack.push_back(port.remote_node);
      }
    }
  }
  return seen;
}

// Differences between what the sweep found and `expected` (the truth with
// any cut cables disconnected), by GUID: the node set must be exactly the
// part of `expected` that directed routes from the SM's port reach, with
// the same types, port counts, descriptions, system and port GUIDs, and every
// cable (GUID, port) <-> (GUID, port) that directed routes cross, with its
// width and speed. Empty when they agree.
inline std::vector<std::string> diff_topologies(const Topology& expected, PortRef sm,
                                                const Topology& found) {
  std::vector<std::string> d;
  const std::set<std::uint32_t> scope = dr_reachable(expected, sm);
  if (found.num_nodes() != scope.size()) {
    d.push_back(fmt::format("found {} nodes, expected {}", found.num_nodes(), scope.size()));
  }
  std::set<std::uint64_t> seen;
  for (std::uint32_t i = 0; i < found.num_nodes(); ++i) {
    const NodeId fn{i};
    const routing::Node& f = found.node(fn);
    if (!seen.insert(f.guid.value).second) {
      d.push_back(fmt::format("node GUID {:#018x} found twice", f.guid.value));
      continue;
    }
    const auto en = expected.find_by_guid(f.guid);
    if (!en || scope.count(en->value) == 0) {
      d.push_back(fmt::format("found {} which is not reachable in the truth", describe(found, fn)));
      continue;
    }
    const routing::Node& e = expected.node(*en);
    if (f.type != e.type) d.push_back(fmt::format("{}: type differs", describe(found, fn)));
    if (f.num_ports != e.num_ports) {
      d.push_back(
          fmt::format("{}: {} ports, expected {}", describe(found, fn), f.num_ports, e.num_ports));
      continue;
    }
    if (f.description != e.description) {
      d.push_back(
          fmt::format("{}: description, expected \"{}\"", describe(found, fn), e.description));
    }
    if (f.system_guid != e.system_guid) {
      d.push_back(fmt::format("{}: system GUID {:#x}, expected {:#x}", describe(found, fn),
                              f.system_guid.value, e.system_guid.value));
    }
    const bool sw = f.type == NodeType::kSwitch;
    if (sw && found.port(fn, 0).guid != expected.port(*en, 0).guid) {
      d.push_back(fmt::format("{}: port 0 GUID {:#x}, expected {:#x}", describe(found, fn),
                              found.port(fn, 0).guid.value, expected.port(*en, 0).guid.value));
    }
    for (unsigned pn = 1; pn <= f.num_ports; ++pn) {
      const auto p = static_cast<PortNum>(pn);
      const routing::Port& fp = found.port(fn, p);
      const routing::Port& ep = expected.port(*en, p);
      // A cable is visible when directed routes cross it: a switch at one
      // end (switches forward, CAs do not), or the SM's own port.
      const bool visible = ep.connected() && scope.count(ep.remote_node.value) != 0 &&
                           (sw || expected.node(ep.remote_node).type == NodeType::kSwitch ||
                            (*en == sm.node && p == sm.port) ||
                            (ep.remote_node == sm.node && ep.remote_port == sm.port));
      if (fp.connected() != visible) {
        d.push_back(fmt::format("{} port {}: {} but expected {}", describe(found, fn), pn,
                                fp.connected() ? "linked" : "unlinked",
                                visible ? "linked" : "unlinked"));
        continue;
      }
      if (!fp.connected()) continue;
      const Guid fr = found.node(fp.remote_node).guid;
      const Guid er = expected.node(ep.remote_node).guid;
      if (fr != er || fp.remote_port != ep.remote_port) {
        d.push_back(fmt::format("{} port {} -> {:#x}[{}], expected {:#x}[{}]", describe(found, fn),
                                pn, fr.value, fp.remote_port, er.value, ep.remote_port));
      }
      if (!sw && fp.guid != ep.guid) {
        d.push_back(fmt::format("{} port {}: port GUID {:#x}, expected {:#x}", describe(found, fn),
                                pn, fp.guid.value, ep.guid.value));
      }
      // The simulator reports the cable's width/speed, 4x QDR when unset.
      const std::uint8_t width = ep.width_active != 0 ? ep.width_active : 2;
      const std::uint8_t speed = ep.speed_active != 0 ? ep.speed_active : 4;
      if (fp.width_active != width || fp.speed_active != speed) {
        d.push_back(fmt::format("{} port {}: width/speed {}/{}, expected {}/{}",
                                describe(found, fn), pn, fp.width_active, fp.speed_active, width,
                                speed));
      }
    }
  }
  return d;
}

inline std::string join_lines(const std::vector<std::string>& v, std::size_t max = 10) {
  std::string s;
  for (std::size_t i = 0; i < v.size() && i < max; ++i) s += "\n  " + v[i];
  if (v.size() > max) s += fmt::format("\n  ... and {} more", v.size() - max);
  return s;
}

// Follows a directed-route path through `truth` from the SM's port; returns
// why it is not a valid route ("" if it is), and where it ends.
inline std::string walk_dr_path(const Topology& truth, PortRef sm,
                                std::span<const std::uint8_t> path, NodeId& at, PortNum& in) {
  at = sm.node;
  in = sm.port;
  for (std::size_t h = 0; h < path.size(); ++h) {
    const PortNum out = path[h];
    if (h == 0 && out != sm.port) return fmt::format("leaves the SM's CA by port {}", out);
    if (h > 0 && truth.node(at).type != NodeType::kSwitch) return "passes through a CA";
    if (out == 0 || out > truth.node(at).num_ports || !truth.port(at, out).connected()) {
      return fmt::format("hop {} takes dark port {}", h + 1, out);
    }
    in = truth.port(at, out).remote_port;
    at = truth.port(at, out).remote_node;
  }
  return "";
}

// Every node's directed-route path must lead to it through `truth`, and every
// CA port's own path (SweepResult::path_to_port) must enter the CA by that
// port; returns the violations.
inline std::vector<std::string> check_dr_paths(const Topology& truth, PortRef sm,
                                               const discovery::SweepResult& r) {
  std::vector<std::string> bad;
  const Topology& t = r.topology;
  for (std::uint32_t i = 0; i < t.num_nodes(); ++i) {
    const NodeId fn{i};
    NodeId at;
    PortNum in = 0;
    std::string why = walk_dr_path(truth, sm, r.paths.path(fn), at, in);
    if (why.empty() && truth.node(at).guid != t.node(fn).guid) {
      why = fmt::format("ends at {}", describe(truth, at));
    }
    if (!why.empty()) bad.push_back(describe(t, fn) + ": path " + why);
    if (t.node(fn).type == NodeType::kSwitch || fn == r.sm_node) continue;
    for (unsigned pn = 1; pn <= t.node(fn).num_ports; ++pn) {
      const auto p = static_cast<PortNum>(pn);
      if (!t.port(fn, p).connected()) continue;
      why = walk_dr_path(truth, sm, r.path_to_port(fn, p), at, in);
      if (why.empty() && (truth.node(at).guid != t.node(fn).guid || in != p)) {
        why = fmt::format("ends at {} port {}", describe(truth, at), in);
      }
      if (!why.empty()) bad.push_back(fmt::format("{} port {}: path {}", describe(t, fn), pn, why));
    }
  }
  return bad;
}

// Drops the simulator counts on the LID-routed path (a wrong, missing or
// looping table entry, or a LID nobody owns).
inline std::uint64_t lid_routed_drops(const discovery::sim::SimStats& s) {
  using discovery::sim::DropReason;
  std::uint64_t n = 0;
  for (DropReason r : {DropReason::kPortNotActive, DropReason::kBadLid, DropReason::kLftBeyondTop,
                       DropReason::kLftUnset, DropReason::kLftBadPort, DropReason::kNoLidMatch,
                       DropReason::kHopLimit}) {
    n += s.drops_of(r);
  }
  return n;
}

struct LrProbe {
  std::uint64_t probed = 0;
  std::uint64_t answered = 0;  // by the node and port that own the LID
  std::vector<std::string> failures;
};

inline boost::asio::awaitable<LrProbe> probe_every_lid_on(discovery::MadEngine& engine,
                                                          const Topology& t,
                                                          const routing::LidMap& lids,
                                                          discovery::FlowOptions po);

// Sends a LID-routed Get NodeInfo from the SM to every LID of `lids` that has
// an owner (all 2^LMC LIDs of each CA port), `window` at a time, with no
// retries, so one wrong table entry is one failure. An answer counts when
// it comes from the owning node and, for a CA, names the owning port (the
// port the SMP entered by).
inline LrProbe probe_every_lid(discovery::Transport& transport, const Topology& t,
                               const routing::LidMap& lids, Lid sm_lid, unsigned window = 64) {
  discovery::FlowOptions po;
  po.window = window;
  po.retries = 0;
  po.timeout = std::chrono::milliseconds{5};
  po.sm_lid = sm_lid.value;
  return discovery::run_blocking<LrProbe>(transport, [&](discovery::MadEngine& engine) {
    return probe_every_lid_on(engine, t, lids, po);
  });
}

inline boost::asio::awaitable<LrProbe> probe_every_lid_on(discovery::MadEngine& engine,
                                                          const Topology& t,
                                                          const routing::LidMap& lids,
                                                          discovery::FlowOptions po) {
  discovery::Flow pipe(engine, po);
  LrProbe out;
  for (std::uint32_t l = 1; l <= lids.max_lid.value; ++l) {
    const PortRef owner = lids.owner_of(Lid{l});
    if (!owner.node.valid()) continue;
    ++out.probed;
    pipe.submit(discovery::mad::make_lr_smp(discovery::mad::Method::kGet,
                                            discovery::mad::AttrId::kNodeInfo, 0, 0),
                l, [&out, &t, owner, l](Result<discovery::mad::Smp> r) {
                  if (!r.ok()) {
                    out.failures.push_back(fmt::format("LID {:#x} ({} port {}): {}", l,
                                                       describe(t, owner.node), owner.port,
                                                       r.error().message));
                    return;
                  }
                  const auto ni = discovery::mad::NodeInfo::decode(discovery::mad::data_of(*r));
                  const bool sw = t.node(owner.node).type == NodeType::kSwitch;
                  if (ni.node_guid != t.node(owner.node).guid.value ||
                      (!sw && ni.local_port_num != owner.port)) {
                    out.failures.push_back(fmt::format(
                        "LID {:#x}: answered by {:#x} port {}, owner is {} port {}", l,
                        ni.node_guid, ni.local_port_num, describe(t, owner.node), owner.port));
                    return;
                  }
                  ++out.answered;
                });
  }
  co_await pipe.drained();
  if (engine.stopped()) out.failures.push_back("the MAD engine stopped");
  co_return out;
}

}  // namespace subnetd::bringup_testing
