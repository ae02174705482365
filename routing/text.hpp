#pragma once
// Text from outside (node descriptions from the wire, names in requests,
// values from files) on its way into a log line or an error message.
//
// printable() escapes what a terminal or a log reader would interpret
// (control bytes, DEL, bytes that are not valid UTF-8) as \xNN, and cuts
// text longer than `max_bytes` with a note of its full length, so a 1 MB
// node name or a name full of escape sequences shows as what it is.

#include <cstddef>
#include <string>
#include <string_view>

namespace subnetd {

inline constexpr std::size_t kMaxEchoBytes = 256;

// `text` with control bytes and invalid UTF-8 escaped (\n, \t, \r, \\ and
// \xNN), cut after `max_bytes` of input: "abc... (1048576 bytes)".
std::string printable(std::string_view text, std::size_t max_bytes = kMaxEchoBytes);

}  // namespace subnetd
