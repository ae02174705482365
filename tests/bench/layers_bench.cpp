// layers_bench: shortest paths split into VL layers (routing/layers.hpp)
// next to up*/down*, on one fabric: routes per link (max, mean), VLs used,
// time to route, to assign the layers and to verify every layer (issue 18).
//
//   layers_bench [SPEC] [threads=2] [vls=8] [lid_bits=16|17|24]
//
// SPEC defaults to random:switches=200,degree=8,hosts=8,seed=1.

#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <string_view>

#include "bench_util.hpp"
#include "discovery/topo/generators.hpp"
#include "routing/engine.hpp"
#include "routing/layers.hpp"
#include "routing/lid_assigner.hpp"
#include "routing/verifier.hpp"

namespace {

using namespace subnetd;
using namespace subnetd::routing;
using namespace subnetd::bench;

struct Args {
  std::string spec = "random:switches=200,degree=8,hosts=8,seed=1";
  unsigned threads = 2;
  unsigned vls = 8;
  int lid_bits = 16;
};

int fail(std::string_view what, const Error& e) {
  std::printf("FAILED %.*s: %s\n", static_cast<int>(what.size()), what.data(), e.message.c_str());
  return 1;
}

int run(const Args& a) {
  auto topo = discovery::topo::generate(a.spec);
  if (!topo.ok()) return fail("topology", topo.error());
  LidAssignOptions lopts;
  lopts.space = *LidSpace::from_bits(a.lid_bits);
  auto lids = assign_lids(*topo, lopts);
  if (!lids.ok()) return fail("LIDs", lids.error());
  WorkerPool pool(a.threads);
  std::printf("layers_bench %s: %zu switches, %zu CAs, vls=%u\n", a.spec.c_str(),
              topo->num_switches(), topo->num_cas(), a.vls);
  for (const std::string_view name : {"updn", "minhop"}) {
    auto engine = make_engine(name);
    if (!engine.ok()) return fail(name, engine.error());
    auto t0 = Clock::now();
    auto routes = (*engine)->compute(*topo, lids->map, {}, pool, {});
    if (!routes.ok()) return fail(name, routes.error());
    const double t_route = seconds_since(t0);
    double t_layers = 0;
    if (name == "minhop") {
      t0 = Clock::now();
      auto layers = assign_layers(*topo, lids->map, *routes,
                                  LayerOptions{static_cast<std::uint8_t>(a.vls)}, {});
      t_layers = seconds_since(t0);
      if (!layers.ok()) {
        // The balance is still worth seeing; the budget is what failed.
        std::printf("%-12s max %6llu routes/link, mean %8.1f; layers %.3f s: %s\n", "minhop",
                    static_cast<unsigned long long>(routes->load.max_routes),
                    routes->load.mean_routes, t_layers, layers.error().message.c_str());
        continue;
      }
      routes->num_vls = layers->layers;
      routes->lid_layer = std::move(layers->lid_layer);
    }
    t0 = Clock::now();
    auto v = verify(*topo, lids->map, *routes, pool, {});
    const double t_verify = seconds_since(t0);
    std::printf(
        "%-12s max %6llu routes/link, mean %8.1f; %u VL(s); route %.3f s, layers %.3f s, "
        "verify %.3f s: %s\n",
        name == "minhop" ? "minhop+VLs" : "updn",
        static_cast<unsigned long long>(routes->load.max_routes), routes->load.mean_routes,
        unsigned{routes->num_vls}, t_route, t_layers, t_verify,
        v.ok() ? "deadlock-free" : v.error().message.c_str());
  }
  std::printf("peak RSS %.0f MiB\n", peak_rss_mib());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  Args a;
  for (int i = 1; i < argc; ++i) {
    const Arg arg = split_arg(argv[i]);
    bool ok = true;
    if (arg.key.empty()) {
      a.spec = arg.value;
    } else if (arg.key == "threads") {
      ok = parse_value(arg.value, a.threads) && a.threads > 0;
    } else if (arg.key == "vls") {
      ok = parse_value(arg.value, a.vls) && a.vls >= 1 && a.vls <= 15;
    } else if (arg.key == "lid_bits") {
      ok = parse_value(arg.value, a.lid_bits);
    } else {
      ok = false;
    }
    if (!ok) {
      std::fprintf(stderr, "bad argument %s\n", argv[i]);
      return 2;
    }
  }
  return run(a);
}
