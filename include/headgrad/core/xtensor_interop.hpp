// Interop with xtensor: build a Tensor from any xtensor expression, and view a CPU
// tensor's storage as an xtensor container without copying. Kept out of the umbrella
// header so that code which never names xtensor does not pay for its headers.
#pragma once

#include <type_traits>

#include <xtensor/xadapt.hpp>
#include <xtensor/xarray.hpp>

#include "headgrad/core/tensor.hpp"

namespace headgrad {

// Evaluates `expr` and copies it into a new contiguous tensor. The dtype is the
// expression's value type (float, double, int64_t or bool) unless options set one.
template <typename E>
Tensor from_xtensor(const xt::xexpression<E>& expr, TensorOptions options = {}) {
  using value_type = std::decay_t<typename E::value_type>;
  const xt::xarray<value_type, xt::layout_type::row_major> evaluated = expr.derived_cast();
  Shape shape(evaluated.shape().begin(), evaluated.shape().end());
  std::vector<value_type> values(evaluated.begin(), evaluated.end());
  return from_vector<value_type>(values, shape, options);
}

// A non-owning xtensor view over a CPU tensor's elements (T must match the dtype). Writes
// through it change the tensor; it is valid while the tensor's storage lives.
template <typename T>
auto as_xtensor(Tensor& t) {
  T* data = t.data<T>();
  std::vector<std::size_t> shape(t.shape().begin(), t.shape().end());
  return xt::adapt(data, static_cast<std::size_t>(t.numel()), xt::no_ownership(), shape);
}

template <typename T>
auto as_xtensor(const Tensor& t) {
  const T* data = t.data<T>();
  std::vector<std::size_t> shape(t.shape().begin(), t.shape().end());
  return xt::adapt(data, static_cast<std::size_t>(t.numel()), xt::no_ownership(), shape);
}

}  // namespace headgrad
