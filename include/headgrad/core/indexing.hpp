// The index types of Tensor::index and Tensor::index_put_, as libtorch spells them:
//
//   using namespace headgrad::indexing;
//   x.index({0, Slice(), 2})             // x[0, :, 2]
//   x.index({Slice(1, None), Ellipsis})  // x[1:, ...]
//   x.index({None, Slice(None, None, 2)})  // x[None, ::2]
//   x.index({ids})                       // x[ids], ids an int64 tensor
//   x.index({rows, cols})                // x[rows, cols]: pairwise, as PyTorch
//   x.index({mask})                      // x[mask], mask a bool tensor
//   x.index_put_({0, Slice(0, 2)}, 7.0)  // x[0, 0:2] = 7 (under NoGradGuard for leaves)
//
// An integer selects (and removes) a dim, negative from the end; a Slice keeps it, with
// Python's clamping; None inserts a dim of size 1; Ellipsis stands for every dim not named;
// a 0-d int64 tensor selects like an integer.
//
// Advanced indexing, as PyTorch (and NumPy after integers are applied): int64 tensors of
// any shape (entries negative from the end) and boolean masks (a k-d mask names k dims and
// stands for its nonzero() positions) are applied together, after the entries above:
//   - their shapes broadcast to one shape B, and they pick elements pairwise:
//     x.index({r, c}) with r = [0, 2], c = [1, 3] is [x[0, 1], x[2, 3]], not a 2 x 2 block;
//   - the dims they index are replaced by B, where they stood when they are adjacent
//     (x[:, r, c] has shape (x.size(0), *B)), in front when a slice or None separates them
//     (x[r, :, c] has shape (*B, x.size(1))).
//   - a k-d mask takes one place in the list, as in libtorch: the entries after it apply
//     from its second dim on (x[m2d, :, None] with m2d (2, 3) and x (2, 3, 4) is (n, 1, 4)).
// x.index_put_(indices, v) writes into the same elements; index_put (ops/index.hpp) is
// its differentiable form.
//
// Included at the end of headgrad/core/tensor.hpp (a TensorIndex holds a Tensor).
#pragma once

#include <cstdint>
#include <optional>
#include <variant>

#include "headgrad/core/tensor.hpp"

namespace headgrad {

namespace indexing {

struct NoneIndex {};
inline constexpr NoneIndex None{};
struct EllipsisIndex {};
inline constexpr EllipsisIndex Ellipsis{};

// start:stop:step; an omitted bound (None or nothing) is the start or the end of the dim.
struct Slice {
  std::optional<std::int64_t> start, stop;
  std::int64_t step = 1;

  Slice() = default;
  Slice(std::optional<std::int64_t> start_, std::optional<std::int64_t> stop_ = std::nullopt,
        std::int64_t step_ = 1)
      : start(start_), stop(stop_), step(step_) {}
  Slice(NoneIndex, std::optional<std::int64_t> stop_ = std::nullopt, std::int64_t step_ = 1)
      : stop(stop_), step(step_) {}
  Slice(std::optional<std::int64_t> start_, NoneIndex, std::int64_t step_ = 1)
      : start(start_), step(step_) {}
  Slice(NoneIndex, NoneIndex, std::int64_t step_ = 1) : step(step_) {}
};

// One entry of an index list.
class TensorIndex {
 public:
  TensorIndex(int value) : item_(static_cast<std::int64_t>(value)) {}        // NOLINT: implicit
  TensorIndex(long value) : item_(static_cast<std::int64_t>(value)) {}       // NOLINT
  TensorIndex(long long value) : item_(static_cast<std::int64_t>(value)) {}  // NOLINT
  TensorIndex(Slice value) : item_(value) {}                                 // NOLINT
  TensorIndex(NoneIndex) : item_(NoneIndex{}) {}                             // NOLINT
  TensorIndex(EllipsisIndex) : item_(EllipsisIndex{}) {}                     // NOLINT
  TensorIndex(Tensor value) : item_(std::move(value)) {}                     // NOLINT

  bool is_integer() const { return item_.index() == 0; }
  bool is_slice() const { return item_.index() == 1; }
  bool is_none() const { return item_.index() == 2; }
  bool is_ellipsis() const { return item_.index() == 3; }
  bool is_tensor() const { return item_.index() == 4; }
  std::int64_t integer() const { return std::get<0>(item_); }
  const Slice& slice() const { return std::get<1>(item_); }
  const Tensor& tensor() const { return std::get<4>(item_); }

 private:
  std::variant<std::int64_t, Slice, NoneIndex, EllipsisIndex, Tensor> item_;
};

}  // namespace indexing
}  // namespace headgrad
