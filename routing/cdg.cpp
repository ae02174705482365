#include "routing/cdg.hpp"

#include <algorithm>
#include <bit>

namespace subnetd::routing {

Result<std::vector<std::uint32_t>> find_cdg_cycle(const SwitchGraph& g,
                                                  std::span<const std::uint64_t> deps,
                                                  std::stop_token stop) {
  return find_cdg_cycle_across(g, deps, 1, stop);
}

Result<std::vector<std::uint32_t>> find_cdg_cycle_across(const SwitchGraph& g,
                                                         std::span<const std::uint64_t> deps,
                                                         std::uint32_t vls, std::stop_token stop) {
  const std::uint32_t arcs = g.num_arcs();
  const std::size_t block = std::size_t{arcs} * kCdgDepWords;
  if (vls == 0 || deps.size() < block * vls * vls) {
    return Error{Errc::kInvalidArgument, "dependency table smaller than the channel count"};
  }
  const std::uint32_t nodes = arcs * vls;  // channel (VL v, arc a): v * arcs + a
  // The words of node x's dependencies onto VL w.
  auto words = [&](std::uint32_t x, std::uint32_t w) {
    return &deps[(std::size_t{x / arcs} * vls + w) * block + std::size_t{x % arcs} * kCdgDepWords];
  };
  struct Frame {
    std::uint32_t ch;
    std::uint32_t vl;    // the VL of the dependencies being read
    std::uint32_t word;  // and the word
    std::uint64_t rest;
  };
  std::vector<std::uint8_t> color(nodes, 0);  // 0 unvisited, 1 on the DFS stack, 2 done
  std::vector<Frame> stack;
  std::uint64_t steps = 0;
  for (std::uint32_t start = 0; start < nodes; ++start) {
    if (color[start] != 0) continue;
    color[start] = 1;
    stack.push_back({start, 0, 0, words(start, 0)[0]});
    while (!stack.empty()) {
      if ((++steps & 0xFFFF) == 0 && stop.stop_requested()) {
        return Error{Errc::kCancelled, "cycle search cancelled"};
      }
      Frame& f = stack.back();
      while (f.rest == 0 && (f.word + 1 < kCdgDepWords || f.vl + 1 < vls)) {
        if (++f.word == kCdgDepWords) {
          f.word = 0;
          ++f.vl;
        }
        f.rest = words(f.ch, f.vl)[f.word];
      }
      if (f.rest == 0) {
        color[f.ch] = 2;
        stack.pop_back();
        continue;
      }
      const auto p =
          static_cast<PortNum>(f.word * 64 + static_cast<unsigned>(std::countr_zero(f.rest)));
      f.rest &= f.rest - 1;
      const std::uint32_t b = g.arc_at_port(g.arc(f.ch % arcs).to, p);
      if (b == kNoArc) continue;  // delivery to a CA: not a channel
      const std::uint32_t next = f.vl * arcs + b;
      if (color[next] == 1) {
        std::vector<std::uint32_t> cycle;
        auto it = std::find_if(stack.begin(), stack.end(),
                               [next](const Frame& x) { return x.ch == next; });
        for (; it != stack.end(); ++it) cycle.push_back(it->ch);
        return cycle;
      }
      if (color[next] == 0) {
        color[next] = 1;
        stack.push_back({next, 0, 0, words(next, 0)[0]});
      }
    }
  }
  return std::vector<std::uint32_t>{};
}

}  // namespace subnetd::routing
