#include "api/metrics.hpp"

#include <fmt/format.h>
#include <prometheus/exposer.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <exception>
#include <sstream>
#include <utility>

namespace subnetd::api {

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;

// Heavy-sweep phases, as FabricState::last_bringup names them.
constexpr const char* kPhases[] = {"sweep", "lids", "route", "verify", "program", "total"};

double seconds(std::chrono::nanoseconds d) {
  return std::chrono::duration<double>(d).count();
}

class Families {
 public:
  explicit Families(std::vector<MetricFamily>& out) : out_(out) {}

  MetricFamily& family(std::string name, std::string help, MetricType type) {
    out_.push_back(MetricFamily{std::move(name), std::move(help), type, {}});
    return out_.back();
  }
  void gauge(const char* name, const char* help, double v) {
    add(family(name, help, MetricType::Gauge), {}, v);
  }
  void counter(const char* name, const char* help, double v) {
    add(family(name, help, MetricType::Counter), {}, v);
  }
  static void add(MetricFamily& f, std::vector<ClientMetric::Label> labels, double v) {
    ClientMetric m;
    m.label = std::move(labels);
    if (f.type == MetricType::Counter) {
      m.counter.value = v;
    } else {
      m.gauge.value = v;
    }
    f.metric.push_back(std::move(m));
  }

 private:
  std::vector<MetricFamily>& out_;
};

void fabric_families(Families& f, const state::FabricState& s, const std::string& version) {
  Families::add(f.family("subnetd_build_info", "subnetd's version and transport (value 1)",
                         MetricType::Gauge),
                {{"version", version}, {"transport", s.transport}, {"engine", s.engine}}, 1);
  MetricFamily& st = f.family("subnetd_sm_state", "1 for the state the SM is in, 0 for the others",
                              MetricType::Gauge);
  for (state::SmState x :
       {state::SmState::kStarting, state::SmState::kDiscovering, state::SmState::kMaster,
        state::SmState::kFailed, state::SmState::kStandby, state::SmState::kNotActive}) {
    Families::add(st, {{"state", state::sm_state_name(x)}}, x == s.state ? 1 : 0);
  }
  f.gauge("subnetd_generation", "published snapshot generation", static_cast<double>(s.generation));
  f.counter("subnetd_sweeps_total", "heavy sweeps finished since the daemon started",
            static_cast<double>(s.sweeps));
  f.counter("subnetd_reroutes_total", "incremental repairs since the daemon started",
            static_cast<double>(s.reroutes));
  f.gauge("subnetd_verification_ok", "1 when the last verification of the programmed tables passed",
          s.verification.ok ? 1 : 0);
  if (s.last_sweep_at.time_since_epoch().count() != 0) {
    f.gauge("subnetd_last_sweep_timestamp_seconds", "when the last heavy sweep finished",
            std::chrono::duration<double>(s.last_sweep_at.time_since_epoch()).count());
  }

  double switches = 0, cas = 0, routers = 0, ports = 0, active = 0, not_active = 0;
  if (s.topology) {
    const routing::Topology& t = *s.topology;
    for (std::size_t i = 0; i < t.num_nodes(); ++i) {
      const NodeId n{static_cast<std::uint32_t>(i)};
      const routing::Node& node = t.node(n);
      switch (node.type) {
        case routing::NodeType::kSwitch:
          ++switches;
          break;
        case routing::NodeType::kCa:
          ++cas;
          break;
        case routing::NodeType::kRouter:
          ++routers;
          break;
      }
      ports += node.num_ports;
      for (PortNum p = 1; p <= node.num_ports; ++p) {
        const routing::Port& a = t.port(n, p);
        if (!a.connected()) continue;
        // Each cable once: from its end with the smaller (node, port).
        if (std::pair(a.remote_node.value, a.remote_port) < std::pair(n.value, p)) continue;
        const routing::Port& b = t.port(a.remote_node, a.remote_port);
        const bool up =
            a.state == routing::PortState::kActive && b.state == routing::PortState::kActive;
        (up ? active : not_active) += 1;
      }
    }
  }
  MetricFamily& nodes =
      f.family("subnetd_nodes", "nodes of the last heavy sweep, by type", MetricType::Gauge);
  Families::add(nodes, {{"type", "switch"}}, switches);
  Families::add(nodes, {{"type", "ca"}}, cas);
  Families::add(nodes, {{"type", "router"}}, routers);
  f.gauge("subnetd_ports", "physical ports on all nodes", ports);
  MetricFamily& links =
      f.family("subnetd_links", "cables with both ends discovered, by whether both ends are ACTIVE",
               MetricType::Gauge);
  Families::add(links, {{"state", "active"}}, active);
  Families::add(links, {{"state", "not_active"}}, not_active);
  double lids = 0;
  if (s.lids) {
    for (const PortRef& owner : s.lids->owner) lids += owner.node.valid() ? 1 : 0;
  }
  f.gauge("subnetd_lids", "LIDs in use (CA and router ports x 2^LMC, and switches)", lids);
}

void mad_families(Families& f, const state::MadCounters& c) {
  f.counter("subnetd_mads_sent_total", "MADs the SM sent (requests, retries, replies)",
            static_cast<double>(c.sent));
  f.counter("subnetd_mad_retries_total", "requests sent again after a timeout",
            static_cast<double>(c.retries));
  f.counter("subnetd_mad_responses_total", "answers to the SM's requests",
            static_cast<double>(c.responses));
  f.counter("subnetd_mad_error_status_total", "answers with a non-zero MAD status",
            static_cast<double>(c.error_status));
  f.counter("subnetd_mad_timeouts_total", "requests unanswered after every retry",
            static_cast<double>(c.timeouts));
  f.counter("subnetd_mads_received_total", "MADs the SM received", static_cast<double>(c.received));
  f.counter("subnetd_mads_malformed_total", "received MADs that did not decode",
            static_cast<double>(c.malformed));
  f.counter("subnetd_mads_unsolicited_total", "traps and requests addressed to the SM",
            static_cast<double>(c.unsolicited));
}

void sa_families(Families& f, const state::SaStats& s) {
  f.counter("subnetd_sa_requests_total", "well-formed SA requests answered",
            static_cast<double>(s.requests));
  f.counter("subnetd_sa_errors_total", "SA requests answered with an error status",
            static_cast<double>(s.errors));
  f.counter("subnetd_sa_records_total", "SA records sent", static_cast<double>(s.records));
  f.counter("subnetd_sa_malformed_total", "MADs to the SA that were not valid SA MADs",
            static_cast<double>(s.malformed));
  f.gauge("subnetd_sa_subscriptions", "InformInfo subscriptions held",
          static_cast<double>(s.subscriptions));
  f.counter("subnetd_sa_reports_total", "Reports sent to subscribers",
            static_cast<double>(s.reports));
  f.counter("subnetd_sa_report_acks_total", "ReportResps received",
            static_cast<double>(s.report_acks));
}

void counter_families(Families& f, const state::PortCounterSnapshot& s, std::size_t top_n) {
  f.counter("subnetd_counter_sweeps_total", "performance manager counter sweeps",
            static_cast<double>(s.sweep));
  f.gauge("subnetd_counter_ports_read", "ports whose counters the last counter sweep read",
          s.ports_read);
  f.gauge("subnetd_counter_ports_unanswered", "ports that did not answer the last counter sweep",
          s.ports_failed);
  state::CounterSet all;
  std::vector<const state::PortCounterEntry*> erring;
  for (const state::PortCounterEntry& e : s.ports) {
    all += e.total;
    if (e.total.errors() != 0) erring.push_back(&e);
  }
  f.counter("subnetd_fabric_port_errors_total",
            "error counters of every port together, since first read",
            static_cast<double>(all.errors()));
  f.counter("subnetd_fabric_xmit_bytes_total", "bytes sent by every port, since first read",
            static_cast<double>(all.xmit_bytes));
  f.counter("subnetd_fabric_xmit_wait_total", "PortXmitWait of every port (congestion)",
            static_cast<double>(all.xmit_wait));
  f.gauge("subnetd_ports_with_errors", "ports with any errors since first read",
          static_cast<double>(erring.size()));
  const std::size_t n = std::min(top_n, erring.size());
  std::partial_sort(
      erring.begin(), erring.begin() + static_cast<std::ptrdiff_t>(n), erring.end(),
      [](const auto* a, const auto* b) { return a->total.errors() > b->total.errors(); });
  MetricFamily& top = f.family("subnetd_port_errors_total",
                               "error counters of the ports with the most errors (top N only)",
                               MetricType::Counter);
  for (std::size_t i = 0; i < n; ++i) {
    const state::PortCounterEntry& e = *erring[i];
    Families::add(top,
                  {{"node_guid", fmt::format("{:#018x}", e.node_guid.value)},
                   {"port", std::to_string(e.port)}},
                  static_cast<double>(e.total.errors()));
  }
}

void health_families(Families& f, const state::HealthSnapshot& s) {
  double isolated = 0;
  double refused = 0;
  for (const state::UnhealthyPort& u : s.ports) {
    (u.status == state::HealthStatus::kIsolated ? isolated : refused) += 1;
  }
  MetricFamily& held = f.family("subnetd_unhealthy_links",
                                "links the fault policy holds against, by status: isolated (port "
                                "disabled) or refused (left in service: it would disconnect)",
                                MetricType::Gauge);
  Families::add(held, {{"status", "isolated"}}, isolated);
  Families::add(held, {{"status", "refused"}}, refused);
  f.counter("subnetd_health_isolations_total", "links the fault policy isolated",
            static_cast<double>(s.isolated_total));
  f.counter("subnetd_health_restores_total", "isolated links returned to service",
            static_cast<double>(s.restored_total));
  f.counter("subnetd_health_refusals_total",
            "isolations refused because they would disconnect endpoints",
            static_cast<double>(s.refused_total));
}

}  // namespace

Metrics::Metrics(MetricsSources sources) : src_(std::move(sources)) {
  // Bring-up phases: 1 ms .. 10 min (k=80 routes in seconds; a sweep over
  // umad of a large fabric takes minutes).
  const prometheus::Histogram::BucketBoundaries phase_buckets = {
      0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
      1,     2.5,    5,     10,   30,    60,   120, 300,  600};
  phase_family_ =
      &prometheus::BuildHistogram()
           .Name("subnetd_bringup_phase_duration_seconds")
           .Help(
               "each heavy sweep's phases: sweep (discovery), lids, route, verify, program, total")
           .Register(registry_);
  for (const char* p : kPhases)
    phases_.push_back(&phase_family_->Add({{"phase", p}}, phase_buckets));
  // Incremental repairs: 50 us .. 1 s.
  reroute_ =
      &prometheus::BuildHistogram()
           .Name("subnetd_reroute_duration_seconds")
           .Help("each incremental repair, from the trap to the repaired tables in the switches")
           .Register(registry_)
           .Add({}, prometheus::Histogram::BucketBoundaries{50e-6, 100e-6, 250e-6, 500e-6, 1e-3,
                                                            2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3,
                                                            100e-3, 250e-3, 1});
}

Metrics::~Metrics() = default;

void Metrics::observe(const state::FabricState& s) {
  if (!baseline_) {
    baseline_ = true;
    seen_sweeps_ = s.sweeps;
    seen_reroutes_ = s.reroutes;
    if (s.sweeps == 0 && s.reroutes == 0) return;
    // Started after some work was done (a test, or a late attach): count
    // what the snapshot shows of its last sweep and repair once.
    seen_sweeps_ = s.sweeps - (s.sweeps > 0 ? 1 : 0);
    seen_reroutes_ = s.reroutes - (s.reroutes > 0 ? 1 : 0);
  }
  if (s.sweeps > seen_sweeps_) {
    seen_sweeps_ = s.sweeps;
    const state::PhaseTimings& t = s.last_bringup;
    const std::chrono::nanoseconds d[] = {t.sweep, t.lids, t.route, t.verify, t.program, t.total};
    for (std::size_t i = 0; i < phases_.size(); ++i) phases_[i]->Observe(seconds(d[i]));
  }
  if (s.reroutes > seen_reroutes_) {
    seen_reroutes_ = s.reroutes;
    reroute_->Observe(seconds(s.last_reroute));
  }
}

std::vector<prometheus::MetricFamily> Metrics::Collect() const {
  std::vector<MetricFamily> out;
  Families f(out);
  fabric_families(f, *src_.publisher->current(), src_.version);
  if (src_.sm != nullptr) mad_families(f, src_.sm->mad_counters());
  if (src_.sa != nullptr) sa_families(f, src_.sa->sa_stats());
  if (src_.counters != nullptr) {
    const auto snap = src_.counters->current();
    if (snap->sweep != 0) counter_families(f, *snap, src_.top_ports);
  }
  if (src_.health != nullptr) health_families(f, *src_.health->current());
  std::vector<MetricFamily> hist = registry_.Collect();
  out.insert(out.end(), std::make_move_iterator(hist.begin()), std::make_move_iterator(hist.end()));
  return out;
}

std::string Metrics::scrape() const {
  std::ostringstream os;
  prometheus::TextSerializer().Serialize(os, Collect());
  return os.str();
}

Result<std::unique_ptr<MetricsServer>> MetricsServer::start(const std::string& listen,
                                                            std::shared_ptr<Metrics> metrics) {
  std::unique_ptr<MetricsServer> server(new MetricsServer);
  server->metrics_ = std::move(metrics);
  try {
    // One thread: a scrape every few seconds needs no more.
    server->exposer_ = std::make_unique<prometheus::Exposer>(listen, 1);
  } catch (const std::exception& e) {
    return Error{Errc::kIo,
                 fmt::format("metrics.listen \"{}\": cannot listen: {}", listen, e.what())};
  }
  server->exposer_->RegisterCollectable(server->metrics_);
  const std::vector<int> ports = server->exposer_->GetListeningPorts();
  server->port_ = ports.empty() ? 0 : ports.front();
  return server;
}

MetricsServer::~MetricsServer() = default;

}  // namespace subnetd::api
