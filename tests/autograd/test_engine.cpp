// The backward engine: scalar and explicit-gradient backward and their errors, gradient
// accumulation, fan-out, retain_graph, grad mode guards, retain_grad, hooks, very deep
// graphs (backward and teardown without recursion), release of the graph and its saved
// values (no shared_ptr cycles), in-place modification detection, autograd::grad and
// backward from several roots.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "helpers.hpp"

namespace hg = headgrad;
using hg::Shape;
using hg::Tensor;

namespace {

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

Tensor leaf64(std::initializer_list<double> values) {
  return hg::tensor(values, hg::kFloat64).requires_grad_(true);
}

Tensor scalar64(double value) {
  return hg::scalar_tensor(value, hg::kFloat64).requires_grad_(true);
}

std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

}  // namespace

TEST_CASE("backward from a scalar gives the analytic gradient") {
  Tensor x = leaf64({1.0, -2.0, 3.0});
  Tensor y = leaf64({4.0, 5.0, -6.0});
  // loss = sum(x*y + x^2)  =>  dx = y + 2x, dy = x
  Tensor loss = hg::add(hg::mul(x, y), hg::mul(x, x)).sum();
  CHECK(loss.dim() == 0);
  loss.backward();
  CHECK(values(x.grad()) == std::vector<double>{6.0, 1.0, 0.0});
  CHECK(values(y.grad()) == std::vector<double>{1.0, -2.0, 3.0});
  CHECK(x.grad().dtype() == hg::kFloat64);
  CHECK(x.grad().shape() == x.shape());
  // A one-element tensor that is not 0-d also works.
  Tensor z = scalar64(2.0);
  hg::mul(z, z).reshape({1, 1}).backward();
  CHECK(z.grad().item() == 4.0);
}

TEST_CASE("backward with an explicit upstream gradient computes the vector-Jacobian product") {
  Tensor x = leaf64({1.0, 2.0, 3.0});
  Tensor y = hg::mul(x, x);  // dy/dx = 2x
  y.backward(hg::tensor({1.0, 10.0, 100.0}, hg::kFloat64));
  CHECK(values(x.grad()) == std::vector<double>{2.0, 40.0, 600.0});
}

TEST_CASE("backward on a non-scalar without a gradient is an AutogradError that says so") {
  Tensor x = leaf64({1.0, 2.0});
  Tensor y = hg::mul(x, 2.0);
  CHECK_THROWS_AS(y.backward(), hg::AutogradError);
  const std::string msg = HG_ERROR_MESSAGE(y.backward());
  CHECK(contains(msg, "one-element"));
  CHECK(contains(msg, "(2)"));
  // A gradient of the wrong shape is refused too.
  CHECK_THROWS_AS(y.backward(hg::zeros({3}, hg::kFloat64)), hg::AutogradError);
  CHECK_THROWS_AS(y.backward(hg::zeros({2}, hg::kFloat32)), hg::AutogradError);
  CHECK_FALSE(x.grad().defined());
}

TEST_CASE("backward on a tensor that does not require grad is an AutogradError") {
  Tensor c = hg::tensor({1.0}, hg::kFloat64);
  CHECK_THROWS_AS(c.backward(), hg::AutogradError);
  CHECK(contains(HG_ERROR_MESSAGE(c.backward()), "does not require grad"));
  CHECK_THROWS_AS(hg::mul(c, 3.0).backward(), hg::AutogradError);
}

TEST_CASE("gradients accumulate in leaves across backward calls until zero_grad") {
  Tensor x = scalar64(3.0);
  hg::mul(x, x).backward();  // d/dx x^2 at 3 = 6
  CHECK(x.grad().item() == 6.0);
  hg::mul(x, x).backward();
  CHECK(x.grad().item() == 12.0);
  x.zero_grad();
  CHECK_FALSE(x.grad().defined());
  hg::mul(x, x).backward();
  CHECK(x.grad().item() == 6.0);
}

TEST_CASE("a leaf used several times receives the sum of its gradients") {
  Tensor x = scalar64(3.0);
  hg::add(x, x).backward();
  CHECK(x.grad().item() == 2.0);
  x.zero_grad();
  // y = x*x + x*5 + x  =>  dy/dx = 2x + 6 = 12
  Tensor y = hg::add(hg::add(hg::mul(x, x), hg::mul(x, 5.0)), x);
  y.backward();
  CHECK(x.grad().item() == 12.0);
  x.zero_grad();
  // Diamond through a shared intermediate: h = 2x, y = h*h + h  =>  dy/dx = 2*(2h + 1) = 26
  Tensor h = hg::mul(x, 2.0);
  hg::add(hg::mul(h, h), h).backward();
  CHECK(x.grad().item() == 26.0);
}

TEST_CASE(
    "retain_graph allows a second backward, and without it the second one names retain_graph") {
  Tensor x = scalar64(2.0);
  Tensor y = hg::mul(hg::exp(x), x);  // dy/dx = e^x (x + 1)
  const double expected = std::exp(2.0) * 3.0;
  y.backward(Tensor(), /*retain_graph=*/true);
  CHECK(x.grad().item() == doctest::Approx(expected));
  y.backward();
  CHECK(x.grad().item() == doctest::Approx(2 * expected));
  CHECK_THROWS_AS(y.backward(), hg::AutogradError);
  CHECK(contains(HG_ERROR_MESSAGE(y.backward()), "retain_graph"));
  CHECK(x.grad().item() == doctest::Approx(2 * expected));  // the failed call added nothing
}

TEST_CASE(
    "NoGradGuard records no graph and restores grad mode and GradModeGuard sets and restores") {
  Tensor x = leaf64({1.0, 2.0});
  CHECK(hg::is_grad_enabled());
  {
    hg::NoGradGuard no_grad;
    CHECK_FALSE(hg::is_grad_enabled());
    Tensor y = hg::exp(hg::mul(x, x));
    CHECK(y.grad_fn() == nullptr);
    CHECK_FALSE(y.requires_grad());
    CHECK(y.is_leaf());
    {
      hg::GradModeGuard enable(true);
      CHECK(hg::is_grad_enabled());
      Tensor z = hg::mul(x, 2.0);
      CHECK(z.grad_fn() != nullptr);
      CHECK(z.requires_grad());
    }
    CHECK_FALSE(hg::is_grad_enabled());
  }
  CHECK(hg::is_grad_enabled());
  {
    hg::GradModeGuard disable(false);
    CHECK_FALSE(hg::is_grad_enabled());
    {
      hg::NoGradGuard nested;
      CHECK_FALSE(hg::is_grad_enabled());
    }
    CHECK_FALSE(hg::is_grad_enabled());
    CHECK(hg::mul(x, 2.0).grad_fn() == nullptr);
  }
  CHECK(hg::is_grad_enabled());
  hg::set_grad_enabled(false);
  CHECK(hg::mul(x, 2.0).grad_fn() == nullptr);
  hg::set_grad_enabled(true);
  CHECK(hg::mul(x, 2.0).grad_fn() != nullptr);
}

TEST_CASE("retain_grad keeps a non-leaf's gradient and without it a non-leaf has none") {
  Tensor x = leaf64({1.0, -3.0});
  Tensor h = hg::mul(x, 2.0);
  Tensor k = hg::mul(x, 3.0);
  h.retain_grad();
  CHECK(h.retains_grad());
  CHECK_FALSE(k.retains_grad());
  hg::add(hg::mul(h, h), k).sum().backward();  // d/dh = 2h
  REQUIRE(h.grad().defined());
  CHECK(values(h.grad()) == std::vector<double>{4.0, -12.0});
  CHECK_FALSE(k.grad().defined());
  CHECK(values(x.grad()) == std::vector<double>{2 * 4.0 + 3, 2 * -12.0 + 3});
}

TEST_CASE("a hook on a leaf sees its gradient and can replace it and remove_hook stops it") {
  Tensor x = leaf64({1.0, 2.0});
  std::vector<double> seen;
  const std::size_t reader = x.register_hook([&seen](const Tensor& g) {
    seen = g.to_vector<double>();
    return Tensor();  // keep the gradient
  });
  hg::mul(x, x).sum().backward();
  CHECK(seen == std::vector<double>{2.0, 4.0});
  CHECK(values(x.grad()) == std::vector<double>{2.0, 4.0});
  x.remove_hook(reader);
  x.zero_grad();

  const std::size_t doubler = x.register_hook([](const Tensor& g) { return hg::mul(g, 2.0); });
  seen.clear();
  hg::mul(x, x).sum().backward();
  CHECK(seen.empty());  // the removed reader did not run
  CHECK(values(x.grad()) == std::vector<double>{4.0, 8.0});
  x.remove_hook(doubler);
  x.zero_grad();
  hg::mul(x, x).sum().backward();
  CHECK(values(x.grad()) == std::vector<double>{2.0, 4.0});
}

TEST_CASE(
    "a hook on a non-leaf can read and replace its gradient, and the replacement reaches the "
    "leaves") {
  Tensor x = leaf64({1.0, 2.0});
  Tensor h = hg::mul(x, 3.0);
  std::vector<double> seen;
  h.register_hook([&seen](const Tensor& g) {
    seen = g.to_vector<double>();
    return hg::mul(g, 2.0);
  });
  h.retain_grad();
  hg::mul(h, h).sum().backward();  // d/dh = 2h = (6, 12); doubled (12, 24); dx = 3 * that
  CHECK(seen == std::vector<double>{6.0, 12.0});
  CHECK(values(x.grad()) == std::vector<double>{36.0, 72.0});
  CHECK(values(h.grad()) == std::vector<double>{12.0, 24.0});  // retained after the hook

  Tensor y = leaf64({1.0});
  Tensor g = hg::mul(y, 1.0);
  const std::size_t id = g.register_hook([](const Tensor& grad) { return hg::mul(grad, 10.0); });
  g.remove_hook(id);
  g.sum().backward();
  CHECK(y.grad().item() == 1.0);
}

TEST_CASE("a hook that returns a gradient of the wrong shape is an AutogradError") {
  Tensor x = leaf64({1.0, 2.0});
  Tensor h = hg::mul(x, 3.0);
  h.register_hook([](const Tensor&) { return hg::zeros({5}, hg::kFloat64); });
  CHECK_THROWS_AS(h.sum().backward(), hg::AutogradError);
  Tensor w = leaf64({1.0, 2.0});
  w.register_hook([](const Tensor& g) { return g.to(hg::kFloat32); });
  CHECK_THROWS_AS(hg::mul(w, w).sum().backward(), hg::AutogradError);
  CHECK(contains(HG_ERROR_MESSAGE(hg::mul(w, w).sum().backward()), "(2)"));
  // Hooks need a tensor that requires grad.
  Tensor c = hg::zeros({2});
  CHECK_THROWS_AS(c.register_hook([](const Tensor& g) { return g; }), hg::AutogradError);
}

TEST_CASE("a 100,000-op chain backpropagates and is destroyed without overflowing the stack") {
  constexpr int kDepth = 100000;
  constexpr double kFactor = 1.0000001;
  const double expected = std::pow(kFactor, kDepth);  // d/dx of x * f^n
  Tensor x = scalar64(1.0);
  SUBCASE("multiplicative chain: backward, then release") {
    Tensor y = x;
    for (int i = 0; i < kDepth; ++i) y = hg::mul(y, kFactor);
    y.backward();
    CHECK(x.grad().item() == doctest::Approx(expected).epsilon(1e-9));
  }
  SUBCASE("additive chain kept alive by retain_graph, then destroyed") {
    Tensor y = x;
    for (int i = 0; i < kDepth; ++i) y = hg::add(y, 0.0);
    y.backward(Tensor(), /*retain_graph=*/true);
    CHECK(x.grad().item() == 1.0);
    y = Tensor();  // tears down 100,000 nodes still linked to each other
    CHECK(y.defined() == false);
  }
  SUBCASE("a chain dropped without any backward") {
    // 300,000 nodes: deep enough that a recursive teardown overflows an 8 MiB stack even
    // in an optimized build without sanitizers.
    constexpr int kTeardownDepth = 300000;
    std::weak_ptr<hg::autograd::Node> first_node;
    {
      Tensor y = hg::mul(x, kFactor);
      first_node = y.grad_fn();
      for (int i = 1; i < kTeardownDepth; ++i) y = hg::mul(y, kFactor);
    }
    CHECK(first_node.expired());
  }
}

TEST_CASE("values saved for backward are freed after backward once the user's handles are gone") {
  Tensor x = leaf64({0.5, 1.5});
  std::weak_ptr<hg::Storage> saved_storage;
  std::weak_ptr<hg::autograd::Node> exp_node;
  Tensor loss;
  {
    Tensor h = hg::exp(x);  // exp saves its output
    saved_storage = h.impl()->storage;
    exp_node = h.grad_fn();
    loss = hg::mul(h, 2.0).sum();
  }
  CHECK_FALSE(saved_storage.expired());  // still needed by the graph
  CHECK_FALSE(exp_node.expired());
  loss.backward();
  CHECK(saved_storage.expired());  // freed by backward
  CHECK(exp_node.expired());
  CHECK(values(x.grad())[0] == doctest::Approx(2 * std::exp(0.5)));
}

TEST_CASE("dropping the loss frees every node and saved value: the graph has no cycles") {
  Tensor x = leaf64({0.5, 1.5});
  Tensor w = leaf64({2.0, -1.0});
  std::weak_ptr<hg::autograd::Node> loss_node;
  std::weak_ptr<hg::autograd::Node> inner_node;
  std::weak_ptr<hg::Storage> saved_storage;
  {
    Tensor h = hg::exp(hg::mul(x, w));
    h.retain_grad();
    h.register_hook([](const Tensor& g) { return g; });
    saved_storage = h.impl()->storage;
    inner_node = h.grad_fn();
    Tensor loss = hg::mul(h, h).sum();
    loss_node = loss.grad_fn();
    loss.backward(Tensor(), /*retain_graph=*/true);  // graph kept alive on purpose
    CHECK_FALSE(loss_node.expired());
  }
  CHECK(loss_node.expired());
  CHECK(inner_node.expired());
  CHECK(saved_storage.expired());
  CHECK(x.grad().defined());  // leaves outlive the graph
  // Leaves are not kept alive by their gradient accumulators either.
  std::weak_ptr<hg::TensorImpl> leaf_impl;
  {
    Tensor v = leaf64({1.0});
    leaf_impl = v.impl_ptr();
    Tensor dangling = hg::mul(v, v);  // a graph that is never run
  }
  CHECK(leaf_impl.expired());
}

TEST_CASE("modifying a value saved for backward in place makes backward an AutogradError") {
  Tensor x = leaf64({1.0, 2.0});
  Tensor y = hg::exp(x);  // saves y
  {
    hg::NoGradGuard no_grad;
    y.mul_(2.0);
  }
  CHECK_THROWS_AS(y.sum().backward(), hg::AutogradError);
  Tensor y2 = hg::exp(x);
  Tensor loss = y2.sum();
  {
    hg::NoGradGuard no_grad;
    y2.set_at({0}, 5.0);
  }
  const std::string msg = HG_ERROR_MESSAGE(loss.backward());
  CHECK(contains(msg, "in-place"));
  CHECK(contains(msg, "exp"));
  // The classic optimizer mistake: updating a saved leaf between forward and backward.
  Tensor w = leaf64({1.0, 1.0});
  Tensor product = hg::mul(x, w).sum();  // mul saves both inputs
  {
    hg::NoGradGuard no_grad;
    w.mul_(0.5);
  }
  CHECK_THROWS_AS(product.backward(), hg::AutogradError);
  // Writing to a tensor that was never saved is harmless.
  Tensor z = hg::mul(x, 3.0);  // scalar mul saves nothing
  {
    hg::NoGradGuard no_grad;
    z.mul_(2.0);
  }
  CHECK_NOTHROW(z.sum().backward());
}

TEST_CASE("autograd::grad returns gradients without touching .grad") {
  Tensor x = leaf64({1.0, 2.0});
  Tensor y = leaf64({3.0, 4.0});
  Tensor unused = leaf64({0.0});
  Tensor out = hg::mul(hg::mul(x, x), y).sum();  // dx = 2xy, dy = x^2
  auto grads = hg::autograd::grad({out}, {x, y, unused});
  REQUIRE(grads.size() == 3);
  CHECK(values(grads[0]) == std::vector<double>{6.0, 16.0});
  CHECK(values(grads[1]) == std::vector<double>{1.0, 4.0});
  CHECK_FALSE(grads[2].defined());
  CHECK_FALSE(x.grad().defined());
  CHECK_FALSE(y.grad().defined());
  // With respect to an intermediate, with an explicit upstream gradient.
  Tensor h = hg::mul(x, 3.0);
  Tensor v = hg::mul(h, h);
  auto gh = hg::autograd::grad({v}, {h}, {hg::tensor({1.0, -1.0}, hg::kFloat64)});
  CHECK(values(gh[0]) == std::vector<double>{6.0, -12.0});
  CHECK_FALSE(x.grad().defined());
  CHECK_THROWS_AS(hg::autograd::grad({out}, {hg::zeros({1})}), hg::AutogradError);
}

TEST_CASE("run_backward from several roots sums their contributions in one pass") {
  Tensor x = leaf64({1.0, 2.0});
  Tensor a = hg::mul(x, x).sum();             // da/dx = 2x
  Tensor b = hg::mul(x, 5.0);                 // non-scalar root with explicit gradient
  Tensor c = hg::exp(hg::mul(x, 0.0)).sum();  // dc/dx = 0
  hg::autograd::run_backward({a, b, c}, {Tensor(), hg::tensor({1.0, 2.0}, hg::kFloat64), Tensor()},
                             /*retain_graph=*/false);
  CHECK(values(x.grad()) == std::vector<double>{2.0 + 5.0, 4.0 + 10.0});
  CHECK_THROWS_AS(hg::autograd::run_backward({a}, {}, false), hg::AutogradError);
}

TEST_CASE("run_backward with a root that another root depends on counts it once per path") {
  Tensor x = scalar64(2.0);
  Tensor y = hg::mul(x, x);    // dy/dx = 2x = 4
  Tensor z = hg::mul(y, 3.0);  // dz/dx = 3 * 4 = 12
  hg::autograd::run_backward({y, z}, {Tensor(), Tensor()}, /*retain_graph=*/false);
  CHECK(x.grad().item() == 16.0);
}

TEST_CASE("a custom op recorded with autograd::record joins the graph") {
  Tensor x = leaf64({1.0, 2.0, 3.0});
  // cube(x) = x^3, dx = 3 x^2 g
  Tensor out;
  {
    hg::NoGradGuard no_grad;
    out = hg::mul(hg::mul(x, x), x);
  }
  hg::autograd::record(
      "cube", {x}, {&out}, {x},
      [](const std::vector<Tensor>& g, const hg::autograd::BackwardContext& ctx) {
        const Tensor& saved = ctx.saved(0);
        return std::vector<Tensor>{hg::mul(hg::mul(hg::mul(saved, saved), 3.0), g[0])};
      });
  REQUIRE(out.grad_fn() != nullptr);
  CHECK(out.grad_fn()->name() == "cube");
  out.sum().backward();
  CHECK(values(x.grad()) == std::vector<double>{3.0, 12.0, 27.0});
  // A backward returning the wrong number of gradients is an AutogradError.
  Tensor bad = hg::zeros({3}, hg::kFloat64);
  hg::autograd::record("bad", {x}, {&bad}, {},
                       [](const std::vector<Tensor>&, const hg::autograd::BackwardContext&) {
                         return std::vector<Tensor>{};
                       });
  CHECK_THROWS_AS(bad.sum().backward(), hg::AutogradError);
}

TEST_CASE("autograd::grad of a leaf with respect to itself is the upstream gradient") {
  Tensor x = headgrad::randn({2, 3}, headgrad::kFloat64).requires_grad_(true);
  Tensor v = headgrad::randn({2, 3}, headgrad::kFloat64);
  std::vector<Tensor> g = headgrad::autograd::grad({x}, {x}, {v});
  REQUIRE(g[0].defined());
  CHECK(g[0].to_vector<double>() == v.to_vector<double>());
  CHECK_FALSE(x.grad().defined());
}

TEST_CASE("autograd::grad runs and frees only the part of the graph that leads to its inputs") {
  Tensor x = headgrad::randn({3}, headgrad::kFloat64).requires_grad_(true);
  Tensor h = headgrad::exp(x);
  Tensor a = headgrad::sum(headgrad::mul(h, h));
  Tensor b = headgrad::sum(headgrad::mul(h, 3.0));
  // d a / d h = 2h; exp (below h) is neither run nor freed, so b can still backpropagate
  std::vector<Tensor> g = headgrad::autograd::grad({a}, {h});
  REQUIRE(g[0].defined());
  auto hv = h.to_vector<double>();
  auto gv = g[0].to_vector<double>();
  for (std::size_t i = 0; i < hv.size(); ++i) CHECK(gv[i] == doctest::Approx(2 * hv[i]));
  CHECK_FALSE(x.grad().defined());
  b.backward();
  auto xg = x.grad().to_vector<double>();
  for (std::size_t i = 0; i < hv.size(); ++i) CHECK(xg[i] == doctest::Approx(3 * hv[i]));
}

TEST_CASE("autograd::grad neither fills retained gradients nor leaf gradients") {
  Tensor x = headgrad::randn({3}, headgrad::kFloat64).requires_grad_(true);
  Tensor h = headgrad::mul(x, 2.0);
  h.retain_grad();
  std::vector<Tensor> g = headgrad::autograd::grad({headgrad::sum(headgrad::mul(h, h))}, {x});
  REQUIRE(g[0].defined());
  CHECK_FALSE(h.grad().defined());
  CHECK_FALSE(x.grad().defined());
}

TEST_CASE("record rejects undefined outputs and missing backward functions, naming the op") {
  Tensor x = headgrad::randn({2}, headgrad::kFloat64).requires_grad_(true);
  Tensor undefined;
  auto backward = [](const std::vector<Tensor>& g, const headgrad::autograd::BackwardContext&) {
    return std::vector<Tensor>{g[0]};
  };
  CHECK_THROWS_AS(headgrad::autograd::record("my_op", {x}, {&undefined}, {}, backward),
                  headgrad::AutogradError);
  CHECK(HG_ERROR_MESSAGE(headgrad::autograd::record("my_op", {x}, {&undefined}, {}, backward))
            .find("my_op") != std::string::npos);
  Tensor out = headgrad::zeros({2}, headgrad::kFloat64);
  CHECK_THROWS_AS(headgrad::autograd::record("my_op", {x}, {&out}, {}, nullptr),
                  headgrad::AutogradError);
}

TEST_CASE("a backward asking for a saved value that was not saved is an AutogradError") {
  Tensor x = headgrad::randn({2}, headgrad::kFloat64).requires_grad_(true);
  Tensor out = headgrad::mul(x.detach(), 2.0);
  headgrad::autograd::record(
      "greedy_op", {x}, {&out}, {x},
      [](const std::vector<Tensor>& g, const headgrad::autograd::BackwardContext& ctx) {
        return std::vector<Tensor>{headgrad::mul(g[0], ctx.saved(1))};
      });
  const std::string msg = HG_ERROR_MESSAGE(headgrad::sum(out).backward());
  CHECK(msg.find("greedy_op") != std::string::npos);
  CHECK(msg.find("saved value 1") != std::string::npos);
}

TEST_CASE(
    "a post-accumulate-grad hook sees the leaf after its gradient was accumulated, once per "
    "backward") {
  using namespace headgrad;
  Tensor w = ones({2, 2}, TensorOptions(kFloat64).requires_grad());
  std::vector<double> seen;
  const std::size_t id = w.register_post_accumulate_grad_hook([&seen](const Tensor& leaf) {
    seen.push_back(leaf.grad().at({0, 0}));
  });
  // w used twice: the hook runs once, with both contributions summed into grad().
  ((w * 3.0).sum() + (w * 4.0).sum()).backward();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0] == 7.0);
  (w * 2.0).sum().backward();  // accumulates: 7 + 2
  REQUIRE(seen.size() == 2);
  CHECK(seen[1] == 9.0);
  w.remove_hook(id);
  (w * 2.0).sum().backward();
  CHECK(seen.size() == 2);
  // autograd::grad accumulates nothing, so the hook does not run.
  const std::size_t again =
      w.register_post_accumulate_grad_hook([&seen](const Tensor&) { seen.push_back(-1); });
  autograd::grad({(w * 5.0).sum()}, {w});
  CHECK(seen.size() == 2);
  w.remove_hook(again);
  Tensor nonleaf = w * 2.0;
  CHECK_THROWS_AS(nonleaf.register_post_accumulate_grad_hook([](const Tensor&) {}), AutogradError);
  Tensor plain = ones({2});
  CHECK_THROWS_AS(plain.register_post_accumulate_grad_hook([](const Tensor&) {}), AutogradError);
}

TEST_CASE(
    "queue_callback runs after every gradient of the backward is accumulated, in queue order") {
  using namespace headgrad;
  Tensor a = ones({3}, TensorOptions(kFloat64).requires_grad());
  Tensor b = ones({3}, TensorOptions(kFloat64).requires_grad());
  std::vector<std::string> events;
  a.register_post_accumulate_grad_hook([&](const Tensor&) {
    events.push_back("a");
    autograd::queue_callback([&] {
      // Both leaves' gradients are in place when the callback runs.
      events.push_back(b.grad().defined() && a.grad().defined() ? "first" : "too early");
      autograd::queue_callback([&] { events.push_back("queued by a callback"); });
    });
  });
  b.register_post_accumulate_grad_hook([&](const Tensor&) { events.push_back("b"); });
  (a * b * 2.0).sum().backward();
  REQUIRE(events.size() == 4);
  CHECK(events[2] == "first");
  CHECK(events[3] == "queued by a callback");
  CHECK_THROWS_AS(autograd::queue_callback([] {}), AutogradError);  // no backward running
}
