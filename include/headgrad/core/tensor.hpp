// Tensor: a cheap, shared handle to an n-d array with a runtime dtype, a device, contiguous
// row-major storage and autograd metadata. Copying a Tensor copies the handle, not the
// data (as in PyTorch). Ops live in headgrad/ops/*.hpp; the methods here forward to them.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "headgrad/core/device.hpp"
#include "headgrad/core/dtype.hpp"
#include "headgrad/core/error.hpp"
#include "headgrad/core/shape.hpp"
#include "headgrad/core/storage.hpp"

namespace headgrad {

namespace autograd {
class Node;
}
namespace indexing {
class TensorIndex;  // headgrad/core/indexing.hpp, included at the end of this header
}

struct TensorImpl;
class Tensor;

// A gradient hook: receives the gradient flowing into a tensor and returns either an
// undefined Tensor (keep the gradient) or a replacement of the same shape and dtype.
using GradHook = std::function<Tensor(const Tensor&)>;
// A hook run on a leaf after backward has accumulated this pass's gradient into its grad()
// (PyTorch's register_post_accumulate_grad_hook): it receives the leaf itself.
using PostAccumulateGradHook = std::function<void(const Tensor&)>;

// Options for factories: dtype (float32 unless set), device (CPU) and requires_grad.
struct TensorOptions {
  std::optional<DType> dtype_;
  Device device_ = Device::cpu();
  bool requires_grad_ = false;

  TensorOptions() = default;
  TensorOptions(DType d) : dtype_(d) {}  // NOLINT: implicit, so `zeros(s, kFloat64)` reads well
  TensorOptions& dtype(DType d) {
    dtype_ = d;
    return *this;
  }
  TensorOptions& device(Device d) {
    device_ = d;
    return *this;
  }
  TensorOptions& requires_grad(bool r = true) {
    requires_grad_ = r;
    return *this;
  }
  DType dtype_or(DType fallback) const { return dtype_.value_or(fallback); }
};

class Tensor {
 public:
  Tensor() = default;  // an undefined tensor (no data), like a default torch::Tensor
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // --- metadata -------------------------------------------------------------------
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  const Shape& sizes() const { return shape(); }
  std::int64_t dim() const;
  std::int64_t size(std::int64_t dim) const;  // negative dims count from the end
  std::int64_t numel() const;
  DType dtype() const;
  Device device() const;
  // This tensor's dtype and device, for factories: zeros(shape, x.options()).
  TensorOptions options() const { return TensorOptions(dtype()).device(device()); }
  const std::string& name() const;
  Tensor& set_name(std::string name);
  std::string describe() const;  // "name(2,3) float32" for error messages

  // --- autograd -------------------------------------------------------------------
  bool requires_grad() const;
  Tensor& requires_grad_(bool requires_grad = true);  // leaves only
  bool is_leaf() const;
  // Accumulated gradient (leaves, and non-leaves after retain_grad()); undefined if none.
  Tensor grad() const;
  void set_grad(const Tensor& grad);
  void zero_grad();  // drops the gradient (sets it undefined), as set_to_none in PyTorch
  const std::shared_ptr<autograd::Node>& grad_fn() const;
  int output_nr() const;
  void retain_grad();
  bool retains_grad() const;
  // Registers a hook run on the gradient of this tensor during backward; returns an id
  // for remove_hook.
  std::size_t register_hook(GradHook hook);
  // Leaves only: registers a hook run after each backward pass has accumulated into
  // grad() (where gradient communication, e.g. data-parallel all-reduce, starts). Returns
  // an id for remove_hook.
  std::size_t register_post_accumulate_grad_hook(PostAccumulateGradHook hook);
  void remove_hook(std::size_t id);
  // Backpropagates from this tensor. Without `gradient` the tensor must hold one element.
  void backward(const Tensor& gradient = Tensor(), bool retain_graph = false) const;

  // --- conversion and copies ------------------------------------------------------
  Tensor detach() const;  // shares storage, no graph
  Tensor clone() const;   // new storage, differentiable
  Tensor to(DType dtype) const;
  Tensor to(Device device) const;
  bool is_contiguous() const { return true; }  // storage is always row-major contiguous

  // --- element access (for tests and small host-side logic) -----------------------
  double item() const;  // one-element tensors
  template <typename T>
  T item() const;
  double at(const Shape& index) const;  // multi-index, negative entries allowed
  void set_at(const Shape& index, double value);
  template <typename T>
  std::vector<T> to_vector() const;  // converts to T
  // Raw access to CPU data; T must match the dtype exactly.
  template <typename T>
  T* data();
  template <typename T>
  const T* data() const;
  void* raw_data();
  const void* raw_data() const;

  // --- in-place writes: not recorded in the graph, so they throw on any tensor that
  // requires grad while grad mode is on (use NoGradGuard, as optimizers do)
  Tensor& zero_();
  Tensor& fill_(double value);
  Tensor& copy_(const Tensor& src);                       // same shape; converts dtype
  Tensor& add_(const Tensor& other, double alpha = 1.0);  // other broadcasts to this
  Tensor& mul_(double factor);

  // --- indexing, as libtorch (see headgrad/core/indexing.hpp) --------------------
  // x.index({0, Slice(), 2}) is x[0, :, 2]: differentiable, made of select, slice,
  // unsqueeze, permute, reshape and index_select. Several index tensors pick elements
  // pairwise (advanced indexing, as PyTorch and NumPy).
  Tensor index(const std::vector<indexing::TensorIndex>& indices) const;
  // x[indices] = value (broadcast to the indexed region), in place, or += with
  // `accumulate` (repeated positions add up); not recorded in the graph (throws on a
  // tensor that requires grad while grad mode is on, as add_ does): index_put (ops/index.hpp)
  // is the differentiable form.
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, const Tensor& value,
                     bool accumulate = false);
  Tensor& index_put_(const std::vector<indexing::TensorIndex>& indices, double value,
                     bool accumulate = false);

  // --- ops as methods (see headgrad/ops/*.hpp) ----------------------------------
  Tensor reshape(const Shape& shape) const;
  Tensor view(const Shape& shape) const;
  Tensor flatten(std::int64_t start_dim = 0, std::int64_t end_dim = -1) const;
  Tensor transpose(std::int64_t dim0, std::int64_t dim1) const;
  Tensor t() const;  // transpose of a 2-d tensor
  Tensor permute(const Shape& dims) const;
  Tensor unsqueeze(std::int64_t dim) const;
  Tensor squeeze() const;
  Tensor squeeze(std::int64_t dim) const;
  Tensor expand(const Shape& shape) const;
  Tensor narrow(std::int64_t dim, std::int64_t start, std::int64_t length) const;
  Tensor slice(std::int64_t dim, std::int64_t start, std::int64_t end, std::int64_t step = 1) const;
  Tensor select(std::int64_t dim, std::int64_t index) const;
  Tensor index_select(std::int64_t dim, const Tensor& index) const;
  std::vector<Tensor> split(std::int64_t split_size, std::int64_t dim = 0) const;
  std::vector<Tensor> chunk(std::int64_t chunks, std::int64_t dim = 0) const;
  Tensor contiguous() const { return *this; }  // storage is always contiguous
  Tensor sum() const;
  Tensor sum(const Shape& dims, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(const Shape& dims, bool keepdim = false) const;
  Tensor var() const;
  Tensor var(const Shape& dims, bool keepdim = false, std::int64_t correction = 1) const;
  Tensor max() const;  // all elements (0-d)
  // Values and int64 indices along dim, as libtorch's max(dim):
  // auto [values, indices] = x.max(1);
  std::tuple<Tensor, Tensor> max(std::int64_t dim, bool keepdim = false) const;
  Tensor amax(const Shape& dims, bool keepdim = false) const;
  Tensor argmax(std::int64_t dim, bool keepdim = false) const;
  Tensor matmul(const Tensor& other) const;
  Tensor add(const Tensor& other, double alpha = 1.0) const;
  Tensor sub(const Tensor& other, double alpha = 1.0) const;
  Tensor mul(const Tensor& other) const;
  Tensor div(const Tensor& other) const;
  Tensor neg() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor abs() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor relu() const;
  Tensor gelu() const;  // exact (erf) form; gelu(x, GeluApproximation::tanh) for the other
  Tensor clamp(double min_value, double max_value) const;
  Tensor pow(double exponent) const;
  Tensor softmax(std::int64_t dim) const;
  Tensor log_softmax(std::int64_t dim) const;
  Tensor masked_fill(const Tensor& mask, double value) const;
  // Comparisons (bool results, not differentiable), with a tensor or a number.
  Tensor eq(const Tensor& other) const;
  Tensor ne(const Tensor& other) const;
  Tensor lt(const Tensor& other) const;
  Tensor le(const Tensor& other) const;
  Tensor gt(const Tensor& other) const;
  Tensor ge(const Tensor& other) const;
  Tensor eq(double other) const;
  Tensor ne(double other) const;
  Tensor lt(double other) const;
  Tensor le(double other) const;
  Tensor gt(double other) const;
  Tensor ge(double other) const;
  Tensor logical_not() const;

  // --- internals ------------------------------------------------------------------
  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  // Throws an Error naming `op` if the tensor is undefined.
  const Tensor& check_defined(const char* op) const;

 private:
  std::shared_ptr<TensorImpl> impl_;
};

// The state behind a Tensor handle. Ops and the engine use it; user code rarely needs to.
struct TensorImpl {
  std::shared_ptr<Storage> storage;
  std::int64_t offset = 0;  // in elements, into storage
  Shape shape;
  DType dtype = DType::float32;
  std::string name;

  // autograd
  bool requires_grad = false;  // set on leaves; non-leaves require grad through grad_fn
  bool retains_grad = false;
  Tensor grad;
  std::shared_ptr<autograd::Node> grad_fn;              // null for leaves
  int output_nr = 0;                                    // which output of grad_fn this is
  std::weak_ptr<autograd::Node> grad_accumulator;       // leaves: the node that accumulates
  std::vector<std::pair<std::size_t, GradHook>> hooks;  // leaf hooks
  std::vector<std::pair<std::size_t, PostAccumulateGradHook>> post_accumulate_hooks;  // leaves
  std::size_t next_hook_id = 0;

  std::int64_t numel() const { return numel_of(shape); }
  Device device() const { return storage->device(); }
  void* data() { return static_cast<char*>(storage->data()) + offset * element_size(dtype); }
};

// --- factories --------------------------------------------------------------------
class Generator;

Tensor empty(const Shape& shape, TensorOptions options = {});  // uninitialized
Tensor zeros(const Shape& shape, TensorOptions options = {});
Tensor ones(const Shape& shape, TensorOptions options = {});
Tensor full(const Shape& shape, double value, TensorOptions options = {});
Tensor scalar_tensor(double value, TensorOptions options = {});  // 0-d
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor empty_like(const Tensor& t);
Tensor full_like(const Tensor& t, double value);
// [start, end) with `step`, like torch.arange; float32 unless a dtype is given.
Tensor arange(double end, TensorOptions options = {});
Tensor arange(double start, double end, double step = 1.0, TensorOptions options = {});
// Uniform [0,1), standard normal, and uniform [low, high). Draw from `generator`, or
// from the default generator when it is null.
Tensor rand(const Shape& shape, TensorOptions options = {}, Generator* generator = nullptr);
Tensor randn(const Shape& shape, TensorOptions options = {}, Generator* generator = nullptr);
Tensor uniform(const Shape& shape, double low, double high, TensorOptions options = {},
               Generator* generator = nullptr);
Tensor normal(const Shape& shape, double mean, double stddev, TensorOptions options = {},
              Generator* generator = nullptr);
// Uniform integers in [low, high), int64 unless a dtype is given.
Tensor randint(std::int64_t low, std::int64_t high, const Shape& shape, TensorOptions options = {},
               Generator* generator = nullptr);

// A tensor holding `values` (row-major) with `shape`; the dtype defaults to T's
// (float -> float32, double -> float64, int64_t -> int64, bool -> bool).
template <typename T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape, TensorOptions options = {});
// A CPU tensor over memory headgrad does not own (libtorch's from_blob): `data` holds
// numel(shape) elements of `dtype`, row-major, and must stay valid until `release` runs,
// which happens when the last tensor (or view) using it is gone. Nothing is copied: writes
// through the tensor are writes to `data`. How the Python module shares NumPy arrays.
Tensor from_blob(void* data, const Shape& shape, DType dtype, std::function<void()> release);
// 1-d convenience: tensor({1, 2, 3}) is float32 unless a dtype is given.
Tensor tensor(std::initializer_list<double> values, TensorOptions options = {});

// --- printing ---------------------------------------------------------------------
std::ostream& operator<<(std::ostream& os, const Tensor& t);
std::string to_string(const Tensor& t);
// Shapes, dtypes and devices print too (shape.hpp, dtype.hpp, device.hpp).

// --- operators (defined in ops/elementwise.cpp) ------------------------------------
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);
Tensor operator-(const Tensor& a);
// Comparisons, as libtorch's operators: elementwise, bool results.
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, double b);
Tensor operator!=(const Tensor& a, double b);
Tensor operator<(const Tensor& a, double b);
Tensor operator<=(const Tensor& a, double b);
Tensor operator>(const Tensor& a, double b);
Tensor operator>=(const Tensor& a, double b);

}  // namespace headgrad

#include "headgrad/core/indexing.hpp"
