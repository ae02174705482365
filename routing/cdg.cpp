#include "routing/cdg.hpp"

#include <algorithm>
#include <bit>

namespace subnetd::routing {

Result<std::vector<std::uint32_t>> find_cdg_cycle(const SwitchGraph& g,
                                                  std::span<const std::uint64_t> deps,
                                                  std::stop_token stop) {
  const std::uint32_t arcs = g.num_arcs();
  if (deps.size() < std::size_t{arcs} * kCdgDepWords) {
    return Error{Errc::kInvalidArgument, "dependency table smaller than the channel count"};
  }
  struct Frame {
    std::uint32_t ch;
    std::uint32_t word;
    std::uint64_t rest;
  };
  std::vector<std::uint8_t> color(arcs, 0);  // 0 unvisited, 1 on the DFS stack, 2 done
  std::vector<Frame> stack;
  std::uint64_t steps = 0;
  for (std::uint32_t start = 0; start < arcs; ++start) {
    if (color[start] != 0) continue;
    color[start] = 1;
    stack.push_back({start, 0, deps[std::size_t{start} * kCdgDepWords]});
    while (!stack.empty()) {
      if ((++steps & 0xFFFF) == 0 && stop.stop_requested()) {
        return Error{Errc::kCancelled, "cycle search cancelled"};
      }
      Frame& f = stack.back();
      while (f.rest == 0 && f.word + 1 < kCdgDepWords) {
        ++f.word;
        f.rest = deps[std::size_t{f.ch} * kCdgDepWords + f.word];
      }
      if (f.rest == 0) {
        color[f.ch] = 2;
        stack.pop_back();
        continue;
      }
      const auto p =
          static_cast<PortNum>(f.word * 64 + static_cast<unsigned>(std::countr_zero(f.rest)));
      f.rest &= f.rest - 1;
      const std::uint32_t b = g.arc_at_port(g.arc(f.ch).to, p);
      if (b == kNoArc) continue;  // delivery to a CA: not a channel
      if (color[b] == 1) {
        std::vector<std::uint32_t> cycle;
        auto it =
            std::find_if(stack.begin(), stack.end(), [b](const Frame& x) { return x.ch == b; });
        for (; it != stack.end(); ++it) cycle.push_back(it->ch);
        return cycle;
      }
      if (color[b] == 0) {
        color[b] = 1;
        stack.push_back({b, 0, deps[std::size_t{b} * kCdgDepWords]});
      }
    }
  }
  return std::vector<std::uint32_t>{};
}

}  // namespace subnetd::routing
