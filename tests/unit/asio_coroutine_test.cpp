// Boost.Asio C++20 coroutines build and run with the compiler at hand: GCC 12
// finds them on its own; clang 14 needs BOOST_ASIO_HAS_CO_AWAIT and
// BOOST_ASIO_HAS_STD_COROUTINE, which the top-level CMakeLists.txt defines
// for it. The clang preset builds this test, so CI proves the definitions.

// clang-format off
// <utility> first: Boost 1.74's awaitable.hpp uses std::exchange without
// including it (GCC's headers happen to pull it in; clang's path does not).
#include <utility>
// clang-format on

#include <gtest/gtest.h>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace {

namespace asio = boost::asio;

asio::awaitable<int> answer_after_a_turn() {
  // Suspends once: the value comes back through the io_context.
  co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
  co_return 7;
}

TEST(AsioCoroutines, AwaitAndReturnThroughTheIoContext) {
  asio::io_context io;
  int got = 0;
  asio::co_spawn(
      io, [&]() -> asio::awaitable<void> { got = co_await answer_after_a_turn(); }, asio::detached);
  EXPECT_EQ(got, 0);  // nothing runs before the io_context does
  io.run();
  EXPECT_EQ(got, 7);
}

}  // namespace
