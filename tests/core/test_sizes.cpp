// Checked sizes: a shape whose element or byte count overflows, or a tensor larger than the
// allocation limit or the memory available, is refused with a headgrad error naming the
// shape before anything is allocated (these inputs used to allocate a few bytes and crash).
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "headgrad/headgrad.hpp"

using namespace headgrad;

namespace {

constexpr std::int64_t kHuge = std::int64_t{1} << 62;

// Restores the default allocation limit when a test that changed it ends.
struct LimitGuard {
  ~LimitGuard() { set_max_tensor_bytes(0); }
};

template <typename Error, typename F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  FAIL("no exception of the expected type");
  return {};
}

}  // namespace

TEST_CASE("numel_of refuses negative dims and counts that overflow int64, naming the shape") {
  CHECK(numel_of({}) == 1);
  CHECK(numel_of({3, 0, 5}) == 0);
  CHECK(numel_of({kHuge, 4, 0}) == 0);  // no elements, whatever the other dims
  CHECK(numel_of({kHuge, 1}) == kHuge);
  const std::string overflow = message_of<ShapeError>([] { numel_of({kHuge, 4}); });
  CHECK(overflow.find("(4611686018427387904,4)") != std::string::npos);
  CHECK(overflow.find("too large") != std::string::npos);
  CHECK_THROWS_AS(numel_of({INT64_MAX, 2}), ShapeError);
  CHECK_THROWS_AS(numel_of({2, -3}), ShapeError);
}

TEST_CASE("an empty tensor's strides are defined when its other dims multiply past int64") {
  const std::int64_t big = std::int64_t{1} << 40;
  CHECK(contiguous_strides({0, big, big}) == Shape{0, big, 1});
  CHECK(contiguous_strides({big, 0, big}) == Shape{0, big, 1});
  CHECK(contiguous_strides({2, 3, 4}) == Shape{12, 4, 1});
  const Tensor t = permute(zeros({0, big, big}), {2, 1, 0});
  CHECK(t.shape() == Shape{big, big, 0});
}

TEST_CASE("checked_nbytes counts bytes with the element size and refuses their overflow") {
  CHECK(checked_nbytes({2, 3}, 8, "op") == 48);
  CHECK(checked_nbytes({kHuge / 4}, 4, "op") == kHuge);
  const std::string why = message_of<ShapeError>([] { checked_nbytes({kHuge, 1}, 4, "myop"); });
  CHECK(why.rfind("myop: shape (4611686018427387904,1)", 0) == 0);
}

TEST_CASE("factories refuse shapes whose size overflows instead of allocating a few bytes") {
  CHECK_THROWS_AS(zeros({kHuge, 4}), ShapeError);
  CHECK_THROWS_AS(ones({INT64_MAX, 2}), ShapeError);
  CHECK_THROWS_AS(zeros({std::int64_t{1} << 40, std::int64_t{1} << 40}), ShapeError);
  CHECK_THROWS_AS(empty({kHuge, 4}, TensorOptions(kFloat64)), ShapeError);
  CHECK_THROWS_AS(randn({kHuge, 2}), ShapeError);
  CHECK_THROWS_AS(zeros({-1, 4}), ShapeError);
  // A count that fits int64 but whose bytes do not: 2^62 float64 elements.
  CHECK_THROWS_AS(empty({kHuge}, TensorOptions(kFloat64)), ShapeError);
}

TEST_CASE("the reported crash inputs fail with headgrad errors") {
  // zeros({2^62, 4}).sum({0}), linear on such an input, and set_at on a 2^80-element
  // tensor each allocated 0-64 bytes and wrote past them.
  CHECK_THROWS_AS(zeros({kHuge, 4}).sum({0}), Error);
  CHECK_THROWS_AS(linear(zeros({kHuge, 4}), randn({3, 4}), randn({3})), Error);
  CHECK_THROWS_AS(
      zeros({std::int64_t{1} << 40, std::int64_t{1} << 40}).set_at({123456789, 987654321}, 1),
      Error);
}

TEST_CASE("a tensor larger than the machine's memory is a MemoryError naming its shape") {
  // 2^40 float32 elements: 4 TiB, valid as a count, far beyond any test machine.
  const std::string why = message_of<MemoryError>([] {
    zeros({std::int64_t{1} << 20, std::int64_t{1} << 20});
  });
  CHECK(why.find("(1048576,1048576)") != std::string::npos);
  CHECK(why.find("4398046511104 bytes") != std::string::npos);
  // Broadcasting two valid operands into a 4 TiB result is refused the same way.
  CHECK_THROWS_AS(zeros({std::int64_t{1} << 20, 1}) + zeros({1, std::int64_t{1} << 20}),
                  MemoryError);
}

TEST_CASE("set_max_tensor_bytes limits one tensor's size and 0 restores the default") {
  LimitGuard guard;
  const std::size_t machine = max_tensor_bytes();
  CHECK(machine > (std::size_t{1} << 26));
  set_max_tensor_bytes(1024);
  CHECK(max_tensor_bytes() == 1024);
  CHECK(zeros({256}).numel() == 256);  // exactly 1024 bytes fits
  const std::string why = message_of<MemoryError>([] { zeros({257}); });
  CHECK(why.find("(257)") != std::string::npos);
  CHECK(why.find("set_max_tensor_bytes") != std::string::npos);
  set_max_tensor_bytes(0);
  CHECK(max_tensor_bytes() == machine);
  CHECK(zeros({257}).numel() == 257);
}

TEST_CASE("available_cpu_memory reads the system's figure") {
  const auto available = available_cpu_memory();
  REQUIRE(available.has_value());  // Linux has /proc/meminfo
  CHECK(*available > 0);
}
