#pragma once
// C++20 coroutines over Boost.Asio, for the SM's steps (co_await the MAD
// engine, a compute step, a timer). Include this header instead of the
// Boost.Asio coroutine headers: Boost 1.74's awaitable.hpp uses
// std::exchange without including <utility>, so it must come first.
// (Under clang, CMake defines BOOST_ASIO_HAS_CO_AWAIT and
// BOOST_ASIO_HAS_STD_COROUTINE, which Boost 1.74 does not detect.)
//
// GCC 12 destroys a lambda temporary written inside a co_await expression
// twice (`co_await run([p = shared_ptr]{...})` releases p twice; clang
// does not). Name the lambda first: `auto fn = [...]{...}; co_await
// run(std::move(fn));`. Lambdas that capture only references are harmless
// but follow the same rule where they are not obviously so.

// clang-format off
#include <utility>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
// clang-format on
