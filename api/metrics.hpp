#pragma once
// Metrics: what Prometheus scrapes from subnetd's /metrics endpoint, in its
// text format, built on prometheus-cpp (Debian's prometheus-cpp-dev).
//
// Two kinds of metric:
//  - read at scrape time from what is already published: the FabricState
//    snapshot (SM state, nodes, ports, links, LIDs, sweeps, verification),
//    the MAD engine's counters (SmControl::mad_counters) and the SA's
//    (SaInfo::sa_stats). A scrape never reaches the SM strand.
//  - histograms of durations, fed by observe() after every publish (on the
//    SM strand): each heavy sweep's phases and each incremental repair.
// Per-port labels are bounded: at 100k endpoints every port would be
// millions of series, so only the top_ports ports with the most errors get
// one (node GUID, port); the rest is in fabric-wide sums.
//
// MetricsServer is the HTTP listener (prometheus-cpp's civetweb exposer, its
// own threads). Off unless `metrics.listen` is set in the YAML.
//
// Owner: the daemon's main. Threads: observe() from the SM strand; Collect()
// and scrape() from any thread (histograms lock inside prometheus-cpp; the
// rest reads atomics and snapshots).

#include <prometheus/collectable.h>
#include <prometheus/family.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "routing/result.hpp"
#include "state/control.hpp"
#include "state/fabric_state.hpp"
#include "state/port_counters.hpp"
#include "state/port_health.hpp"
#include "state/sa_info.hpp"

namespace prometheus {
class Exposer;
}

namespace subnetd::api {

struct MetricsSources {
  const state::StatePublisher* publisher = nullptr;  // required
  const state::SmControl* sm = nullptr;              // MAD counters; may be null
  const state::SaInfo* sa = nullptr;                 // SA counters; may be null
  std::string version;
  const state::CounterBoard* counters = nullptr;  // port counters; may be null
  const state::HealthBoard* health = nullptr;     // the fault policy; may be null
  // Per-port error series: the ports with the most errors since start, at
  // most this many (bounded label cardinality).
  std::size_t top_ports = 10;
};

class Metrics final : public prometheus::Collectable {
 public:
  explicit Metrics(MetricsSources sources);
  ~Metrics() override;

  // After every publish, on the SM strand: a snapshot with more sweeps than
  // the last one seen adds its phase durations, more reroutes its repair
  // time. The first snapshot seen sets the baseline.
  void observe(const state::FabricState& s);

  std::vector<prometheus::MetricFamily> Collect() const override;
  // The whole exposition, as a scrape returns it.
  std::string scrape() const;

 private:
  MetricsSources src_;
  prometheus::Registry registry_;
  prometheus::Family<prometheus::Histogram>* phase_family_;
  std::vector<prometheus::Histogram*> phases_;  // sweep, lids, route, verify, program, total
  prometheus::Histogram* reroute_;
  std::uint64_t seen_sweeps_ = 0;
  std::uint64_t seen_reroutes_ = 0;
  bool baseline_ = false;
};

class MetricsServer {
 public:
  // Listens on `listen` ("host:port", "[v6]:port"; port 0 picks a free one)
  // and serves `metrics` at /metrics. An address that cannot be bound is an
  // error naming it.
  static Result<std::unique_ptr<MetricsServer>> start(const std::string& listen,
                                                      std::shared_ptr<Metrics> metrics);
  ~MetricsServer();
  // The port it listens on (the one picked, for port 0).
  int port() const { return port_; }

 private:
  MetricsServer() = default;
  std::shared_ptr<Metrics> metrics_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
};

}  // namespace subnetd::api
