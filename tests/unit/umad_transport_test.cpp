// UmadTransport's error paths that can be checked without an InfiniBand
// device: the messages for device nodes that cannot be opened, and opening
// on a machine without any device. (With a device — ibsim through umad2sim —
// the transport is exercised by tests/interop.)

#include "discovery/umad/umad_transport.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>

namespace subnetd::discovery::umad {
namespace {

TEST(UmadTransport, PermissionDeniedNamesTheDeviceAndTheFix) {
  const Error e = device_open_error("umad", "/dev/infiniband/umad0", EACCES, "\"mlx5_0\" port 1");
  EXPECT_EQ(e.code, Errc::kIo);
  EXPECT_NE(e.message.find("permission denied on /dev/infiniband/umad0"), std::string::npos)
      << e.message;
  EXPECT_NE(e.message.find("\"mlx5_0\" port 1"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("rdma"), std::string::npos) << e.message;
  EXPECT_EQ(device_open_error("issm", "/dev/infiniband/issm0", EPERM, "p").code, Errc::kIo);
}

TEST(UmadTransport, MissingDeviceNodePointsAtTheModule) {
  const Error e = device_open_error("umad", "/dev/infiniband/umad3", ENOENT, "\"mlx5_1\" port 2");
  EXPECT_EQ(e.code, Errc::kNotFound);
  EXPECT_NE(e.message.find("/dev/infiniband/umad3"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("ib_umad"), std::string::npos) << e.message;
}

TEST(UmadTransport, OtherErrorsKeepTheErrno) {
  const Error e = device_open_error("issm", "/dev/infiniband/issm0", EIO, "\"x\" port 1");
  EXPECT_EQ(e.code, Errc::kIo);
  EXPECT_NE(e.message.find("issm"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("(5)"), std::string::npos) << e.message;
}

TEST(UmadTransport, NoDeviceAtAll) {
  struct stat st {};
  if (::stat("/sys/class/infiniband_mad", &st) == 0 || std::getenv("LD_PRELOAD") != nullptr) {
    GTEST_SKIP() << "this machine has InfiniBand devices (or a umad preload)";
  }
  auto t = UmadTransport::open(UmadOptions{});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code, Errc::kNotFound);
  EXPECT_EQ(t.error().message,
            "no InfiniBand device found (is ib_umad loaded? are you in the rdma group?)");
}

}  // namespace
}  // namespace subnetd::discovery::umad
