// Builds a large generated fabric and the simulator on it; prints generation
// time, simulator build time, peak RSS, and the simulator's SMP throughput
// for one directed-route NodeInfo to every node (a sweep's worth).
//
//   sim_scale_bench [SPEC] [--lid-bits N] [--no-sweep] [--sweeper]
//   default SPEC: fat-tree:levels=3,k=80  (8,000 switches, 128,000 CAs)
//
// --sweeper also runs discovery::Sweeper (window 64) over a second simulator
// with the default latency model and prints its transport time, i.e. an
// estimate of how long the sweep would take on a real fabric.
//
// Goal (issue 2): simulator build < 10 s and < 2 GiB peak RSS at that size.

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_util.hpp"
#include "discovery/mad/smp.hpp"
#include "discovery/sim/sim_fabric.hpp"
#include "discovery/sweeper.hpp"
#include "discovery/topo/generators.hpp"

using namespace subnetd;
using namespace subnetd::bench;

int main(int argc, char** argv) {
  std::string spec = "fat-tree:levels=3,k=80";
  int lid_bits = 24;
  bool sweep = true;
  bool sweeper = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--lid-bits" && i + 1 < argc && parse_value(argv[i + 1], lid_bits)) {
      ++i;
    } else if (a == "--no-sweep") {
      sweep = false;
    } else if (a == "--sweeper") {
      sweeper = true;
    } else if (!a.empty() && a[0] != '-') {
      spec = a;
    } else {
      std::fprintf(stderr, "usage: %s [SPEC] [--lid-bits 16|17|24] [--no-sweep] [--sweeper]\n",
                   argv[0]);
      return 2;
    }
  }

  const auto t0 = Clock::now();
  auto topo = discovery::topo::generate(spec);
  if (!topo.ok()) {
    std::fprintf(stderr, "generate: %s\n", topo.error().message.c_str());
    return 1;
  }
  const auto t1 = Clock::now();
  const std::size_t nodes = topo->num_nodes();
  const std::size_t switches = topo->num_switches();
  const std::size_t ports = topo->num_ports_total();
  const long rss_topo = proc_status_kib("VmRSS");

  discovery::sim::SimOptions opts;
  opts.lid_bits = lid_bits;
  const auto t2 = Clock::now();
  auto sim = discovery::sim::SimFabric::create(std::move(topo).value(), opts);
  const auto t3 = Clock::now();
  if (!sim.ok()) {
    std::fprintf(stderr, "simulator: %s\n", sim.error().message.c_str());
    return 1;
  }
  const long rss_sim = proc_status_kib("VmRSS");

  fmt::print("fabric        {}: {} nodes ({} switches, {} CAs), {} port slots\n", spec, nodes,
             switches, nodes - switches, ports);
  fmt::print("generate      {:.3f} s   (RSS after: {:.1f} MiB)\n", seconds(t1 - t0),
             rss_topo / 1024.0);
  fmt::print("sim build     {:.3f} s   (RSS after: {:.1f} MiB, +{:.1f} MiB)\n", seconds(t3 - t2),
             rss_sim / 1024.0, (rss_sim - rss_topo) / 1024.0);

  if (sweep) {
    // Breadth-first directed-route paths over the wiring, then one NodeInfo
    // Get per node through the simulator.
    discovery::sim::SimFabric& f = **sim;
    const routing::Topology& t = f.topology();
    const auto sm = t.find_by_guid(f.local_port().node_guid);
    std::vector<std::uint32_t> parent(nodes, UINT32_MAX);
    std::vector<std::uint8_t> via(nodes, 0);
    std::vector<std::uint32_t> order{sm->value};
    std::vector<std::uint8_t> depth(nodes, 0);
    parent[sm->value] = sm->value;
    for (std::size_t q = 0; q < order.size(); ++q) {
      const NodeId n{order[q]};
      const routing::Node& node = t.node(n);
      if (node.type != routing::NodeType::kSwitch && n != *sm) continue;
      for (unsigned p = 1; p <= node.num_ports; ++p) {
        if (n == *sm && p != f.local_port().port_num) continue;
        const routing::Port& port = t.port(n, static_cast<PortNum>(p));
        if (!port.connected() || parent[port.remote_node.value] != UINT32_MAX) continue;
        parent[port.remote_node.value] = n.value;
        via[port.remote_node.value] = static_cast<std::uint8_t>(p);
        depth[port.remote_node.value] = static_cast<std::uint8_t>(depth[n.value] + 1);
        order.push_back(port.remote_node.value);
      }
    }
    std::size_t answered = 0;
    std::vector<std::uint8_t> path;
    discovery::Mad m;
    const auto s0 = Clock::now();
    for (std::uint32_t n : order) {
      path.assign(depth[n], 0);
      for (std::uint32_t v = n, d = depth[n]; d > 0; v = parent[v], --d) path[d - 1] = via[v];
      auto smp = discovery::mad::make_dr_smp(discovery::mad::Method::kGet,
                                             discovery::mad::AttrId::kNodeInfo, 0, path, n);
      discovery::mad::encode_smp(smp, std::span<std::uint8_t, discovery::kMadSize>(m.data));
      if (!f.send(m).ok()) return 1;
      auto got = f.receive(std::chrono::microseconds{0});
      if (got.ok() && got->has_value()) ++answered;
    }
    const auto s1 = Clock::now();
    fmt::print("DR NodeInfo   {} of {} nodes answered in {:.3f} s ({:.0f} SMPs/s, max depth {})\n",
               answered, order.size(), seconds(s1 - s0), order.size() / seconds(s1 - s0),
               *std::max_element(depth.begin(), depth.end()));
  }
  const long hwm_build = proc_status_kib("VmHWM");
  if (sweeper) {
    sim->reset();
    auto again = discovery::topo::generate(spec);
    discovery::sim::SimOptions lat = opts;
    lat.latency = discovery::sim::LatencyModel{};
    auto f = discovery::sim::SimFabric::create(std::move(again).value(), lat);
    if (!f.ok()) return 1;
    discovery::SweepOptions so;
    so.extended_lids = lid_bits != 16;
    const auto w0 = Clock::now();
    auto swept = discovery::Sweeper(**f, so).run();
    const auto w1 = Clock::now();
    if (!swept.ok()) {
      std::fprintf(stderr, "sweep: %s\n", swept.error().message.c_str());
      return 1;
    }
    const auto st = (*f)->stats();
    fmt::print(
        "Sweeper       {} nodes, {} SMPs sent, {} timeouts; transport time {:.3f} s "
        "(latency model: {} ns/hop, {} ns/SMA), wall {:.3f} s\n",
        swept->topology.num_nodes(), swept->smps.sent, swept->smps.timeouts,
        std::chrono::duration<double>(swept->duration).count(), lat.latency->hop_delay.count(),
        lat.latency->sma_processing.count(), seconds(w1 - w0));
    fmt::print("              simulator: {} SMAs served, {} link crossings, {} drops\n",
               st.smps_handled, st.link_traversals, st.drops_total());
  }
  fmt::print("peak RSS      {:.1f} MiB (VmHWM)\n", proc_status_kib("VmHWM") / 1024.0);
  const bool ok = seconds(t3 - t2) < 10.0 && hwm_build < 2L * 1024 * 1024;
  fmt::print(
      "goal          sim build < 10 s and peak RSS < 2 GiB (up to the build: {:.1f} MiB): {}\n",
      hwm_build / 1024.0, ok ? "met" : "NOT met");
  return ok ? 0 : 1;
}
