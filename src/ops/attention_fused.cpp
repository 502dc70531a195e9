// fused_multihead_attention (see attention_fused.hpp): the op around the fused kernels of
// Kernels::fused_attention_forward / backward (the CPU's, with the derivation, are in
// ops/cpu/attention_kernels.cpp). The op checks the inputs, reads each mask as the kernel
// does, allocates P, the output and the gradients and records the graph:
//   forward   P = softmax(scale * q_h k_h^T + masks),  out[:, :, h*dv : (h+1)*dv] = P v_h
//   backward  dq, dk, dv from dout (and dweights when P was returned), P saved
// Gradients of q, k and v land in one buffer per distinct input tensor; heads write
// disjoint column blocks, so the buffer needs no zero fill unless column blocks of
// different operands overlap or leave columns unread.
#include "ops/attention_fused.hpp"

#include <algorithm>
#include <string>

#include "core/dispatch.hpp"
#include "core/kernels.hpp"
#include "headgrad/autograd/function.hpp"
#include "headgrad/ops/elementwise.hpp"

namespace headgrad::detail {

namespace {

constexpr const char* kOp = "fused_multihead_attention";

std::string describe_inputs(const HeadAttentionArgs& a, const char* op) {
  std::string s = std::string(op) + ": q " + a.q.tensor.describe() + " at column " +
                  std::to_string(a.q.offset) + ", k " + a.k.tensor.describe() + " at column " +
                  std::to_string(a.k.offset) + ", v " + a.v.tensor.describe() + " at column " +
                  std::to_string(a.v.offset) + ", heads " + std::to_string(a.heads) +
                  ", head dims " + std::to_string(a.head_dim) + "/" +
                  std::to_string(a.value_head_dim);
  return s + ": ";
}

FusedAttentionProblem check_inputs(const HeadAttentionArgs& a, const char* op) {
  for (const HeadColumns* c : {&a.q, &a.k, &a.v}) c->tensor.check_defined(op);
  const Tensor& q = a.q.tensor;
  const Tensor& k = a.k.tensor;
  const Tensor& v = a.v.tensor;
  if (q.dim() != 3 || k.dim() != 3 || v.dim() != 3)
    throw ShapeError(describe_inputs(a, op) + "q, k and v must be 3-d (N, len, features)");
  if (!is_floating(q.dtype()) || k.dtype() != q.dtype() || v.dtype() != q.dtype())
    throw DTypeError(describe_inputs(a, op) + "q, k and v must share one floating dtype");
  if (q.device() != k.device() || q.device() != v.device())
    throw DeviceError(describe_inputs(a, op) + "q, k and v must be on one device");
  FusedAttentionProblem g;
  g.n = q.size(0);
  g.l = q.size(1);
  g.s = k.size(1);
  g.h = a.heads;
  g.d = a.head_dim;
  g.dv = a.value_head_dim;
  g.fq = q.size(2);
  g.fk = k.size(2);
  g.fv = v.size(2);
  g.oq = a.q.offset;
  g.ok = a.k.offset;
  g.ov = a.v.offset;
  if (k.size(0) != g.n || v.size(0) != g.n)
    throw ShapeError(describe_inputs(a, op) + "batch sizes differ");
  if (v.size(1) != g.s) throw ShapeError(describe_inputs(a, op) + "k and v lengths differ");
  if (g.h <= 0 || g.d < 0 || g.dv < 0)
    throw ValueError(describe_inputs(a, op) + "heads must be positive and head dims non-negative");
  auto fits = [](std::int64_t offset, std::int64_t width, std::int64_t features) {
    return offset >= 0 && offset + width <= features;
  };
  if (!fits(g.oq, g.h * g.d, g.fq) || !fits(g.ok, g.h * g.d, g.fk) || !fits(g.ov, g.h * g.dv, g.fv))
    throw ShapeError(describe_inputs(a, op) + "the head columns run past the features");
  return g;
}

FusedAttentionProblem::Mask view_mask(const AttentionMask& mask, const FusedAttentionProblem& g,
                                      DType dtype) {
  const Tensor& t = mask.tensor();
  const Shape target{g.n, g.h, g.l, g.s};
  bool fits = t.dim() >= 1 && t.dim() <= 4;
  for (std::int64_t i = 0; fits && i < t.dim(); ++i) {
    const std::int64_t md = t.size(-1 - i), td = target[3 - i];
    fits = md == td || md == 1;
  }
  if (!fits)
    throw ShapeError(std::string(kOp) + ": mask " + t.describe() +
                     " does not broadcast to the scores (N, H, L, S) = " + shape_str(target));
  if (t.requires_grad())
    throw ValueError(std::string(kOp) + ": mask " + t.describe() +
                     " requires grad; call multihead_attention, which takes the composed path");
  FusedAttentionProblem::Mask view;
  switch (mask.meaning()) {
    case MaskMeaning::blocked_where_true:
      view.tensor = t;
      break;
    case MaskMeaning::attend_where_true:
      view.tensor = t.dtype() == kBool ? logical_not(t) : eq(t, zeros({}, t.options()));
      break;
    case MaskMeaning::additive:
      view.tensor = t.dtype() == dtype ? t : t.to(dtype);
      view.additive = true;
      break;
  }
  Shape padded = view.tensor.shape();
  padded.insert(padded.begin(), 4 - padded.size(), 1);
  const Shape strides = contiguous_strides(padded);
  view.sn = padded[0] == 1 ? 0 : strides[0];
  view.sh = padded[1] == 1 ? 0 : strides[1];
  view.sl = padded[2] == 1 ? 0 : strides[2];
  view.ss = padded[3] == 1 ? 0 : strides[3];
  return view;
}

// The distinct input tensors among q, k, v and which of them each operand is.
struct Operands {
  std::vector<Tensor> inputs;
  int q = 0, k = 0, v = 0;
};

Operands distinct_operands(const HeadAttentionArgs& a) {
  Operands o;
  auto index_of = [&o](const Tensor& t) {
    for (std::size_t i = 0; i < o.inputs.size(); ++i)
      if (o.inputs[i].impl() == t.impl()) return static_cast<int>(i);
    o.inputs.push_back(t);
    return static_cast<int>(o.inputs.size() - 1);
  };
  o.q = index_of(a.q.tensor);
  o.k = index_of(a.k.tensor);
  o.v = index_of(a.v.tensor);
  return o;
}

// Whether the column blocks [begin, end) that write into one buffer are disjoint and
// together cover all `features` columns.
bool disjoint_and_covering(std::vector<std::pair<std::int64_t, std::int64_t>> blocks,
                           std::int64_t features) {
  std::sort(blocks.begin(), blocks.end());
  std::int64_t next = 0;
  for (const auto& [begin, end] : blocks) {
    if (begin != next) return false;  // a gap or an overlap
    next = end;
  }
  return next == features;
}

// The backward of fused_multihead_attention: gradients of its distinct inputs from the
// output's (and the weights' when returned) gradient and the saved P. One buffer per
// distinct input that needs a gradient; the column blocks written into each decide whether
// it must start from zeros and be accumulated into.
std::vector<Tensor> fused_backward(const FusedAttentionProblem& g, const Operands& ops,
                                   const std::vector<Tensor>& grads,
                                   const autograd::BackwardContext& ctx) {
  const std::size_t count = ops.inputs.size();
  std::vector<Tensor> result(count);
  const Tensor& p = ctx.saved(count);
  Tensor dout = grads[0];
  const Tensor dweights = grads.size() > 1 ? grads[1] : Tensor();
  if (!dout.defined() && !dweights.defined()) return result;
  if (!dout.defined()) dout = zeros({g.n, g.l, g.out_features()}, p.options());
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> columns(count);
  columns[ops.q].push_back({g.oq, g.oq + g.h * g.d});
  columns[ops.k].push_back({g.ok, g.ok + g.h * g.d});
  columns[ops.v].push_back({g.ov, g.ov + g.h * g.dv});
  bool accumulate = false;
  for (std::size_t i = 0; i < count; ++i) {
    if (!ctx.needs_grad(i)) continue;
    result[i] = new_tensor(ctx.saved(i).shape(), p.dtype(), p.device());
    if (!disjoint_and_covering(columns[i], ctx.saved(i).size(2))) accumulate = true;
  }
  Kernels& kernels = kernels_for(p.device(), kOp);
  if (accumulate)
    for (Tensor& r : result)
      if (r.defined()) kernels.fill(r, 0.0);
  kernels.fused_attention_backward(g, ctx.saved(ops.q), ctx.saved(ops.k), ctx.saved(ops.v), p, dout,
                                   dweights, accumulate, result[ops.q], result[ops.k],
                                   result[ops.v]);
  return result;
}

}  // namespace

void check_head_attention(const HeadAttentionArgs& args, const char* op) {
  (void)check_inputs(args, op);
}

bool fused_attention_applies(const HeadAttentionArgs& args) {
  bool applies =
      args.dropout_p == 0.0 && kernels_for(args.q.tensor.device(), kOp).has_fused_attention();
  for (const AttentionMask& mask : args.masks) applies = applies && !mask.tensor().requires_grad();
  return applies;
}

HeadAttentionResult fused_multihead_attention(const HeadAttentionArgs& args) {
  FusedAttentionProblem problem = check_inputs(args, kOp);
  Kernels& kernels = kernels_for(args.q.tensor.device(), kOp);
  if (!kernels.has_fused_attention())
    throw DeviceError(describe_inputs(args, kOp) + "this device (" + args.q.tensor.device().str() +
                      ") has no fused attention kernel; call multihead_attention, which takes "
                      "the composed path there");
  if (args.dropout_p != 0.0)
    throw ValueError(describe_inputs(args, kOp) + "the fused kernel has no dropout (dropout_p " +
                     std::to_string(args.dropout_p) + "); call multihead_attention");
  const DType dtype = args.q.tensor.dtype();
  const Device device = args.q.tensor.device();
  problem.scale = args.scale;
  problem.masks.reserve(args.masks.size());
  for (const AttentionMask& m : args.masks) problem.masks.push_back(view_mask(m, problem, dtype));

  Tensor output = new_tensor({problem.n, problem.l, problem.out_features()}, dtype, device);
  Tensor weights = new_tensor({problem.n, problem.h, problem.l, problem.s}, dtype, device);  // P
  kernels.fused_attention_forward(problem, args.q.tensor, args.k.tensor, args.v.tensor, weights,
                                  output);

  const Operands ops = distinct_operands(args);
  std::vector<Tensor> saved = ops.inputs;
  saved.push_back(weights);
  std::vector<Tensor*> outputs{&output};
  if (args.need_weights) outputs.push_back(&weights);
  autograd::record(
      kOp, ops.inputs, outputs, saved,
      [problem, ops](const std::vector<Tensor>& grads, const autograd::BackwardContext& ctx) {
        return fused_backward(problem, ops, grads, ctx);
      });
  HeadAttentionResult result;
  result.output = output;
  if (args.need_weights) result.weights = weights;
  return result;
}

}  // namespace headgrad::detail
