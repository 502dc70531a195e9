// The library behind the mha_parity tool: reads a parity case (config.json, inputs and
// parameters as .npy files under PyTorch's state_dict names), runs nn::MultiheadAttention
// forward and backward on it, and writes the results under the names the PyTorch oracle
// (tests/reference/generate_cases.py) writes its expected files.
//
// Case shapes (E = embed_dim, H = num_heads, N batch, L target, S source length):
//   query (L, N, E), key (S, N, kdim), value (S, N, vdim), grad_output like the output
//   (= like query); N first when batch_first; unbatched (query with 2 dims): (L, E),
//   (S, kdim), (S, vdim). key_padding_mask (N, S) or (S), attn_mask (L, S) or (N*H, L, S):
//   bool (true = blocked) or float in the case's dtype (added to the scores).
// Results: output, attn_weights (when need_weights), grad_query, grad_key, grad_value and
// grad_<parameter> for every parameter, all in the case's dtype.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "headgrad/core/error.hpp"
#include "headgrad/core/tensor.hpp"
#include "headgrad/nn/module.hpp"

namespace headgrad::parity {

// A malformed case: what() reads "<file>: <what is wrong>" (one line).
class CaseError : public Error {
 public:
  CaseError(const std::filesystem::path& file, const std::string& what);
  const std::filesystem::path& file() const { return file_; }

 private:
  std::filesystem::path file_;
};

// config.json.
struct CaseConfig {
  std::int64_t embed_dim = 0;
  std::int64_t num_heads = 0;
  std::int64_t kdim = 0;  // 0 = embed_dim (JSON null or embed_dim)
  std::int64_t vdim = 0;
  bool bias = true;
  bool add_bias_kv = false;
  bool add_zero_attn = false;
  bool batch_first = false;
  bool need_weights = true;
  bool average_attn_weights = true;
  bool is_causal = false;
  DType dtype = kFloat32;
  bool self_attention = false;  // optional key: query, key and value are one tensor
};

// Reads and checks config.json (every key present, of the right type; no unknown key).
CaseConfig read_config(const std::filesystem::path& file);

// Reads a .npy file of dtype float32 ('<f4'), float64 ('<f8') or bool ('|b1') into a new
// tensor; anything else (another dtype, a broken header, a short file) is a CaseError.
Tensor read_npy(const std::filesystem::path& file);
// Writes a float32, float64 or bool tensor as .npy (C order).
void write_npy(const std::filesystem::path& file, const Tensor& tensor);

struct ParityCase {
  std::filesystem::path dir;
  CaseConfig config;
  Tensor query, key, value;  // key and value are query itself in a self-attention case
  Tensor grad_output;
  Tensor key_padding_mask;   // undefined when absent
  Tensor attn_mask;          // undefined when absent
  nn::StateDict parameters;  // every parameter of the module, by state_dict name
};

// Loads and checks a case directory: files present, shapes and dtypes consistent with the
// config. Throws CaseError naming the offending file.
ParityCase load_case(const std::filesystem::path& dir);

// Named results, in the order they are produced.
using Results = std::vector<std::pair<std::string, Tensor>>;

// Builds the module from the config, loads the parameters, runs forward (train mode,
// dropout 0) and backward of sum(output * grad_output). Result names are file stems:
// "output", "attn_weights", "grad_query", ..., "grad_out_proj.weight".
Results run_case(const ParityCase& parity_case);

// Writes every result as OUT_DIR/<name>.npy, creating OUT_DIR if needed.
void write_results(const Results& results, const std::filesystem::path& out_dir);

// load_case + run_case + write_results.
Results run_case_dir(const std::filesystem::path& case_dir, const std::filesystem::path& out_dir);

}  // namespace headgrad::parity
