// Trains y = 3x - 1 for a few steps with the installed headgrad and checks the loss fell.
#include <headgrad/headgrad.hpp>

#include <iostream>

int main() {
  using namespace headgrad;
  manual_seed(0);
  Tensor x = randn({64, 1});
  Tensor y = x * 3.0 - 1.0;
  Tensor w = zeros({1, 1}, TensorOptions().requires_grad());
  Tensor b = zeros({1}, TensorOptions().requires_grad());
  double first = 0, last = 0;
  for (int step = 0; step < 50; ++step) {
    Tensor loss = mse_loss(linear(x, w, b), y);
    if (step == 0) first = loss.item();
    last = loss.item();
    w.zero_grad();
    b.zero_grad();
    loss.backward();
    NoGradGuard no_grad;
    w.add_(w.grad(), -0.1);
    b.add_(b.grad(), -0.1);
  }
  std::cout << "consumer: loss " << first << " -> " << last << "\n";
  return last < 0.01 * first ? 0 : 1;
}
