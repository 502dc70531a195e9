// Fuzz target: the mha_parity case loader (config.json and the .npy inputs and parameters)
// and the run on what it accepts. One input is a whole case directory, packed as sections
// "@@<file name>\n<contents>"; names outside the case layout are ignored. Every input must
// end in results or a headgrad error.
//
// Seeds: with HEADGRAD_FUZZ_SEED_DIR set, initialization packs a few committed reference
// cases (tests/reference/cases) there.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>

#include <unistd.h>

#include "headgrad/core/storage.hpp"
#include "parity.hpp"

namespace fs = std::filesystem;

namespace {

const std::set<std::string, std::less<>> kCaseFiles = {
    "config.json",       "query.npy",          "key.npy",
    "value.npy",         "grad_output.npy",    "key_padding_mask.npy",
    "attn_mask.npy",     "in_proj_weight.npy", "q_proj_weight.npy",
    "k_proj_weight.npy", "v_proj_weight.npy",  "in_proj_bias.npy",
    "bias_k.npy",        "bias_v.npy",         "out_proj.weight.npy",
    "out_proj.bias.npy"};

constexpr std::string_view kMarker = "@@";

const fs::path& case_dir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("headgrad_fuzz_case_" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

// Writes the sections of `input` as files of the case directory (emptied first).
void unpack(std::string_view input) {
  for (const auto& entry : fs::directory_iterator(case_dir())) fs::remove(entry.path());
  std::size_t at = input.find(kMarker);
  while (at != std::string_view::npos) {
    const std::size_t name_start = at + kMarker.size();
    const std::size_t name_end = input.find('\n', name_start);
    if (name_end == std::string_view::npos) return;
    const std::size_t next = input.find(kMarker, name_end + 1);
    const std::string_view name = input.substr(name_start, name_end - name_start);
    const std::string_view body = input.substr(
        name_end + 1, (next == std::string_view::npos ? input.size() : next) - (name_end + 1));
    if (kCaseFiles.contains(name))
      std::ofstream(case_dir() / std::string(name), std::ios::binary)
          .write(body.data(), static_cast<std::streamsize>(body.size()));
    at = next;
  }
}

// The packed form of a committed case directory.
std::string pack(const fs::path& dir) {
  std::string out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (!kCaseFiles.contains(name)) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream body;
    body << in.rdbuf();
    out += std::string(kMarker) + name + "\n" + body.str();
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* seeds = std::getenv("HEADGRAD_FUZZ_SEED_DIR")) {
    for (const char* name : {"self_attention_f64", "bool_attn_mask_and_key_padding_mask",
                             "kdim_vdim_differ_f32", "unbatched_masks_per_head", "add_bias_kv"})
      std::ofstream(fs::path(seeds) / (std::string(name) + ".case"), std::ios::binary)
          << pack(fs::path(HEADGRAD_REFERENCE_CASES_DIR) / name);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  headgrad::set_max_tensor_bytes(std::size_t{64} << 20);
  unpack(std::string_view(reinterpret_cast<const char*>(data), size));
  try {
    const headgrad::parity::ParityCase c = headgrad::parity::load_case(case_dir());
    const headgrad::parity::Results results = headgrad::parity::run_case(c);
    (void)results.size();
  } catch (const headgrad::Error&) {
  }
  return 0;
}
