// See gemm_floor.hpp. This file includes <cblas.h> and nothing from xtensor-blas.
#include "gemm_floor.hpp"

#include <cblas.h>

#include <memory>
#include <vector>

namespace bench {

namespace {

// C (m,n) = op(A) (m,k) @ op(B) (k,n), row-major, beta 0, on scratch buffers large enough
// for every call.
struct Gemm {
  bool trans_a, trans_b;
  int m, n, k;
  int count;  // how many times the step runs it
};

}  // namespace

std::function<void()> gpt_gemm_step() {
  const int batch = 32, context = 64, d = 128, heads = 4, ff = 512, layers = 2, vocab = 64;
  const int rows = batch * context, head_dim = d / heads, pairs = batch * heads;
  std::vector<Gemm> gemms;
  // linear y (rows,out) = x (rows,in) W^T; dx = dy W; dW = dy^T x.
  auto linear = [&](int in, int out, int count) {
    gemms.push_back({false, true, rows, out, in, count});
    gemms.push_back({false, false, rows, in, out, count});
    gemms.push_back({true, false, out, in, rows, count});
  };
  linear(d, 3 * d, layers);  // in-projection (q, k, v)
  linear(d, d, layers);      // out-projection
  linear(d, ff, layers);     // feed-forward in
  linear(ff, d, layers);     // feed-forward out
  linear(d, vocab, 1);       // output head
  const int per_pairs = layers * pairs;
  gemms.push_back({false, true, context, context, head_dim, per_pairs});   // scores q k^T
  gemms.push_back({false, false, context, head_dim, context, per_pairs});  // o = P v
  gemms.push_back({false, true, context, context, head_dim, per_pairs});   // dP = do v^T
  gemms.push_back({true, false, context, head_dim, context, per_pairs});   // dv = P^T do
  gemms.push_back({false, false, context, head_dim, context, per_pairs});  // dq = dS k
  gemms.push_back({true, false, context, head_dim, context, per_pairs});   // dk = dS^T q
  auto a = std::make_shared<std::vector<float>>(static_cast<std::size_t>(rows) * ff, 0.5f);
  auto b = std::make_shared<std::vector<float>>(static_cast<std::size_t>(rows) * ff, 0.25f);
  auto c = std::make_shared<std::vector<float>>(static_cast<std::size_t>(rows) * ff, 0.0f);
  return [gemms, a, b, c] {
    for (const Gemm& g : gemms) {
      const int lda = g.trans_a ? g.m : g.k;
      const int ldb = g.trans_b ? g.k : g.n;
      for (int i = 0; i < g.count; ++i)
        cblas_sgemm(CblasRowMajor, g.trans_a ? CblasTrans : CblasNoTrans,
                    g.trans_b ? CblasTrans : CblasNoTrans, g.m, g.n, g.k, 1.0f, a->data(), lda,
                    b->data(), ldb, 0.0f, c->data(), g.n);
    }
  };
}

}  // namespace bench
