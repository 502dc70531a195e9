// plan_matmul (src/core/matmul_plan.hpp): torch.matmul's broadcasting rules as a plan of
// which stored matrix of each operand every batch entry reads.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/matmul_plan.hpp"
#include "headgrad/headgrad.hpp"

namespace hg = headgrad;
using hg::Shape;
using hg::detail::plan_matmul;

TEST_CASE("plan_matmul broadcasts the batch dims and says which matrix each entry reads") {
  // (2, 1, 3, 4) @ (5, 4, 6): batch (2, 5), entry i = (p, q) reads A[p] and B[q].
  const hg::detail::MatmulPlan p = plan_matmul({2, 1, 3, 4}, {5, 4, 6});
  CHECK(p.out_shape == Shape{2, 5, 3, 6});
  CHECK(p.batch_shape == Shape{2, 5});
  CHECK(p.m == 3);
  CHECK(p.k == 4);
  CHECK(p.n == 6);
  CHECK(p.batch == 10);
  CHECK(p.a_matrices == 2);
  CHECK(p.b_matrices == 5);
  CHECK_FALSE(p.fold_batch_into_rows);
  REQUIRE(p.a_offsets.size() == 10);
  for (std::int64_t i = 0; i < 10; ++i) {
    const std::size_t at = static_cast<std::size_t>(i);
    CHECK(p.a_offsets[at] == (i / 5) * 3 * 4);
    CHECK(p.b_offsets[at] == (i % 5) * 4 * 6);
    CHECK(p.c_offsets[at] == i * 3 * 6);
    CHECK(p.a_first[at] == (i % 5 == 0 ? 1 : 0));  // A[p] first read at (p, 0)
    CHECK(p.b_first[at] == (i < 5 ? 1 : 0));       // B[q] first read at (0, q)
  }
}

TEST_CASE("plan_matmul folds a batch against one shared matrix into the rows") {
  const hg::detail::MatmulPlan p = plan_matmul({2, 3, 4}, {4, 6});
  CHECK(p.fold_batch_into_rows);
  CHECK(p.out_shape == Shape{2, 3, 6});
  CHECK(p.a_offsets.empty());
}

TEST_CASE("plan_matmul promotes 1-d operands and drops their dim from the result") {
  const hg::detail::MatmulPlan dot = plan_matmul({4}, {4});
  CHECK(dot.out_shape == Shape{});
  CHECK(dot.a_promoted == Shape{1, 4});
  CHECK(dot.b_promoted == Shape{4, 1});
  const hg::detail::MatmulPlan mv = plan_matmul({2, 3, 4}, {4});
  CHECK(mv.out_shape == Shape{2, 3});
  CHECK(mv.b_promoted == Shape{4, 1});
}

TEST_CASE("plan_matmul refuses shapes that do not multiply, naming both") {
  std::string why;
  try {
    plan_matmul({2, 3}, {4, 5});
  } catch (const hg::ShapeError& e) {
    why = e.what();
  }
  CHECK(why.find("matmul: (2,3) @ (4,5)") != std::string::npos);
  CHECK(why.find("inner dimensions 3 and 4 differ") != std::string::npos);
  CHECK_THROWS_AS(plan_matmul({2, 3, 4}, {3, 4, 5}), hg::ShapeError);
  CHECK_THROWS_AS(plan_matmul({}, {3}), hg::ShapeError);
}
