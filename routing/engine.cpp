#include "routing/engine.hpp"

#include <fmt/format.h>

#include <array>

#include "routing/engines/auto_engine.hpp"
#include "routing/engines/ftree.hpp"
#include "routing/engines/layered.hpp"
#include "routing/engines/minhop.hpp"
#include "routing/engines/updn.hpp"

namespace subnetd::routing {

namespace {
constexpr std::array<std::string_view, 5> kEngineNames = {"minhop", "updn", "auto", "ftree",
                                                          "layered"};
}  // namespace

std::span<const std::string_view> engine_names() {
  return kEngineNames;
}

Result<std::unique_ptr<RoutingEngine>> make_engine(std::string_view name) {
  if (name == "minhop") return std::unique_ptr<RoutingEngine>(std::make_unique<MinhopEngine>());
  if (name == "updn") return std::unique_ptr<RoutingEngine>(std::make_unique<UpdnEngine>());
  if (name == "auto") return std::unique_ptr<RoutingEngine>(std::make_unique<AutoEngine>());
  if (name == "ftree") return std::unique_ptr<RoutingEngine>(std::make_unique<FtreeEngine>());
  if (name == "layered") {
    return std::unique_ptr<RoutingEngine>(std::make_unique<LayeredEngine>());
  }
  return Error{Errc::kInvalidArgument, fmt::format("unknown routing engine \"{}\" (known: {})",
                                                   name, fmt::join(kEngineNames, ", "))};
}

}  // namespace subnetd::routing
