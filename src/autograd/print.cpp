// Printing in PyTorch's style: tensor([[1.0000, 2.0000], ...], dtype=float64, requires_grad=True)
#include <iomanip>
#include <sstream>

#include "core/dispatch.hpp"
#include "headgrad/autograd/node.hpp"
#include "headgrad/core/tensor.hpp"

namespace headgrad {

namespace {
constexpr std::int64_t kEdgeItems = 3;       // shown at each end of a long dim
constexpr std::int64_t kSummarizeAt = 1000;  // elements above which dims are summarized

// Element `flat` of t: True/False (PyTorch's spelling), an integer, or a float with 4 decimals.
void print_element(std::ostream& os, const Tensor& t, std::int64_t flat) {
  detail::dispatch_all(t.dtype(), [&]<typename T>() {
    const T v = detail::ptr<T>(t)[flat];
    if constexpr (std::is_same_v<T, bool>)
      os << (v ? "True" : "False");
    else if constexpr (std::is_integral_v<T>)
      os << v;
    else
      os << std::fixed << std::setprecision(4) << v;
  });
}

void print_recursive(std::ostream& os, const Tensor& t, std::size_t dim, std::int64_t offset,
                     const Shape& strides, bool summarize, int indent) {
  const Shape& shape = t.shape();
  const std::int64_t n = shape[dim];
  os << '[';
  for (std::int64_t i = 0; i < n; ++i) {
    if (summarize && n > 2 * kEdgeItems && i == kEdgeItems) {
      os << "...";
      i = n - kEdgeItems - 1;
      os << (dim + 1 == shape.size()
                 ? ", "
                 : ",\n" + std::string(static_cast<std::size_t>(indent + 1), ' '));
      continue;
    }
    if (dim + 1 == shape.size()) {
      print_element(os, t, offset + i);
    } else {
      print_recursive(os, t, dim + 1, offset + i * strides[dim], strides, summarize, indent + 1);
    }
    if (i + 1 < n)
      os << (dim + 1 == shape.size()
                 ? ", "
                 : ",\n" + std::string(static_cast<std::size_t>(indent + 1), ' '));
  }
  os << ']';
}
}  // namespace

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  if (!t.defined()) return os << "tensor(undefined)";
  std::ostringstream body;
  body << "tensor(";
  // Device values are printed from a copy on the CPU, as PyTorch does.
  const Tensor host = t.device().is_cpu() ? t : t.detach().to(Device::cpu());
  if (host.dim() == 0) {
    print_element(body, host, 0);
  } else if (host.numel() == 0) {
    body << "[], size=" << shape_str(host.shape());
  } else {
    print_recursive(body, host, 0, 0, contiguous_strides(host.shape()), host.numel() > kSummarizeAt,
                    7);
  }
  if (!t.device().is_cpu()) body << ", device='" << t.device().str() << "'";
  if (t.dtype() != kFloat32) body << ", dtype=" << to_string(t.dtype());
  if (t.grad_fn())
    body << ", grad_fn=<" << t.grad_fn()->name() << ">";
  else if (t.requires_grad())
    body << ", requires_grad=True";
  if (!t.name().empty()) body << ", name='" << t.name() << "'";
  body << ')';
  return os << body.str();
}

std::string to_string(const Tensor& t) {
  std::ostringstream os;
  os << t;
  return os.str();
}

}  // namespace headgrad
