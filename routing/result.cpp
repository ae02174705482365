#include "routing/result.hpp"

namespace subnetd {

const char* errc_name(Errc e) {
  switch (e) {
    case Errc::kInvalidArgument:
      return "invalid_argument";
    case Errc::kParse:
      return "parse";
    case Errc::kMalformedMad:
      return "malformed_mad";
    case Errc::kOutOfRange:
      return "out_of_range";
    case Errc::kNotFound:
      return "not_found";
    case Errc::kConflict:
      return "conflict";
    case Errc::kTimeout:
      return "timeout";
    case Errc::kUnreachable:
      return "unreachable";
    case Errc::kLidsExhausted:
      return "lids_exhausted";
    case Errc::kIncomplete:
      return "incomplete";
    case Errc::kForwardingLoop:
      return "forwarding_loop";
    case Errc::kCdgCycle:
      return "cdg_cycle";
    case Errc::kCancelled:
      return "cancelled";
    case Errc::kIo:
      return "io";
    case Errc::kUnsupported:
      return "unsupported";
    case Errc::kInternal:
      return "internal";
  }
  return "unknown";
}

}  // namespace subnetd
