#pragma once
// The executor the SM core runs on, and the debug check of "Runs on:" comments.
//
// Everything that touches the SM's state (the MAD engine, the Sweeper and
// Programmer runs, the fast path, the SubnetManager) runs on one strand of
// the daemon's io_context. A class comment says "Runs on: the SM strand";
// SUBNETD_ASSERT_ON(strand) checks it in debug builds (and costs nothing in
// release builds).

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <cassert>

namespace subnetd::discovery {

using Strand = boost::asio::strand<boost::asio::io_context::executor_type>;

}  // namespace subnetd::discovery

#ifdef NDEBUG
#define SUBNETD_ASSERT_ON(strand) ((void)0)
#else
#define SUBNETD_ASSERT_ON(strand) assert((strand).running_in_this_thread())
#endif
