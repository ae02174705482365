#include "discovery/topo/random_graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace subnetd::discovery::topo {

std::uint64_t SeededRng::below(std::uint64_t bound) {
  // Reject the lowest (2^64 mod bound) outputs: what is left is a whole number
  // of copies of [0, bound), so the residue is exactly uniform.
  const std::uint64_t threshold = (0 - bound) % bound;
  for (;;) {
    const std::uint64_t x = engine_();
    if (x >= threshold) return x % bound;
  }
}

namespace {

constexpr std::uint32_t kNotOpen = UINT32_MAX;

// Adjacency lists plus the set of switches that still have free ports.
class Jellyfish {
 public:
  Jellyfish(std::uint32_t n, std::uint32_t degree, std::uint64_t seed)
      : rng_(seed), adj_(n), free_(n, degree), open_(n), open_pos_(n) {
    for (auto& a : adj_) a.reserve(degree);
    std::iota(open_.begin(), open_.end(), 0u);
    std::iota(open_pos_.begin(), open_pos_.end(), 0u);
  }

  void build() {
    for (;;) {
      if (join_random_pair()) continue;
      if (!splice_into_link()) break;
    }
  }

  Result<void> connect_components(std::uint32_t degree, std::uint64_t seed);

  SwitchGraph take() {
    SwitchGraph g;
    g.num_switches = static_cast<std::uint32_t>(adj_.size());
    for (std::uint32_t u = 0; u < adj_.size(); ++u) {
      std::sort(adj_[u].begin(), adj_[u].end());
      for (std::uint32_t v : adj_[u]) {
        if (u < v) g.edges.emplace_back(u, v);
      }
    }
    return g;
  }

 private:
  bool adjacent(std::uint32_t a, std::uint32_t b) const {
    const auto& l = adj_[a].size() <= adj_[b].size() ? adj_[a] : adj_[b];
    const std::uint32_t other = &l == &adj_[a] ? b : a;
    return std::find(l.begin(), l.end(), other) != l.end();
  }

  void use_port(std::uint32_t x) {
    if (--free_[x] != 0) return;
    const std::uint32_t at = open_pos_[x];
    const std::uint32_t last = open_.back();
    open_[at] = last;
    open_pos_[last] = at;
    open_.pop_back();
    open_pos_[x] = kNotOpen;
  }

  void add_edge(std::uint32_t a, std::uint32_t b) {
    adj_[a].push_back(b);
    adj_[b].push_back(a);
  }

  void remove_edge(std::uint32_t a, std::uint32_t b) {
    adj_[a].erase(std::find(adj_[a].begin(), adj_[a].end(), b));
    adj_[b].erase(std::find(adj_[b].begin(), adj_[b].end(), a));
  }

  // Links two open, non-adjacent switches: random tries first, then (when few
  // switches are left open) an exhaustive search so we never stop early.
  bool join_random_pair() {
    const std::size_t o = open_.size();
    if (o < 2) return false;
    for (std::size_t t = 0; t < 4 * o + 16; ++t) {
      const std::uint32_t a = open_[rng_.below(o)];
      const std::uint32_t b = open_[rng_.below(o)];
      if (a != b && !adjacent(a, b)) return link_open(a, b);
    }
    for (std::size_t i = 0; i < o; ++i) {
      for (std::size_t j = i + 1; j < o; ++j) {
        if (!adjacent(open_[i], open_[j])) return link_open(open_[i], open_[j]);
      }
    }
    return false;
  }

  bool link_open(std::uint32_t a, std::uint32_t b) {
    add_edge(a, b);
    use_port(a);
    use_port(b);
    return true;
  }

  // No open pair can be joined. A switch x with >= 2 free ports takes over a
  // random link (u,v) whose ends are not adjacent to x: (u,v) -> (x,u),(x,v).
  // Failing that, two open switches x,y (adjacent, or they would have been
  // joined) with one free port each share a link: (u,v) -> (x,u),(y,v). Either
  // way two more ports are used, so the construction terminates.
  bool splice_into_link() {
    std::vector<std::uint32_t> wide;
    for (std::uint32_t x : open_) {
      if (free_[x] >= 2) wide.push_back(x);
    }
    while (!wide.empty()) {
      const std::size_t wi = rng_.below(wide.size());
      if (splice(wide[wi], wide[wi])) return true;
      wide.erase(wide.begin() + static_cast<std::ptrdiff_t>(wi));
    }
    for (std::size_t i = 0; i < open_.size(); ++i) {
      for (std::size_t j = i + 1; j < open_.size(); ++j) {
        if (splice(open_[i], open_[j])) return true;
      }
    }
    return false;
  }

  // Replaces a link (u,v) by (x,u),(y,v); x == y is allowed.
  bool splice(std::uint32_t x, std::uint32_t y) {
    std::pair<std::uint32_t, std::uint32_t> e;
    if (!pick_link_for(x, y, &e)) return false;
    remove_edge(e.first, e.second);
    add_edge(x, e.first);
    add_edge(y, e.second);
    use_port(x);
    use_port(y);
    return true;
  }

  bool eligible(std::uint32_t x, std::uint32_t y, std::uint32_t u, std::uint32_t v) const {
    return u != x && u != y && v != x && v != y && !adjacent(x, u) && !adjacent(y, v);
  }

  // An oriented link (u,v) that x and y can split; random tries, then a scan.
  bool pick_link_for(std::uint32_t x, std::uint32_t y,
                     std::pair<std::uint32_t, std::uint32_t>* out) {
    const std::uint32_t n = static_cast<std::uint32_t>(adj_.size());
    for (std::uint32_t t = 0; t < 64; ++t) {
      const auto u = static_cast<std::uint32_t>(rng_.below(n));
      if (adj_[u].empty()) continue;
      const std::uint32_t v = adj_[u][rng_.below(adj_[u].size())];
      if (eligible(x, y, u, v)) {
        *out = {u, v};
        return true;
      }
    }
    for (std::uint32_t u = 0; u < n; ++u) {
      for (std::uint32_t v : adj_[u]) {
        if (eligible(x, y, u, v)) {
          *out = {u, v};
          return true;
        }
      }
    }
    return false;
  }

  // Component label per switch; returns the number of components.
  std::uint32_t label_components(std::vector<std::uint32_t>* label) const {
    const std::uint32_t n = static_cast<std::uint32_t>(adj_.size());
    label->assign(n, kNotOpen);
    std::vector<std::uint32_t> stack;
    std::uint32_t count = 0;
    for (std::uint32_t s = 0; s < n; ++s) {
      if ((*label)[s] != kNotOpen) continue;
      (*label)[s] = count;
      stack.push_back(s);
      while (!stack.empty()) {
        const std::uint32_t u = stack.back();
        stack.pop_back();
        for (std::uint32_t v : adj_[u]) {
          if ((*label)[v] == kNotOpen) {
            (*label)[v] = count;
            stack.push_back(v);
          }
        }
      }
      ++count;
    }
    return count;
  }

  SeededRng rng_;
  std::vector<std::vector<std::uint32_t>> adj_;
  std::vector<std::uint32_t> free_;      // unused switch-to-switch ports per switch
  std::vector<std::uint32_t> open_;      // switches with free_ > 0, in no particular order
  std::vector<std::uint32_t> open_pos_;  // index of a switch in open_, or kNotOpen
};

Result<void> Jellyfish::connect_components(std::uint32_t degree, std::uint64_t seed) {
  const std::uint32_t n = static_cast<std::uint32_t>(adj_.size());
  std::vector<std::uint32_t> label;
  // Each round merges two components unless both chosen links were bridges;
  // the bound only stops a pathological input from looping forever.
  for (std::uint32_t round = 0; round < 8 * n + 64; ++round) {
    const std::uint32_t count = label_components(&label);
    if (count == 1) return {};
    std::vector<std::uint32_t> size(count, 0);
    for (std::uint32_t l : label) ++size[l];
    const auto big =
        static_cast<std::uint32_t>(std::max_element(size.begin(), size.end()) - size.begin());
    const std::uint32_t other = big == 0 ? 1 : 0;
    std::vector<std::uint32_t> in_a, in_b, lone_b;  // switches with links / isolated with room
    for (std::uint32_t s = 0; s < n; ++s) {
      if (label[s] == big && !adj_[s].empty()) in_a.push_back(s);
      if (label[s] == other) {
        if (!adj_[s].empty()) {
          in_b.push_back(s);
        } else if (free_[s] >= 2) {
          lone_b.push_back(s);
        }
      }
    }
    if (in_a.empty()) break;
    const std::uint32_t u = in_a[rng_.below(in_a.size())];
    const std::uint32_t v = adj_[u][rng_.below(adj_[u].size())];
    if (!in_b.empty()) {
      const std::uint32_t x = in_b[rng_.below(in_b.size())];
      const std::uint32_t y = adj_[x][rng_.below(adj_[x].size())];
      remove_edge(u, v);
      remove_edge(x, y);
      add_edge(u, x);
      add_edge(v, y);
    } else if (!lone_b.empty()) {
      const std::uint32_t x = lone_b.front();
      remove_edge(u, v);
      add_edge(x, u);
      add_edge(x, v);
      use_port(x);
      use_port(x);
    } else {
      break;
    }
  }
  return Error{
      Errc::kInternal,
      fmt::format("random: could not connect switches={} degree={} seed={}", n, degree, seed)};
}

}  // namespace

Result<SwitchGraph> jellyfish_graph(std::uint32_t n, std::uint32_t degree, std::uint64_t seed) {
  if (n < 2 || degree < 1 || degree >= n) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("random: degree must be between 1 and switches-1, got "
                             "switches={} degree={}",
                             n, degree)};
  }
  if (n > 2 && degree < 2) {
    return Error{Errc::kInvalidArgument,
                 fmt::format("random: degree must be at least 2 to connect {} switches, got 1", n)};
  }
  Jellyfish j(n, degree, seed);
  j.build();
  SUBNETD_TRY(j.connect_components(degree, seed));
  return j.take();
}

}  // namespace subnetd::discovery::topo
