// GPU tensors themselves: copies to and from the GPU (bitwise, every dtype), factories with
// a device, copy_ and dtype conversion across devices, element access, in-place writes,
// to(Device) in the graph, modules moved to the GPU, errors for mixed devices and missing
// GPUs, the caching allocator, and bitwise reproducibility run to run.
//
// The cases in the test suite "gpu_only" test the device itself and are left out of the
// CPU self-check (parity.hpp).
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "parity.hpp"

namespace hg = headgrad;
namespace nn = headgrad::nn;
using hg::Shape;
using hg::Tensor;
using hg::TensorOptions;
using namespace hg::cuda_testing;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TensorOptions on_gpu(hg::DType dtype) { return TensorOptions(dtype).device(gpu()); }

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("tensors copied to the GPU and back are bitwise equal for every dtype and shape" *
          doctest::test_suite("gpu_only")) {
  const double denormal = std::numeric_limits<double>::denorm_min();
  const float denormal32 = std::numeric_limits<float>::denorm_min();
  std::vector<Tensor> tensors = {
      hg::from_vector<double>({0.0, -0.0, kInf, -kInf, kNaN, denormal, 1e308, -1.5}, {2, 4}),
      hg::from_vector<float>({0.0f, -0.0f, INFINITY, -INFINITY, NAN, denormal32, 3e38f, 1.25f},
                             {8}),
      hg::from_vector<std::int64_t>({std::numeric_limits<std::int64_t>::min(), -1, 0, 1,
                                     std::numeric_limits<std::int64_t>::max()},
                                    {5, 1}),
      hg::from_vector<bool>({true, false, false, true, true, false}, {3, 2}),
      hg::scalar_tensor(3.5, hg::kFloat64),  // 0-d
      hg::zeros({0, 3}, hg::kFloat32),       // empty
      random({(1 << 20) + 3}, 1500),         // more than one copy chunk
      random_indices({7, 11, 13}, -1000, 1000, 1501)};
  for (const Tensor& t : tensors) {
    const std::string name = t.describe();
    CAPTURE(name);
    const Tensor g = t.to(gpu());
    CHECK(g.device() == hg::Device::cuda(0));
    CHECK(g.shape() == t.shape());
    CHECK(g.dtype() == t.dtype());
    const Tensor back = g.to(hg::Device::cpu());
    CHECK(back.device() == hg::Device::cpu());
    CHECK(bitwise_equal(back, t));
    // A copy on the GPU (clone, detach) stays there and keeps the bits.
    CHECK(g.clone().device() == gpu());
    CHECK(g.detach().device() == gpu());
    CHECK(bitwise_equal(g.clone(), t));
    // Moving to the device it is on already gives the same tensor.
    CHECK(g.to(gpu()).impl() == g.impl());
  }
}

TEST_CASE("factories with a GPU device make GPU tensors, random ones with the CPU's values") {
  for (hg::DType dtype : {hg::kFloat32, hg::kFloat64, hg::kInt64, hg::kBool}) {
    CAPTURE(hg::to_string(dtype));
    const auto opts = on_gpu(dtype);
    auto check = [&](const Tensor& made, const Tensor& expected, const char* what) {
      INFO(what);
      CHECK(made.device() == gpu());
      CHECK(made.dtype() == dtype);
      CHECK(bitwise_equal(made, expected));
    };
    check(hg::zeros({3, 4}, opts), hg::zeros({3, 4}, dtype), "zeros");
    check(hg::ones({5}, opts), hg::ones({5}, dtype), "ones");
    check(hg::full({2, 3}, 7.0, opts), hg::full({2, 3}, 7.0, dtype), "full");
    check(hg::scalar_tensor(1.0, opts), hg::scalar_tensor(1.0, dtype), "scalar_tensor");
    check(hg::zeros({0, 2}, opts), hg::zeros({0, 2}, dtype), "empty zeros");
    check(hg::full({1 << 20}, 1.0, opts), hg::full({1 << 20}, 1.0, dtype), "a large full");
    const Tensor e = hg::empty({4, 2}, opts);
    CHECK(e.device() == gpu());
    CHECK(e.shape() == Shape{4, 2});
    if (dtype != hg::kBool) {
      check(hg::arange(10.0, opts), hg::arange(10.0, dtype), "arange");
      check(hg::arange(-3.0, 9.0, 2.0, opts), hg::arange(-3.0, 9.0, 2.0, dtype), "arange step");
    }
  }
  for (hg::DType dtype : {hg::kFloat32, hg::kFloat64}) {
    CAPTURE(hg::to_string(dtype));
    hg::Generator g1(21), g2(21);
    CHECK(bitwise_equal(hg::rand({3, 7}, on_gpu(dtype), &g1), hg::rand({3, 7}, dtype, &g2)));
    CHECK(bitwise_equal(hg::randn({65}, on_gpu(dtype), &g1), hg::randn({65}, dtype, &g2)));
    CHECK(bitwise_equal(hg::uniform({4, 4}, -2, 3, on_gpu(dtype), &g1),
                        hg::uniform({4, 4}, -2, 3, dtype, &g2)));
    CHECK(bitwise_equal(hg::normal({9}, 1, 0.5, on_gpu(dtype), &g1),
                        hg::normal({9}, 1, 0.5, dtype, &g2)));
    CHECK(bitwise_equal(hg::from_vector<double>({1, 2, 3}, {3}, on_gpu(dtype)),
                        hg::from_vector<double>({1, 2, 3}, {3}, dtype)));
    CHECK(bitwise_equal(hg::tensor({4, 5}, on_gpu(dtype)), hg::tensor({4, 5}, dtype)));
    // requires_grad in the options makes a GPU leaf.
    const Tensor leaf = hg::zeros({2}, on_gpu(dtype).requires_grad());
    CHECK(leaf.requires_grad());
    CHECK(leaf.is_leaf());
    CHECK(leaf.device() == gpu());
  }
  hg::Generator g1(22), g2(22);
  CHECK(bitwise_equal(hg::randint(-5, 5, {4, 6}, on_gpu(hg::kInt64), &g1),
                      hg::randint(-5, 5, {4, 6}, hg::kInt64, &g2)));
  // *_like factories follow the tensor onto its device.
  const Tensor x = to_gpu(random({3, 2}, 1510));
  for (const Tensor& like :
       {hg::zeros_like(x), hg::ones_like(x), hg::empty_like(x), hg::full_like(x, 2.5)}) {
    CHECK(like.device() == gpu());
    CHECK(like.shape() == x.shape());
    CHECK(like.dtype() == x.dtype());
  }
  CHECK(bitwise_equal(hg::full_like(x, 2.5), hg::full({3, 2}, 2.5, hg::kFloat64)));
}

TEST_CASE("copy_ and to(dtype) on the GPU convert and copy as on the CPU, across devices") {
  const Tensor src = hg::mul(random({4, 5}, 1520), 50.0);  // fractional parts to truncate
  for (hg::DType from : {hg::kFloat64, hg::kFloat32, hg::kInt64, hg::kBool}) {
    for (hg::DType to : {hg::kFloat64, hg::kFloat32, hg::kInt64, hg::kBool}) {
      CAPTURE(hg::to_string(from));
      CAPTURE(hg::to_string(to));
      const Tensor cpu_src = src.to(from);
      const Tensor expected = cpu_src.to(to);
      const Tensor converted = to_gpu(cpu_src).to(to);
      CHECK(converted.device() == gpu());
      CHECK(bitwise_equal(converted, expected));
      // copy_ into a GPU tensor from the CPU and from the GPU, and into a CPU tensor from
      // the GPU: converted to the destination's dtype in every case.
      Tensor dst = hg::zeros({4, 5}, on_gpu(to));
      dst.copy_(cpu_src);
      CHECK(bitwise_equal(dst, expected));
      dst.zero_();
      dst.copy_(to_gpu(cpu_src));
      CHECK(bitwise_equal(dst, expected));
      Tensor host = hg::zeros({4, 5}, to);
      host.copy_(to_gpu(cpu_src));
      CHECK(bitwise_equal(host, expected));
    }
  }
}

TEST_CASE("item, at, set_at and to_vector read and write GPU tensors") {
  const Tensor cpu = hg::from_vector<double>({1.5, -2.0, 3.25, 4.0, -5.5, 6.0}, {2, 3});
  Tensor g = to_gpu(cpu);
  CHECK(g.at({1, 2}) == 6.0);
  CHECK(g.at({-1, 0}) == 4.0);
  CHECK(g.to_vector<double>() == cpu.to_vector<double>());
  CHECK(g.to_vector<float>() == cpu.to_vector<float>());
  CHECK(g.to_vector<std::int64_t>() == cpu.to_vector<std::int64_t>());
  CHECK(g.to_vector<bool>() == cpu.to_vector<bool>());
  g.set_at({0, 1}, 42.0);
  CHECK(g.at({0, 1}) == 42.0);
  CHECK(to_cpu(g).at({0, 1}) == 42.0);
  CHECK(g.at({0, 0}) == 1.5);  // the neighbours are untouched
  CHECK(g.at({0, 2}) == 3.25);
  CHECK(hg::sum(g).item() == doctest::Approx(1.5 + 42.0 + 3.25 + 4.0 - 5.5 + 6.0));
  CHECK(to_gpu(hg::scalar_tensor(2.5, hg::kFloat32)).item<float>() == 2.5f);
  CHECK(to_gpu(hg::scalar_tensor(-7, hg::kInt64)).item<std::int64_t>() == -7);
  CHECK(to_gpu(hg::scalar_tensor(1, hg::kBool)).item<bool>());
  CHECK(to_gpu(hg::scalar_tensor(0.125, hg::kFloat64)).item<double>() == 0.125);
}

TEST_CASE("in-place writes on GPU tensors give the CPU's values") {
  for (hg::DType dtype : {hg::kFloat32, hg::kFloat64}) {
    CAPTURE(hg::to_string(dtype));
    Tensor c = random({6, 7}, 1530).to(dtype);
    Tensor g = to_gpu(c);
    const Tensor row = random({7}, 1531).to(dtype);
    c.add_(row, -0.5);  // broadcast
    g.add_(to_gpu(row), -0.5);
    CHECK(bitwise_equal(g, c));
    c.mul_(3.0);
    g.mul_(3.0);
    CHECK(bitwise_equal(g, c));
    c.add_(c);
    g.add_(g);  // aliasing
    CHECK(bitwise_equal(g, c));
    g.fill_(-1.25);
    CHECK(bitwise_equal(g, hg::full({6, 7}, -1.25, dtype)));
    g.zero_();
    CHECK(bitwise_equal(g, hg::zeros({6, 7}, dtype)));
    // Optimizer-style updates of a GPU leaf under NoGradGuard.
    Tensor leaf = copy_to(c, gpu(), true);
    {
      hg::NoGradGuard no_grad;
      leaf.add_(to_gpu(row), 2.0);
    }
    c.add_(row, 2.0);
    CHECK(bitwise_equal(leaf, c));
  }
}

TEST_CASE("to(Device) is differentiable: gradients flow back to the source device") {
  const Tensor w = random({3, 4}, 1540);
  // CPU leaf, loss on the GPU.
  Tensor x = grad_input(random({3, 4}, 1541));
  hg::sum(hg::mul(x.to(gpu()), to_gpu(w))).backward();
  REQUIRE(x.grad().defined());
  CHECK(x.grad().device() == hg::Device::cpu());
  CHECK(bitwise_equal(x.grad(), w));
  // GPU leaf, loss on the CPU.
  Tensor y = copy_to(random({3, 4}, 1542), gpu(), true);
  hg::sum(hg::mul(y.to(hg::Device::cpu()), w)).backward();
  REQUIRE(y.grad().defined());
  CHECK(y.grad().device() == gpu());
  CHECK(bitwise_equal(y.grad(), w));
}

TEST_CASE("a module moved to the GPU keeps its handles, and moving it back restores it bitwise") {
  hg::Generator gen(5);
  nn::Linear linear(6, 4, true, &gen);
  const nn::StateDict before = linear.state_dict();
  const auto handle = linear.weight.impl();
  linear.to(gpu());
  CHECK(linear.weight.impl() == handle);  // the same tensor, now on the GPU
  CHECK(linear.device() == gpu());
  for (const auto& [name, p] : linear.named_parameters()) {
    CAPTURE(name);
    CHECK(p.device() == gpu());
    CHECK(p.requires_grad());
    CHECK(p.is_leaf());
    CHECK(bitwise_equal(p, before.at(name)));
  }
  const Tensor x = to_gpu(random({2, 6}, 1550).to(hg::kFloat32));
  hg::sum(linear.forward(x)).backward();
  CHECK(linear.weight.grad().device() == gpu());
  linear.to(hg::Device::cpu());
  for (const auto& [name, p] : linear.named_parameters()) {
    CAPTURE(name);
    CHECK(p.device() == hg::Device::cpu());
    CHECK(bitwise_equal(p, before.at(name)));
  }
}

TEST_CASE("an op mixing CPU and GPU tensors throws DeviceError naming the op and both devices" *
          doctest::test_suite("gpu_only")) {
  const Tensor c = random({3, 3}, 1560);
  const Tensor g = to_gpu(random({3, 3}, 1561));
  const Tensor cpu_mask = random_mask({3, 3}, 0.5, 1562);
  const Tensor cpu_idx = hg::from_vector<std::int64_t>({0, 2}, {2});
  struct Mixed {
    const char* op;
    std::function<Tensor()> run;
  };
  const std::vector<Mixed> cases = {
      {"add", [&] { return hg::add(c, g); }},
      {"mul", [&] { return hg::mul(g, c); }},
      {"maximum", [&] { return hg::maximum(g, c); }},
      {"matmul", [&] { return hg::matmul(c, g); }},
      {"linear", [&] { return hg::linear(g, c); }},
      {"concat",
       [&] {
         return hg::concat({g, c}, 0);
       }},
      {"where", [&] { return hg::where(to_gpu(cpu_mask), g, c); }},
      {"masked_fill", [&] { return hg::masked_fill(g, cpu_mask, 0.0); }},
      {"index_select", [&] { return hg::index_select(g, 0, cpu_idx); }},
      {"embedding", [&] { return hg::embedding(g, cpu_idx); }},
      {"cross_entropy",
       [&] {
         return hg::cross_entropy(g, hg::from_vector<std::int64_t>({0, 1, 2}, {3}));
       }},
      {"layer_norm", [&] { return hg::layer_norm(g, {3}, random({3}, 1563)); }},
      {"mse_loss", [&] { return hg::mse_loss(g, c); }},
  };
  for (const Mixed& m : cases) {
    const std::string op = m.op;
    std::string message;
    bool device_error = false;
    try {
      (void)m.run();
    } catch (const hg::DeviceError& e) {
      device_error = true;
      message = e.what();
    } catch (const std::exception& e) {
      message = std::string("not a DeviceError: ") + e.what();
    }
    CAPTURE(op);
    CAPTURE(message);
    CHECK(device_error);
    CHECK(contains(message, op));
    CHECK(contains(message, "cpu"));
    CHECK(contains(message, "cuda:0"));
  }
}

TEST_CASE("a GPU that does not exist is refused with DeviceError naming it" *
          doctest::test_suite("gpu_only")) {
  const int missing = hg::cuda_device_count();
  const std::string name = "cuda:" + std::to_string(missing);
  const Tensor x = random({2}, 1570);
  CHECK_THROWS_AS((void)x.to(hg::Device::cuda(missing)), hg::DeviceError);
  CHECK(contains(HG_ERROR_MESSAGE(x.to(hg::Device::cuda(missing))), name));
  CHECK(contains(
      HG_ERROR_MESSAGE(hg::zeros({2}, TensorOptions().device(hg::Device::cuda(missing)))), name));
  CHECK_THROWS_AS((void)hg::cuda_device_name(missing), hg::DeviceError);
}

TEST_CASE("the GPU is named and cuda_synchronize waits for queued work" *
          doctest::test_suite("gpu_only")) {
  CHECK(hg::cuda_built());
  CHECK(hg::cuda_is_available());
  CHECK(hg::cuda_device_count() >= 1);
  CHECK_FALSE(hg::cuda_device_name(0).empty());
  const Tensor a = to_gpu(random({256, 256}, 1580));
  const Tensor b = hg::matmul(a, a);
  hg::cuda_synchronize();
  CHECK(b.device() == hg::Device::cuda(0));
}

TEST_CASE("the caching allocator hands a freed block to the next allocation of its size" *
          doctest::test_suite("gpu_only")) {
  hg::cuda_synchronize();
  const std::size_t bytes = std::size_t{1} << 22;  // 4 MiB
  const Shape shape{static_cast<std::int64_t>(bytes / sizeof(float))};
  hg::CudaMemoryStats before_alloc = hg::cuda_memory_stats();
  Tensor t = hg::empty(shape, on_gpu(hg::kFloat32));
  const hg::CudaMemoryStats with_tensor = hg::cuda_memory_stats();
  CHECK(with_tensor.allocated_bytes >= before_alloc.allocated_bytes + bytes);
  CHECK(with_tensor.reserved_bytes >= with_tensor.allocated_bytes);
  CHECK(with_tensor.peak_allocated_bytes >= with_tensor.allocated_bytes);
  t = Tensor();  // freed: back to the cache, not to the driver
  const hg::CudaMemoryStats freed = hg::cuda_memory_stats();
  CHECK(freed.allocated_bytes == before_alloc.allocated_bytes);
  CHECK(freed.reserved_bytes == with_tensor.reserved_bytes);
  // The same size again: served from the cache, no cudaMalloc, reserved flat.
  t = hg::empty(shape, on_gpu(hg::kFloat32));
  const hg::CudaMemoryStats again = hg::cuda_memory_stats();
  CHECK(again.cuda_malloc_calls == with_tensor.cuda_malloc_calls);
  CHECK(again.reserved_bytes == with_tensor.reserved_bytes);
  CHECK(again.allocated_bytes == with_tensor.allocated_bytes);
  // A training-like loop of same-sized temporaries stays flat too.
  for (int i = 0; i < 20; ++i) (void)hg::exp(hg::add(t, 1.0));
  hg::cuda_synchronize();
  CHECK(hg::cuda_memory_stats().reserved_bytes <= again.reserved_bytes + 2 * bytes);
  // empty_cuda_cache returns the free blocks: reserved falls to what is allocated.
  t = Tensor();
  hg::empty_cuda_cache();
  const hg::CudaMemoryStats emptied = hg::cuda_memory_stats();
  CHECK(emptied.reserved_bytes == emptied.allocated_bytes);
  hg::reset_cuda_peak_memory();
  CHECK(hg::cuda_memory_stats().peak_allocated_bytes == emptied.allocated_bytes);
}

TEST_CASE("the same GPU computation run twice gives bitwise equal outputs and gradients") {
  // Long reductions, softmax, layer norm, matmul, scatter-adds with many repeats (index and
  // embedding backwards) and cross entropy: every place where an order of additions could
  // vary between runs.
  auto run = [] {
    const Tensor x = copy_to(random({16, 300}, 1590).to(hg::kFloat32), gpu(), true);
    const Tensor table = copy_to(random({40, 300}, 1591).to(hg::kFloat32), gpu(), true);
    const Tensor w = copy_to(random({64, 300}, 1592, 0.1).to(hg::kFloat32), gpu(), true);
    const Tensor tokens = to_gpu(random_indices({16}, 0, 3, 1593));  // 3 rows, many repeats
    Tensor h = hg::add(x, hg::embedding(table, tokens));
    h = hg::layer_norm(h, {300});
    h = hg::softmax(hg::linear(h, w), -1);
    h = hg::add(h, hg::index_select(x, 1, to_gpu(random_indices({64}, 0, 5, 1594))));
    const Tensor loss = hg::add(hg::cross_entropy(h, to_gpu(random_indices({16}, 0, 64, 1595))),
                                hg::mul(hg::var(hg::sum(x, {0})), 1e-3));
    loss.backward();
    return std::vector<Tensor>{loss, x.grad(), table.grad(), w.grad()};
  };
  const std::vector<Tensor> a = run(), b = run();
  for (std::size_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    CHECK(a[i].device() == gpu());
    CHECK(bitwise_equal(a[i], b[i]));
  }
}
