// Argument handling shared by the fused and the per-head multi-head attention (see
// attention_inputs.hpp): one internal layout, batch first and batched, and PyTorch's mask
// arguments as 4-d AttentionMasks broadcasting to the per-head scores (N, H, L, S).
#include "nn/attention_inputs.hpp"

#include <string>

#include "headgrad/ops/mask.hpp"
#include "headgrad/ops/reduce.hpp"
#include "headgrad/ops/shape_ops.hpp"

namespace headgrad::nn::detail {

namespace {

std::string shapes_of(const Tensor& q, const Tensor& k, const Tensor& v) {
  return "query " + shape_str(q.shape()) + ", key " + shape_str(k.shape()) + ", value " +
         shape_str(v.shape());
}

// For a shape error on 3-d inputs read sequence first (batch_first false, PyTorch's
// default) whose first dimensions agree, as batch-first inputs' do: the likely fix.
std::string batch_first_hint(const Tensor& q, const Tensor& k, const Tensor& v,
                             const MultiheadAttentionOptions& options) {
  if (options.batch_first || q.dim() != 3 || k.size(0) != q.size(0) || v.size(0) != q.size(0))
    return {};
  return ". batch_first is false, so the inputs are read (L, N, E), sequence first; for "
         "(N, L, E) inputs build the layer with MultiheadAttentionOptions(...)"
         ".with_batch_first(true)";
}

// PyTorch's masks are bool (true = blocked) or floating (added to the scores); checked on
// the caller's own tensor, before it is reshaped, so the message shows the shape given.
void check_torch_mask_dtype(const std::string& who, const char* arg, const Tensor& mask) {
  if (mask.dtype() == kBool || is_floating(mask.dtype())) return;
  throw DTypeError(who + ": " + arg + " " + mask.describe() +
                   " must be bool (true = blocked) or floating (added to the scores); for a "
                   "0/1 integer mask pass mask.to(kBool), as PyTorch asks too");
}

// query, key and value: all 3-d or all 2-d, of one floating dtype.
void check_ranks_and_dtypes(const std::string& who, const Tensor& query, const Tensor& key,
                            const Tensor& value, const std::string& shapes) {
  if (query.dim() != 2 && query.dim() != 3)
    throw ShapeError(who + ": query must be 3-d (batched) or 2-d (unbatched), got " + shapes);
  if (key.dim() != query.dim() || value.dim() != query.dim())
    throw ShapeError(who + ": query, key and value must all be batched (3-d) or all unbatched " +
                     "(2-d), got " + shapes);
  if (!is_floating(query.dtype()) || key.dtype() != query.dtype() || value.dtype() != query.dtype())
    throw DTypeError(who + ": query, key and value must share one floating dtype, got " +
                     query.describe() + ", " + key.describe() + ", " + value.describe());
}

// The inputs as (N, len, features) views: unbatched ones get a batch of 1, sequence-first
// ones are transposed.
void to_batch_first(const Tensor& query, const Tensor& key, const Tensor& value, bool batch_first,
                    PreparedAttention& p) {
  p.unbatched = query.dim() == 2;
  if (p.unbatched) {
    p.query = unsqueeze(query, 0);
    p.key = unsqueeze(key, 0);
    p.value = unsqueeze(value, 0);
  } else if (batch_first) {
    p.query = query;
    p.key = key;
    p.value = value;
  } else {
    p.query = transpose(query, 0, 1);
    p.key = transpose(key, 0, 1);
    p.value = transpose(value, 0, 1);
  }
  p.batch = p.query.size(0);
  p.target_len = p.query.size(1);
  p.source_len = p.key.size(1);
}

// attn_mask: (L, S), or (N*H, L, S) batched / (H, L, S) unbatched; key_padding_mask: (N, S),
// or (S) unbatched, true / -inf = padding; is_causal: the causal mask. As AttentionMasks
// broadcast to (N, H, L, S).
template <typename Hint>
void add_masks(const std::string& who, const MultiheadAttentionArgs& args, std::int64_t h,
               const std::string& shapes, const Hint& hint, PreparedAttention& p) {
  const std::int64_t n = p.batch, l = p.target_len, s = p.source_len;
  if (args.attn_mask.defined()) {
    const Tensor& m = args.attn_mask;
    check_torch_mask_dtype(who, "attn_mask", m);
    const std::string expected = "(L, S) = " + shape_str({l, s}) + " or " +
                                 (p.unbatched ? "(H, L, S) = " + shape_str({h, l, s})
                                              : "(N*H, L, S) = " + shape_str({n * h, l, s}));
    if (m.dim() == 2 && m.shape() == Shape{l, s})
      p.masks.push_back(AttentionMask::torch_mha(reshape(m, {1, 1, l, s})));
    else if (m.dim() == 3 && m.shape() == Shape{n * h, l, s})
      p.masks.push_back(AttentionMask::torch_mha(reshape(m, {n, h, l, s})));
    else
      throw ShapeError(who + ": attn_mask " + m.describe() + " must be " + expected + " for " +
                       shapes + hint());
  }
  if (args.key_padding_mask.defined()) {
    const Tensor& m = args.key_padding_mask;
    check_torch_mask_dtype(who, "key_padding_mask", m);
    const Shape expected = p.unbatched ? Shape{s} : Shape{n, s};
    if (m.shape() != expected)
      throw ShapeError(who + ": key_padding_mask " + m.describe() + " must be " +
                       (p.unbatched ? "(S) = " : "(N, S) = ") + shape_str(expected) + " for " +
                       shapes + hint());
    p.masks.push_back(AttentionMask::torch_mha(reshape(m, {n, 1, 1, s})));
  }
  if (args.is_causal)
    p.masks.push_back(AttentionMask::blocked_where_true(
        reshape(causal_mask(l, s).to(p.query.device()), {1, 1, l, s})));
}

}  // namespace

PreparedAttention prepare_attention(const char* op, const Tensor& query, const Tensor& key,
                                    const Tensor& value, const MultiheadAttentionOptions& options,
                                    const MultiheadAttentionArgs& args) {
  options.validate(op);
  query.check_defined(op);
  key.check_defined(op);
  value.check_defined(op);
  const std::string who = op;
  const std::string shapes = shapes_of(query, key, value);
  check_ranks_and_dtypes(who, query, key, value, shapes);
  PreparedAttention p;
  to_batch_first(query, key, value, options.batch_first, p);
  if (p.query.size(2) != options.embed_dim)
    throw ShapeError(who + ": query features must equal embed_dim " +
                     std::to_string(options.embed_dim) + ", got " + shapes);
  if (p.key.size(2) != options.key_dim())
    throw ShapeError(who + ": key features must equal kdim " + std::to_string(options.key_dim()) +
                     ", got " + shapes);
  if (p.value.size(2) != options.value_dim())
    throw ShapeError(who + ": value features must equal vdim " +
                     std::to_string(options.value_dim()) + ", got " + shapes);
  // Built only when an error is thrown: the normal path pays nothing for it.
  const auto hint = [&] { return batch_first_hint(query, key, value, options); };
  if (p.key.size(0) != p.batch || p.value.size(0) != p.batch)
    throw ShapeError(who + ": query, key and value batch sizes differ: " + shapes + hint());
  if (p.value.size(1) != p.source_len)
    throw ShapeError(who + ": key and value lengths differ: " + shapes + hint());
  add_masks(who, args, options.num_heads, shapes, hint, p);
  return p;
}

void append_bias_kv(Tensor& k, Tensor& v, const Tensor& bias_k, const Tensor& bias_v) {
  const std::int64_t n = k.size(0);
  k = concat({k, expand(bias_k, {n, 1, k.size(2)})}, 1);
  v = concat({v, expand(bias_v, {n, 1, v.size(2)})}, 1);
}

void append_zero_attn(Tensor& k, Tensor& v, std::int64_t key_dim) {
  for (Tensor* t : {&k, &v}) {
    Shape one = t->shape();
    one[static_cast<std::size_t>(key_dim)] = 1;
    *t = concat({*t, zeros(one, t->options())}, key_dim);
  }
}

std::vector<AttentionMask> pad_masks(const std::vector<AttentionMask>& masks, std::int64_t count) {
  std::vector<AttentionMask> out;
  out.reserve(masks.size());
  for (const AttentionMask& m : masks) out.push_back(m.pad_keys(count));
  return out;
}

std::vector<AttentionMask> head_masks(const std::vector<AttentionMask>& masks, std::int64_t h) {
  std::vector<AttentionMask> out;
  out.reserve(masks.size());
  for (const AttentionMask& m : masks) {
    const Tensor& t = m.tensor();
    if (t.dim() != 4)
      throw ShapeError("head_masks: expected a 4-d (N, H, L, S) mask, got " + t.describe());
    Tensor per_head = t.size(1) == 1 ? squeeze(t, 1) : select(t, 1, h);
    switch (m.meaning()) {
      case MaskMeaning::blocked_where_true:
        out.push_back(AttentionMask::blocked_where_true(per_head));
        break;
      case MaskMeaning::attend_where_true:
        out.push_back(AttentionMask::attend_where_true(per_head));
        break;
      case MaskMeaning::additive:
        out.push_back(AttentionMask::additive(per_head));
        break;
    }
  }
  return out;
}

Tensor restore_layout(const Tensor& output, const PreparedAttention& prepared, bool batch_first) {
  if (prepared.unbatched) return squeeze(output, 0);
  return batch_first ? output : transpose(output, 0, 1);
}

Tensor finish_weights(const Tensor& weights, bool average, const PreparedAttention& prepared) {
  Tensor w = average ? mean(weights, {1}) : weights;
  return prepared.unbatched ? squeeze(w, 0) : w;
}

}  // namespace headgrad::nn::detail

namespace headgrad::nn::detail {

Tensor gate_view(const char* op, const Tensor& gates, std::int64_t batch, std::int64_t heads) {
  if (!gates.defined()) return gates;
  const std::int64_t rows = gates.dim() == 2 ? gates.size(0) : 1;
  if (rows != 1 && rows != batch)
    throw ShapeError(std::string(op) + ": head gates " + shape_str(gates.shape()) +
                     " do not match the batch of " + std::to_string(batch) +
                     " (expected (H) or (N, H) = (" + std::to_string(batch) + ", " +
                     std::to_string(heads) + "))");
  return reshape(gates, {rows, heads, 1, 1});
}

}  // namespace headgrad::nn::detail
