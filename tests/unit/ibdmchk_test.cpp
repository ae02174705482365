// An independent credit-loop check: ibutils' ibdmchk reads the OpenSM-format
// dump files we write (daemon/dump_files) and traverses every CA-to-CA path
// through our LFTs. updn, brought up over the simulator on a fat tree, a
// torus and a random graph, must show no credit loops and no traversal
// errors; minhop on a ring (tables written straight from the engine,
// bypassing our verifier) must be reported as looping; and a deliberately
// removed LFT entry must show up as a traversal error — so both verdicts can
// fail. ibdmchk (1.5.7) may crash after printing its verdict: we read its
// output, not its exit code (tests/opensm/README.md).

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>

#include "bringup_test_support.hpp"
#include "daemon/bringup.hpp"
#include "daemon/dump_files.hpp"
#include "daemon/transport_factory.hpp"
#include "discovery/sim/sim_fabric.hpp"
#include "routing/engine.hpp"
#include "routing/engines/dor.hpp"
#include "routing/grid_shape.hpp"
#include "routing/lid_assigner.hpp"
#include "routing/verifier.hpp"

namespace subnetd::daemon {
namespace {

using namespace subnetd::state;

using routing::Topology;

bool have_ibdmchk() {
  return std::system("command -v ibdmchk > /dev/null 2>&1") == 0;
}

// A fresh directory per case (removed again when the case passes; kept with
// ibdmchk.out for a look when it fails).
std::string scratch_dir(const std::string& name) {
  const std::string dir = fmt::format("{}subnetd_ibdmchk_{}_{}", testing::TempDir(), ::getpid(),
                                      bringup_testing::param_name(name));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// Runs ibdmchk on the dump files in `dir` from `dir` (it writes side reports
// into its working directory) and returns what it printed.
// `path_sl`: with the CAxCA->SL file of layered routing (-c; SL2VL is
// ibdmchk's identity, as ours between switch ports), and `sl2vl` the
// switches' SL2VL file of per-hop VLs (-d).
std::string run_ibdmchk(const std::string& dir, bool path_sl = false, bool sl2vl = false) {
  const std::string cmd = fmt::format(
      "cd '{}' && timeout 120 ibdmchk -s opensm-subnet.lst -f opensm.fdbs -m opensm.mcfdbs "
      "{}{}> ibdmchk.out 2>&1",
      dir, path_sl ? "-c opensm-path-sl.dump " : "", sl2vl ? "-d opensm-sl2vl.dump " : "");
  [[maybe_unused]] const int rc = std::system(cmd.c_str());  // it may crash after its verdict
  std::ifstream f(dir + "/ibdmchk.out");
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

struct Verdict {
  bool no_loops = false;
  bool loops = false;
  bool traversal_errors = false;
  std::size_t nodes = 0;         // "-I- Defined S/N systems/nodes"
  std::size_t fdb_switches = 0;  // "-I- Defined E fdb entries for:S switches"
  std::size_t fdb_entries = 0;
};

Verdict read_verdict(const std::string& out) {
  Verdict v;
  v.no_loops = out.find("\n-I- no credit loops found") != std::string::npos;
  v.loops = out.find("\n-E- credit loops in routing") != std::string::npos;
  for (const char* e : {"Some Point to Point Traversals Failed", "Fail to traverse", "Dead end",
                        "Unassigned LFT", "Unassigned SL2VL"}) {
    v.traversal_errors |= out.find(e) != std::string::npos;
  }
  std::smatch m;
  if (std::regex_search(out, m, std::regex(R"(-I- Defined \d+/(\d+) systems/nodes)"))) {
    v.nodes = std::stoul(m[1]);
  }
  if (std::regex_search(out, m,
                        std::regex(R"(-I- Defined (\d+) fdb entries for:(\d+) switches)"))) {
    v.fdb_entries = std::stoul(m[1]);
    v.fdb_switches = std::stoul(m[2]);
  }
  return v;
}

// Entries ibdmchk should have read: every routed (switch, LID) pair.
std::size_t routed_entries(const routing::Routes& routes) {
  std::size_t n = 0;
  for (const routing::Lft& lft : routes.lfts) {
    for (std::uint32_t l = 1; l <= routes.max_lid.value; ++l) {
      n += lft.get(Lid{l}) != routing::kDropPort ? 1 : 0;
    }
  }
  return n;
}

class UpdnPasses : public testing::TestWithParam<std::string> {};

TEST_P(UpdnPasses, NoCreditLoopsNoTraversalErrors) {
  if (!have_ibdmchk()) GTEST_SKIP() << "ibdmchk (ibutils) is not installed";
  auto truth = load_topology(GetParam());
  ASSERT_TRUE(truth.ok()) << truth.error().message;
  auto sim = discovery::sim::SimFabric::create(std::move(truth).value(), {});
  ASSERT_TRUE(sim.ok()) << sim.error().message;
  routing::WorkerPool pool(2);
  BringUpOptions o;
  o.engine = "updn";
  auto r = BringUp::run_blocking(**sim, pool, o, nullptr);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const Topology& t = r->sweep.topology;
  const std::string dir = scratch_dir(GetParam());
  ASSERT_TRUE(write_dump_files(dir, t, r->lids.map, *r->routes, r->sweep.sm_node).ok());

  const std::string out = run_ibdmchk(dir);
  const Verdict v = read_verdict(out);
  EXPECT_EQ(v.nodes, t.num_nodes()) << "ibdmchk did not read every node of opensm-subnet.lst";
  EXPECT_EQ(v.fdb_switches, t.num_switches()) << "ibdmchk did not read every switch's LFT";
  EXPECT_EQ(v.fdb_entries, routed_entries(*r->routes));
  EXPECT_TRUE(v.no_loops) << dir << "/ibdmchk.out";
  EXPECT_FALSE(v.loops) << dir << "/ibdmchk.out";
  EXPECT_FALSE(v.traversal_errors) << dir << "/ibdmchk.out";
  if (!HasFailure()) std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Fabrics, UpdnPasses,
                         testing::Values("fat-tree:levels=3,k=4", "torus:dims=4x4,hosts=2",
                                         "random:switches=16,degree=4,hosts=2,seed=7"),
                         [](const auto& i) { return bringup_testing::param_name(i.param); });

// Routes straight from an engine, with LIDs assigned on the generator's truth.
struct Direct {
  Topology topo;
  routing::LidMap lids;
  routing::Routes routes;
};

void route_directly(const std::string& spec, const std::string& engine, Direct& d,
                    const routing::EngineOptions& opts = {}) {
  auto t = load_topology(spec);
  ASSERT_TRUE(t.ok()) << t.error().message;
  d.topo = std::move(t).value();
  routing::LidAssignOptions lo;
  auto lids = routing::assign_lids(d.topo, lo);
  ASSERT_TRUE(lids.ok()) << lids.error().message;
  d.lids = std::move(lids).value().map;
  auto e = routing::make_engine(engine);
  ASSERT_TRUE(e.ok());
  routing::WorkerPool pool(2);
  auto routes = (*e)->compute(d.topo, d.lids, opts, pool, {});
  ASSERT_TRUE(routes.ok()) << routes.error().message;
  d.routes = std::move(routes).value();
}

// minhop on a ring and on a 2-D torus: ibdmchk, like our verifier, finds the
// credit loop (and every path still arrives: the tables are complete).
TEST(Ibdmchk, MinhopOnARingAndATorusLoops) {
  if (!have_ibdmchk()) GTEST_SKIP() << "ibdmchk (ibutils) is not installed";
  for (const char* spec : {"ring:switches=6,hosts=2", "torus:dims=4x4"}) {
    SCOPED_TRACE(spec);
    Direct d;
    route_directly(spec, "minhop", d);
    if (HasFatalFailure()) return;
    routing::WorkerPool pool(1);
    auto ours = routing::verify(d.topo, d.lids, d.routes, pool, {});
    ASSERT_FALSE(ours.ok()) << "our verifier passed minhop on " << spec;
    EXPECT_EQ(ours.error().code, Errc::kCdgCycle);

    const std::string dir = scratch_dir(std::string("minhop_") + spec);
    ASSERT_TRUE(write_dump_files(dir, d.topo, d.lids, d.routes).ok());
    const Verdict v = read_verdict(run_ibdmchk(dir));
    EXPECT_EQ(v.fdb_switches, d.topo.num_switches());
    EXPECT_TRUE(v.loops) << dir << "/ibdmchk.out";
    EXPECT_FALSE(v.no_loops) << dir << "/ibdmchk.out";
    EXPECT_FALSE(v.traversal_errors) << dir << "/ibdmchk.out";
    if (!HasFailure()) std::filesystem::remove_all(dir);
  }
}

// Layered routes on a torus and a random graph: with the path-SL file,
// ibdmchk checks each SL's (VL's) dependency graph on its own and finds no
// credit loop; without it, all traffic on one VL, it finds one (so the file
// is what makes the difference).
TEST(Ibdmchk, LayeredRoutesAreLoopFreePerSl) {
  if (!have_ibdmchk()) GTEST_SKIP() << "ibdmchk (ibutils) is not installed";
  for (const char* spec :
       {"torus:dims=5x5,hosts=1", "random:switches=16,degree=4,hosts=1,seed=7"}) {
    SCOPED_TRACE(spec);
    Direct d;
    route_directly(spec, "layered", d);
    if (HasFatalFailure()) return;
    ASSERT_GT(d.routes.num_vls, 1);
    routing::WorkerPool pool(1);
    auto ours = routing::verify(d.topo, d.lids, d.routes, pool, {});
    ASSERT_TRUE(ours.ok()) << ours.error().message;
    const std::string dir = scratch_dir(std::string("layered_") + spec);
    ASSERT_TRUE(write_dump_files(dir, d.topo, d.lids, d.routes).ok());
    ASSERT_TRUE(std::filesystem::exists(dir + "/opensm-path-sl.dump"));
    const Verdict with = read_verdict(run_ibdmchk(dir, true));
    EXPECT_EQ(with.fdb_entries, routed_entries(d.routes));
    EXPECT_TRUE(with.no_loops) << dir << "/ibdmchk.out";
    EXPECT_FALSE(with.loops) << dir << "/ibdmchk.out";
    EXPECT_FALSE(with.traversal_errors) << dir << "/ibdmchk.out";
    const Verdict one_vl = read_verdict(run_ibdmchk(dir, false));
    EXPECT_TRUE(one_vl.loops) << "layered routes are cyclic on one VL: " << dir << "/ibdmchk.out";
    if (!HasFailure()) std::filesystem::remove_all(dir);
  }
}

// Layers per source (branch layers): the path-SL file gives each source's
// SL, and ibdmchk finds no credit loop; the same routes with every
// source on its destination's layer are cyclic, to our verifier and to
// ibdmchk alike.
TEST(Ibdmchk, LayersPerSourceAreLoopFreeWithThePathSlFile) {
  if (!have_ibdmchk()) GTEST_SKIP() << "ibdmchk (ibutils) is not installed";
  routing::EngineOptions opts;
  opts.max_vls = 4;
  opts.branch_layers = true;
  Direct d;
  route_directly("random:switches=40,degree=4,hosts=1,seed=1", "layered", d, opts);
  if (HasFatalFailure()) return;
  ASSERT_FALSE(d.routes.path_layers.empty());
  routing::WorkerPool pool(1);
  auto ours = routing::verify(d.topo, d.lids, d.routes, pool, {});
  ASSERT_TRUE(ours.ok()) << ours.error().message;
  const std::string dir = scratch_dir("branch_layers");
  ASSERT_TRUE(write_dump_files(dir, d.topo, d.lids, d.routes).ok());
  const Verdict with = read_verdict(run_ibdmchk(dir, true));
  EXPECT_TRUE(with.no_loops) << dir << "/ibdmchk.out";
  EXPECT_FALSE(with.loops) << dir << "/ibdmchk.out";
  EXPECT_FALSE(with.traversal_errors) << dir << "/ibdmchk.out";

  routing::Routes per_lid = d.routes;
  per_lid.path_layers.clear();
  auto cyclic = routing::verify(d.topo, d.lids, per_lid, pool, {});
  ASSERT_FALSE(cyclic.ok()) << "the routes need their layers per source";
  EXPECT_EQ(cyclic.error().code, Errc::kCdgCycle);
  const std::string dir2 = scratch_dir("branch_layers_per_lid");
  ASSERT_TRUE(write_dump_files(dir2, d.topo, d.lids, per_lid).ok());
  const Verdict without = read_verdict(run_ibdmchk(dir2, true));
  EXPECT_TRUE(without.loops) << dir2 << "/ibdmchk.out";
  if (!HasFailure()) {
    std::filesystem::remove_all(dir);
    std::filesystem::remove_all(dir2);
  }
}

// Dimension order on per-hop VLs (a torus whose layers exceed the VLs):
// with the path-SL file and the switches' SL2VL file, ibdmchk follows
// each hop's VL and finds no credit loop; with an SL2VL file that keeps
// every data SL on VL 1 it finds one (so it reads the file).
TEST(Ibdmchk, PerHopVlsAreLoopFreeWithTheirSl2Vl) {
  if (!have_ibdmchk()) GTEST_SKIP() << "ibdmchk (ibutils) is not installed";
  Direct d;
  route_directly("torus:dims=6x6,hosts=1", "layered", d);
  if (HasFatalFailure()) return;
  auto g = routing::SwitchGraph::build(d.topo, d.lids);
  ASSERT_TRUE(g.ok());
  auto shape = routing::grid_shape(d.topo, *g);
  ASSERT_TRUE(shape.ok()) << shape.error().message;
  auto dateline = routing::dor_dateline_routes(*g, *shape, {});
  ASSERT_TRUE(dateline.ok()) << dateline.error().message;
  d.routes = std::move(dateline).value();
  ASSERT_TRUE(d.routes.per_hop_vls());
  routing::WorkerPool pool(1);
  auto ours = routing::verify(d.topo, d.lids, d.routes, pool, {});
  ASSERT_TRUE(ours.ok()) << ours.error().message;
  const std::string dir = scratch_dir("per_hop_vls");
  ASSERT_TRUE(write_dump_files(dir, d.topo, d.lids, d.routes).ok());
  ASSERT_TRUE(std::filesystem::exists(dir + "/opensm-sl2vl.dump"));
  const std::string out = run_ibdmchk(dir, true, true);
  const Verdict with = read_verdict(out);
  EXPECT_EQ(with.fdb_entries, routed_entries(d.routes));
  EXPECT_NE(out.find("-I- Defined 16 VLs in use"), std::string::npos)
      << "VL 15 drops the SLs no route uses: " << dir << "/ibdmchk.out";
  EXPECT_TRUE(with.no_loops) << dir << "/ibdmchk.out";
  EXPECT_FALSE(with.loops) << dir << "/ibdmchk.out";
  EXPECT_FALSE(with.traversal_errors) << dir << "/ibdmchk.out";

  routing::Routes one = d.routes;
  for (std::vector<std::uint8_t>& table : one.hop_vls) {
    for (std::uint8_t& vl : table) vl = vl == 2 ? 1 : vl;
  }
  std::ofstream(dir + "/opensm-sl2vl.dump") << format_sl2vl(d.topo, d.lids, one);
  const Verdict on_one = read_verdict(run_ibdmchk(dir, true, true));
  EXPECT_TRUE(on_one.loops) << "every data SL on VL 1: " << dir << "/ibdmchk.out";
  if (!HasFailure()) std::filesystem::remove_all(dir);
}

// The path-SL file grows as CA ports x CA LIDs: past its bound it is not
// written (nor one left from before), the error says why, and the other
// files are written all the same.
TEST(DumpFiles, APathSlFileOverItsBoundIsLeftOutAndSaysWhy) {
  Direct d;
  route_directly("random:switches=16,degree=4,hosts=2,seed=7", "layered", d);
  if (HasFatalFailure()) return;
  ASSERT_GT(d.routes.num_vls, 1);
  const std::string dir = scratch_dir("path_sl_bound");
  ASSERT_TRUE(write_dump_files(dir, d.topo, d.lids, d.routes, kNoNode, nullptr, 32 * 32).ok());
  ASSERT_TRUE(std::filesystem::exists(dir + "/opensm-path-sl.dump"));  // 32 x 32 lines
  std::filesystem::remove(dir + "/opensm.fdbs");
  const Result<void> over =
      write_dump_files(dir, d.topo, d.lids, d.routes, kNoNode, nullptr, 32 * 32 - 1);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().code, Errc::kOutOfRange);
  EXPECT_EQ(over.error().message,
            "opensm-path-sl.dump not written: 32 CA/router ports x 32 LIDs is 1024 lines, over "
            "the 1023 it is written for (ibdmchk -c is a small fabric's check; subnetd's "
            "verifier checks every VL); the other files are written");
  EXPECT_FALSE(std::filesystem::exists(dir + "/opensm-path-sl.dump"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/opensm.fdbs"));
  if (!HasFailure()) std::filesystem::remove_all(dir);
}

// One removed LFT entry in updn's tables: ibdmchk's traversal check catches
// it (so a clean traversal above means something).
TEST(Ibdmchk, ARemovedEntryIsATraversalError) {
  if (!have_ibdmchk()) GTEST_SKIP() << "ibdmchk (ibutils) is not installed";
  Direct d;
  route_directly("fat-tree:levels=2,radix=4", "updn", d);
  if (HasFatalFailure()) return;
  // The last CA's LID at a leaf it is not attached to.
  const Lid victim = d.lids.max_lid;
  const PortRef owner = d.lids.owner_of(victim);
  ASSERT_EQ(d.topo.node(owner.node).type, routing::NodeType::kCa);
  const NodeId home = d.topo.port(owner).remote_node;
  const SwitchIndex other{d.topo.node(home).switch_index == SwitchIndex{0} ? 1U : 0U};
  d.routes.lfts[other.value].set(victim, routing::kDropPort);
  const std::string dir = scratch_dir("removed_entry");
  ASSERT_TRUE(write_dump_files(dir, d.topo, d.lids, d.routes).ok());
  const std::string out = run_ibdmchk(dir);
  const Verdict v = read_verdict(out);
  EXPECT_TRUE(v.traversal_errors) << dir << "/ibdmchk.out";
  EXPECT_NE(out.find(fmt::format("lid:{}", victim.value)), std::string::npos) << out;
  if (!HasFailure()) std::filesystem::remove_all(dir);
}

// Our verifier and ibdmchk must reach the same verdict on the same tables:
// minhop and updn on every family, routed directly (nothing bypasses either
// checker). A disagreement is a bug in one of them (or in the dump files).
class SameVerdict : public testing::TestWithParam<std::string> {};

TEST_P(SameVerdict, OurVerifierAgreesWithIbdmchk) {
  if (!have_ibdmchk()) GTEST_SKIP() << "ibdmchk (ibutils) is not installed";
  for (const char* engine : {"minhop", "updn"}) {
    SCOPED_TRACE(engine);
    Direct d;
    route_directly(GetParam(), engine, d);
    if (HasFatalFailure()) return;
    routing::WorkerPool pool(1);
    auto ours = routing::verify(d.topo, d.lids, d.routes, pool, {});
    ASSERT_TRUE(ours.ok() || ours.error().code == Errc::kCdgCycle) << ours.error().message;
    const std::string dir = scratch_dir(fmt::format("{}_{}", engine, GetParam()));
    ASSERT_TRUE(write_dump_files(dir, d.topo, d.lids, d.routes).ok());
    const Verdict v = read_verdict(run_ibdmchk(dir));
    ASSERT_NE(v.loops, v.no_loops) << "no verdict from ibdmchk: " << dir << "/ibdmchk.out";
    EXPECT_EQ(v.fdb_entries, routed_entries(d.routes));
    EXPECT_FALSE(v.traversal_errors) << dir << "/ibdmchk.out";
    EXPECT_EQ(ours.ok(), v.no_loops)
        << "ours: " << (ours.ok() ? "deadlock-free" : ours.error().message)
        << "; ibdmchk: " << (v.no_loops ? "no credit loops" : "credit loops") << " (" << dir
        << "/ibdmchk.out)";
    if (std::string_view(engine) == "updn") {
      EXPECT_TRUE(ours.ok()) << ours.error().message;
    }
    if (!HasFailure()) std::filesystem::remove_all(dir);
  }
}

INSTANTIATE_TEST_SUITE_P(Families, SameVerdict, testing::ValuesIn(bringup_testing::family_specs()),
                         [](const auto& i) { return bringup_testing::param_name(i.param); });

}  // namespace
}  // namespace subnetd::daemon
