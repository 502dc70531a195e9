// Shape and layout ops. Storage is always contiguous row-major: reshape/view share it;
// every other op here writes a new contiguous tensor (transpose and permute use raw
// pointer loops that copy whole contiguous runs).
#pragma once

#include <vector>

#include "headgrad/core/tensor.hpp"

namespace headgrad {

// One dim may be -1 (inferred). view and reshape are the same op here (always contiguous).
Tensor reshape(const Tensor& x, const Shape& shape);
Tensor view(const Tensor& x, const Shape& shape);
Tensor flatten(const Tensor& x, std::int64_t start_dim = 0, std::int64_t end_dim = -1);
Tensor transpose(const Tensor& x, std::int64_t dim0, std::int64_t dim1);
Tensor permute(const Tensor& x, const Shape& dims);
Tensor unsqueeze(const Tensor& x, std::int64_t dim);
Tensor squeeze(const Tensor& x);                    // all size-1 dims
Tensor squeeze(const Tensor& x, std::int64_t dim);  // no-op if that dim is not 1
// Broadcasts to `shape` (-1 keeps a dim); new leading dims allowed. Materializes.
Tensor expand(const Tensor& x, const Shape& shape);
Tensor concat(const std::vector<Tensor>& tensors, std::int64_t dim);
inline Tensor cat(const std::vector<Tensor>& tensors, std::int64_t dim) {
  return concat(tensors, dim);
}
Tensor stack(const std::vector<Tensor>& tensors, std::int64_t dim);
// The slices along dim, that dim removed (torch.unbind): stack's inverse. One autograd node
// for all of them: a gradient through many pieces is assembled once.
std::vector<Tensor> unbind(const Tensor& x, std::int64_t dim = 0);
// Pieces of `split_size` along dim (the last may be smaller), like torch.split.
std::vector<Tensor> split(const Tensor& x, std::int64_t split_size, std::int64_t dim);
// Pieces with the given sizes, which must add up to the dim's size.
std::vector<Tensor> split_with_sizes(const Tensor& x, const Shape& sizes, std::int64_t dim);
// `chunks` pieces of ceil(size/chunks), like torch.chunk.
std::vector<Tensor> chunk(const Tensor& x, std::int64_t chunks, std::int64_t dim);
Tensor narrow(const Tensor& x, std::int64_t dim, std::int64_t start, std::int64_t length);
// x[start:end:step] along dim; negative start/end count from the end and are clamped like
// Python slices.
Tensor slice(const Tensor& x, std::int64_t dim, std::int64_t start, std::int64_t end,
             std::int64_t step = 1);
// x.select(dim, index): removes the dim.
Tensor select(const Tensor& x, std::int64_t dim, std::int64_t index);

}  // namespace headgrad
