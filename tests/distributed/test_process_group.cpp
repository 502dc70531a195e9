// distributed::ProcessGroup on however many ranks run the binary: one in headgrad_tests,
// two under mpirun in headgrad_mpi_tests (tests/CMakeLists.txt). Every expectation is
// written for any world size.
#include <doctest/doctest.h>

#include "headgrad/distributed/process_group.hpp"
#include "headgrad/headgrad.hpp"

using namespace headgrad;
using distributed::ReduceOp;

TEST_CASE("world() is one rank without an MPI launcher and MPI's ranks under one") {
  auto& group = distributed::world();
  CHECK(group.rank() >= 0);
  CHECK(group.rank() < group.size());
  CHECK(group.backend() == (distributed::launched_by_mpi() ? "mpi" : "single"));
  if (!distributed::launched_by_mpi()) CHECK(group.size() == 1);
  CHECK(&distributed::world() == &group);
  group.barrier();
}

TEST_CASE("all_reduce sums, averages and takes extremes over the ranks, in place") {
  auto& group = distributed::world();
  const int n = group.size(), r = group.rank();
  for (DType dtype : {kFloat32, kFloat64}) {
    Tensor t = full({2, 3}, r + 1.0, dtype);
    group.all_reduce(t, ReduceOp::sum);
    CHECK(t.at({1, 2}) == n * (n + 1) / 2.0);
    Tensor m = full({4}, 2.0 * r, dtype);
    group.all_reduce(m, ReduceOp::mean);
    CHECK(m.at({3}) == doctest::Approx(n - 1.0));
  }
  Tensor i = full({3}, static_cast<double>(r), kInt64);
  group.all_reduce(i, ReduceOp::max);
  CHECK(i.at({0}) == n - 1);
  Tensor j = full({3}, static_cast<double>(r), kInt64);
  group.all_reduce(j, ReduceOp::min);
  CHECK(j.at({2}) == 0);
  Tensor empty_tensor = zeros({0, 5});
  group.all_reduce(empty_tensor);
  CHECK(empty_tensor.numel() == 0);
}

TEST_CASE(
    "broadcast gives every rank the root's values and all_gather every rank's in rank order") {
  auto& group = distributed::world();
  const int n = group.size(), r = group.rank();
  Tensor t = full({3, 2}, 10.0 + r, kFloat64);
  group.broadcast(t, n - 1);
  CHECK(t.at({2, 1}) == 10.0 + (n - 1));
  Tensor mask = full({4}, r % 2, kBool);
  group.broadcast(mask, 0);
  CHECK(mask.at({0}) == 0);
  std::vector<Tensor> all = group.all_gather(full({2}, r * 3.0, kFloat32));
  REQUIRE(all.size() == static_cast<std::size_t>(n));
  for (int k = 0; k < n; ++k) CHECK(all[k].at({1}) == 3.0 * k);
}

TEST_CASE("all_reduce_async overlaps: it returns before completing and wait() gives the sum") {
  auto& group = distributed::world();
  const int n = group.size();
  Tensor big = full({1 << 16}, 1.0, kFloat64);
  auto work = group.all_reduce_async(big, ReduceOp::mean);
  for (int spin = 0; spin < 10; ++spin) work->test();
  work->wait();
  CHECK(work->test());
  CHECK(big.at({12345}) == 1.0);
  Tensor sum = full({7}, 1.0, kFloat32);
  group.all_reduce_async(sum)->wait();
  CHECK(sum.at({6}) == n);
}

TEST_CASE(
    "ranks that disagree on a tensor's shape or dtype all get an error naming each rank's tensor") {
  auto& group = distributed::world();
  if (group.size() == 1) return;  // one rank always agrees with itself
  const int r = group.rank();
  Tensor by_shape = zeros({r + 1, 2});
  try {
    group.all_reduce(by_shape);
    FAIL("a shape mismatch was reduced");
  } catch (const distributed::DistributedError& e) {
    const std::string what = e.what();
    CHECK(what.find("rank 0 (1,2) float32") != std::string::npos);
    CHECK(what.find("rank 1 (2,2) float32") != std::string::npos);
  }
  Tensor by_dtype = zeros({3}, r == 0 ? kFloat32 : kFloat64);
  CHECK_THROWS_AS(group.broadcast(by_dtype, 0), distributed::DistributedError);
  CHECK_THROWS_AS(group.all_gather(zeros({r + 2})), distributed::DistributedError);
  // The group still works afterwards.
  Tensor ok = ones({2});
  group.all_reduce(ok);
  CHECK(ok.at({0}) == group.size());
}

TEST_CASE("the process group refuses bad arguments with errors naming the op") {
  auto& group = distributed::world();
  Tensor flags = zeros({2}, kBool);
  CHECK_THROWS_AS(group.all_reduce(flags), DTypeError);
  Tensor ids = zeros({2}, kInt64);
  CHECK_THROWS_AS(group.all_reduce(ids, ReduceOp::mean), DTypeError);
  Tensor t = zeros({2});
  CHECK_THROWS_AS(group.broadcast(t, group.size()), IndexError);
  CHECK_THROWS_AS(group.broadcast(t, -1), IndexError);
  CHECK_THROWS_AS(group.set_timeout_seconds(0), ValueError);
  CHECK_THROWS_AS(group.set_timeout_seconds(NAN), ValueError);
  Tensor undefined;
  CHECK_THROWS_AS(group.all_reduce(undefined), Error);
}
