// AttentionMask: applying a mask of each convention to attention scores (see
// ops/attention_mask.hpp). Blocked scores become -inf through masked_fill; additive masks
// are added. Both are differentiable ops, so the gradient needs nothing here.
#include "headgrad/ops/attention_mask.hpp"

#include <limits>

#include "headgrad/ops/elementwise.hpp"
#include "headgrad/ops/mask.hpp"
#include "headgrad/ops/shape_ops.hpp"

namespace headgrad {

namespace {
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

const char* meaning_name(MaskMeaning m) {
  switch (m) {
    case MaskMeaning::blocked_where_true:
      return "blocked-where-true";
    case MaskMeaning::attend_where_true:
      return "attend-where-true";
    case MaskMeaning::additive:
      return "additive";
  }
  return "?";
}

Tensor checked(Tensor mask, const char* what) {
  mask.check_defined(what);
  if (mask.dim() < 1)
    throw ShapeError(std::string(what) + ": a mask needs at least one (key) dim, got " +
                     mask.describe());
  return mask;
}
}  // namespace

AttentionMask AttentionMask::blocked_where_true(Tensor mask) {
  checked(mask, "AttentionMask::blocked_where_true");
  if (mask.dtype() != kBool)
    throw DTypeError("AttentionMask::blocked_where_true: needs a bool mask, got " +
                     mask.describe());
  return {std::move(mask), MaskMeaning::blocked_where_true};
}

AttentionMask AttentionMask::attend_where_true(Tensor mask) {
  checked(mask, "AttentionMask::attend_where_true");
  return {std::move(mask), MaskMeaning::attend_where_true};
}

AttentionMask AttentionMask::additive(Tensor mask) {
  checked(mask, "AttentionMask::additive");
  if (!is_floating(mask.dtype()))
    throw DTypeError("AttentionMask::additive: needs a floating mask, got " + mask.describe());
  return {std::move(mask), MaskMeaning::additive};
}

AttentionMask AttentionMask::torch_mha(Tensor mask) {
  checked(mask, "AttentionMask::torch_mha");
  if (mask.dtype() == kBool) return blocked_where_true(std::move(mask));
  if (is_floating(mask.dtype())) return additive(std::move(mask));
  throw DTypeError(
      "AttentionMask::torch_mha: a PyTorch attention mask is bool (true = blocked) or "
      "floating (added to the scores), got " +
      mask.describe());
}

Tensor AttentionMask::apply(const Tensor& scores) const {
  // The mask may broadcast over the scores but never enlarge them.
  const Shape& s = scores.shape();
  const Shape& m = tensor_.shape();
  bool fits = m.size() <= s.size();
  for (std::size_t i = 0; fits && i < m.size(); ++i) {
    const auto md = m[m.size() - 1 - i], sd = s[s.size() - 1 - i];
    fits = md == sd || md == 1;
  }
  if (!fits)
    throw ShapeError(std::string("attention mask (") + meaning_name(meaning_) + ") " +
                     tensor_.describe() + " does not broadcast to the scores " + shape_str(s) +
                     " (..., L, S)");
  switch (meaning_) {
    case MaskMeaning::blocked_where_true:
      return masked_fill(scores, tensor_, kNegInf);
    case MaskMeaning::attend_where_true: {
      Tensor blocked = tensor_.dtype() == kBool ? logical_not(tensor_)
                                                : eq(tensor_, zeros({}, tensor_.options()));
      return masked_fill(scores, blocked, kNegInf);
    }
    case MaskMeaning::additive:
      return add(scores, tensor_.dtype() == scores.dtype() ? tensor_ : tensor_.to(scores.dtype()));
  }
  return scores;
}

AttentionMask AttentionMask::pad_keys(std::int64_t count) const {
  if (count <= 0) return *this;
  // The last dim is taken as the key dim, even when it is 1 (a single key).
  Shape pad_shape = tensor_.shape();
  pad_shape.back() = count;
  // Appended keys are always allowed.
  Tensor pad = meaning_ == MaskMeaning::attend_where_true ? ones(pad_shape, tensor_.options())
                                                          : zeros(pad_shape, tensor_.options());
  return {concat({tensor_, pad}, -1), meaning_};
}

}  // namespace headgrad
