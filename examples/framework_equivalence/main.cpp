// framework_equivalence: do a PyTorch-style and a Keras-style multi-head attention layer
// compute the same thing? Builds one self-attention layer of each convention from the
// same seed, shows that their default initializations make the outputs differ, transfers
// the weights (PyTorch layout -> Keras layout and back) and shows that the outputs then
// agree, printing the L2 and max-abs differences. When Debian's PyTorch is installed
// (/usr/bin/python3 with torch), the same weights and input also run through
// torch.nn.MultiheadAttention and are compared.
#include <CLI/CLI.hpp>
#include <headgrad/core/process.hpp>
#include <headgrad/core/xtensor_interop.hpp>
#include <headgrad/headgrad.hpp>

#include <headgrad/nn/keras_attention.hpp>
#include <xtensor/xnpy.hpp>
#include "../common/cli_checks.hpp"
#include "../common/difference.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

using namespace headgrad;
using examples::Difference;
using examples::difference;
namespace fs = std::filesystem;

namespace {

void report(const char* what, const Tensor& a, const Tensor& b) {
  Difference d = difference(a, b);
  std::printf("  %-52s L2 %.3e   max-abs %.3e\n", what, d.l2, d.max_abs);
}

template <typename T>
void save_npy(const fs::path& path, const Tensor& t) {
  const Tensor c = t.to(dtype_of<T>());
  xt::dump_npy(path.string(), as_xtensor<T>(c));
}

// Writes the PyTorch layer's weights and the input, runs torch_forward.py and reads its
// output; returns an undefined tensor when PyTorch is not available.
Tensor run_pytorch(const nn::MultiheadAttention& mha, const Tensor& x, const std::string& dtype,
                   const fs::path& folder) {
  const char* python = "/usr/bin/python3";
  const ProgramOptions quiet =
      ProgramOptions().with_stdout_to(Redirect::discard()).with_stderr_to(Redirect::discard());
  if (!fs::exists(python) || run_program({python, "-c", "import torch"}, quiet) != 0)
    return Tensor();
  fs::create_directories(folder);
  std::ofstream(folder / "config.json")
      << "{\"embed_dim\": " << mha.embed_dim() << ", \"num_heads\": " << mha.num_heads()
      << ", \"dtype\": \"" << dtype << "\"}\n";
  auto save = [&](const fs::path& p, const Tensor& t) {
    if (t.dtype() == kFloat64)
      save_npy<double>(p, t);
    else
      save_npy<float>(p, t);
  };
  for (auto& [name, t] : mha.state_dict()) save(folder / (name + ".npy"), t);
  save(folder / "query.npy", x);
  const std::string script = std::string(HEADGRAD_EXAMPLE_DIR) + "/torch_forward.py";
  const std::vector<std::string> cmd = {python, script, folder.string()};
  if (const int status = run_program(cmd); status != 0)
    throw Error("torch_forward.py failed (exit status " + std::to_string(status) +
                "): " + command_text(cmd));
  const std::string out = (folder / "torch_output.npy").string();
  if (dtype == "float64") return from_xtensor(xt::load_npy<double>(out));
  return from_xtensor(xt::load_npy<float>(out));
}

// The command-line options.
struct Options {
  std::int64_t embed_dim = 64, num_heads = 8, batch = 4, length = 16;
  std::uint64_t seed = 0;
  std::string dtype = "float32";
  std::string work_dir = "runs/framework_equivalence";
  bool skip_pytorch = false;
};

// Declares the command-line options, filling `o`.
void add_options(CLI::App& app, Options& o) {
  app.add_option("--embed-dim", o.embed_dim, "model width E")
      ->check(headgrad::examples::integer_in(1, 4096))
      ->capture_default_str();
  app.add_option("--heads", o.num_heads, "number of heads H (E must divide by H)")
      ->check(headgrad::examples::integer_in(1, 4096))
      ->capture_default_str();
  app.add_option("--batch", o.batch, "batch size")
      ->check(headgrad::examples::integer_in(1, 4096))
      ->capture_default_str();
  app.add_option("--length", o.length, "sequence length")
      ->check(headgrad::examples::integer_in(1, 4096))
      ->capture_default_str();
  app.add_option("--seed", o.seed, "seed for weights and input")
      ->check(headgrad::examples::unsigned_integer())
      ->capture_default_str();
  app.add_option("--dtype", o.dtype, "float32 or float64")
      ->check(CLI::IsMember({"float32", "float64"}))
      ->capture_default_str();
  app.add_option("--work-dir", o.work_dir, "where the PyTorch comparison writes its files")
      ->capture_default_str();
  app.add_flag("--no-pytorch", o.skip_pytorch, "skip the comparison with PyTorch");
}

// Step 3: the same weights and input through torch.nn.MultiheadAttention, when available.
void compare_with_pytorch(const Options& o, const nn::MultiheadAttention& torch_style,
                          const nn::KerasMultiHeadAttention& keras_from_torch, const Tensor& x,
                          const Tensor& torch_out) {
  Tensor reference = run_pytorch(torch_style, x, o.dtype, fs::path(o.work_dir));
  if (!reference.defined()) {
    std::printf(
        "\n3. PyTorch: not available (/usr/bin/python3 cannot import torch); "
        "install python3-torch to compare\n");
  } else {
    std::printf("\n3. the same weights and input in torch.nn.MultiheadAttention\n");
    report("headgrad PyTorch-style vs PyTorch", torch_out, reference);
    report("headgrad Keras-style (transferred) vs PyTorch", keras_from_torch(x, x).output,
           reference);
  }
}

// Builds both layers, compares them at default initialization and after the weight
// transfer, then (unless --no-pytorch) against PyTorch; prints each difference.
void compare_conventions(const Options& o) {
  const DType dt = o.dtype == "float64" ? kFloat64 : kFloat32;
  std::printf("self-attention, E=%lld, H=%lld, input (%lld, %lld, %lld), %s\n",
              static_cast<long long>(o.embed_dim), static_cast<long long>(o.num_heads),
              static_cast<long long>(o.batch), static_cast<long long>(o.length),
              static_cast<long long>(o.embed_dim), o.dtype.c_str());

  // 1. Each convention with its own default initialization, from the same seed.
  Generator gen(o.seed);
  nn::MultiheadAttention torch_style(
      nn::MultiheadAttentionOptions(o.embed_dim, o.num_heads).with_batch_first(true));
  torch_style.reset_parameters(&gen);
  torch_style.to(dt);
  nn::KerasMultiHeadAttention keras_style(
      nn::KerasMultiHeadAttentionOptions(o.num_heads, o.embed_dim / o.num_heads, o.embed_dim),
      &gen);
  keras_style.to(dt);
  const Tensor x = randn({o.batch, o.length, o.embed_dim}, dt, &gen);

  NoGradGuard no_grad;
  const Tensor torch_out =
      torch_style(x, x, x, nn::MultiheadAttentionArgs().with_need_weights(false)).output;
  const Tensor keras_out = keras_style(x, x).output;
  std::printf(
      "\n1. default initializations (PyTorch: xavier_uniform on the packed (3E, E) "
      "in_proj_weight,\n   Keras: glorot_uniform on (E, H, key_dim) kernels)\n");
  report("PyTorch-style vs Keras-style output", torch_out, keras_out);

  // 2. Transfer PyTorch -> Keras, and Keras -> PyTorch.
  auto keras_from_torch = nn::KerasMultiHeadAttention::from_torch(torch_style);
  auto torch_from_keras = keras_style.to_torch(/*batch_first=*/true);
  std::printf("\n2. after transferring the weights\n");
  report("PyTorch-style vs Keras-style with its weights", torch_out,
         (*keras_from_torch)(x, x).output);
  report(
      "Keras-style vs PyTorch-style with its weights", keras_out,
      (*torch_from_keras)(x, x, x, nn::MultiheadAttentionArgs().with_need_weights(false)).output);

  // 3. Against PyTorch itself.
  if (!o.skip_pytorch) compare_with_pytorch(o, torch_style, *keras_from_torch, x, torch_out);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Builds the same self-attention layer under PyTorch's and Keras' conventions, compares "
      "their outputs at default initialization and after transferring the weights."};
  Options o;
  add_options(app, o);
  CLI11_PARSE(app, argc, argv);

  try {
    compare_conventions(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "framework_equivalence: %s\n", e.what());
    return 1;
  }
  return 0;
}
