// A tiny end-to-end run: a two-layer MLP learns y = tanh(3x) + x^2 from 256 points with
// plain SGD on headgrad tensors, printing the loss every 100 steps so you can watch it fall.
// Exits non-zero if the loss did not fall by at least 10x.
#include <headgrad/headgrad.hpp>

#include <cstdio>

int main() {
  using namespace headgrad;
  manual_seed(0);
  const std::int64_t n = 256, hidden = 32;
  const Tensor x = uniform({n, 1}, -1.0, 1.0);
  const Tensor y = tanh(x * 3.0) + x * x;

  auto param = [](Tensor t) { return t.requires_grad_(true); };
  Tensor w1 = param(uniform({hidden, 1}, -1.0, 1.0));
  Tensor b1 = param(zeros({hidden}));
  Tensor w2 = param(uniform({1, hidden}, -0.2, 0.2));
  Tensor b2 = param(zeros({1}));
  std::vector<Tensor> params{w1, b1, w2, b2};

  const double lr = 0.1;
  double first = 0, last = 0;
  for (int step = 0; step <= 1000; ++step) {
    Tensor prediction = linear(gelu(linear(x, w1, b1)), w2, b2);
    Tensor loss = mse_loss(prediction, y);
    last = loss.item();
    if (step == 0) first = last;
    if (step % 100 == 0) std::printf("step %4d  loss %.6f\n", step, last);
    for (Tensor& p : params) p.zero_grad();
    loss.backward();
    NoGradGuard no_grad;
    for (Tensor& p : params) p.add_(p.grad(), -lr);
  }
  std::printf("loss fell from %.6f to %.6f (%.1fx)\n", first, last, first / last);
  return last * 10 < first ? 0 : 1;
}
