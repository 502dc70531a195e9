// The mha_parity contract: a malformed case (missing file, wrong shape or dtype, bad or
// incomplete config.json, stray parameter file) is reported as one line naming the file,
// both by the library (CaseError) and by the binary (exit 1, "mha_parity: <file>: ..." on
// stderr); usage errors exit 2; a good case writes exactly the expected result files.
// Cases are copies of committed reference cases (E=8, H=2, L=3, S=4, N=2) under the build
// directory, edited per test.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <xtensor/xarray.hpp>
#include <xtensor/xnpy.hpp>

#include "headgrad/core/process.hpp"
#include "headgrad/headgrad.hpp"
#include "parity.hpp"

namespace fs = std::filesystem;
using namespace headgrad;

namespace {

const fs::path kCasesDir = HEADGRAD_REFERENCE_CASES_DIR;
const fs::path kScratchDir = HEADGRAD_TEST_SCRATCH_DIR;
const std::string kBinary = HEADGRAD_MHA_PARITY_BIN;

// A fresh copy of committed case `name` under the scratch directory.
fs::path copy_case(const std::string& name, const std::string& test_dir) {
  const fs::path dir = kScratchDir / "mha_parity" / test_dir;
  fs::remove_all(dir);
  fs::create_directories(dir.parent_path());
  fs::copy(kCasesDir / name, dir, fs::copy_options::recursive);
  return dir;
}

void write_text(const fs::path& file, const std::string& text) { std::ofstream(file) << text; }

std::string read_text(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A config.json with every key; `drop` leaves one out, `extra` is appended verbatim.
std::string config_json(const std::string& drop = "", const std::string& extra = "") {
  const std::pair<const char*, const char*> keys[] = {
      {"embed_dim", "8"},         {"num_heads", "2"},
      {"kdim", "null"},           {"vdim", "null"},
      {"bias", "true"},           {"add_bias_kv", "false"},
      {"add_zero_attn", "false"}, {"batch_first", "false"},
      {"need_weights", "true"},   {"average_attn_weights", "true"},
      {"is_causal", "false"},     {"dtype", "\"float64\""}};
  std::string s = "{";
  for (const auto& [k, v] : keys) {
    if (k == drop) continue;
    if (s.size() > 1) s += ", ";
    s += std::string("\"") + k + "\": " + v;
  }
  if (!extra.empty()) s += ", " + extra;
  return s + "}";
}

// Runs the case through the library and returns the CaseError's message ("" if none).
std::string case_error(const fs::path& dir, fs::path* file = nullptr) {
  try {
    parity::run_case(parity::load_case(dir));
  } catch (const parity::CaseError& e) {
    if (file) *file = e.file();
    return e.what();
  }
  return "";
}

// CHECKs that the case fails with one line naming `file` and containing `what`.
void check_case_error(const fs::path& dir, const std::string& file, const std::string& what) {
  fs::path reported;
  const std::string message = case_error(dir, &reported);
  INFO("message: " << message);
  REQUIRE(!message.empty());
  CHECK(reported == dir / file);
  CHECK(message.rfind((dir / file).string() + ": ", 0) == 0);
  CHECK(message.find(what) != std::string::npos);
  CHECK(message.find('\n') == std::string::npos);
}

// Runs the binary; returns its exit status, stderr in *err and stdout in *out.
int run_binary(const std::vector<std::string>& args, const std::string& tag, std::string* out,
               std::string* err) {
  const fs::path dir = kScratchDir / "mha_parity" / ("binary_" + tag);
  fs::create_directories(dir);
  std::vector<std::string> argv = {kBinary};
  argv.insert(argv.end(), args.begin(), args.end());
  const int status = run_program(argv, ProgramOptions()
                                           .with_stdout_to(Redirect::file(dir / "stdout"))
                                           .with_stderr_to(Redirect::file(dir / "stderr")));
  REQUIRE(status < 128);  // exited, not killed by a signal
  *out = read_text(dir / "stdout");
  *err = read_text(dir / "stderr");
  return status;
}

std::set<std::string> npy_files(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".npy") names.insert(entry.path().filename().string());
  return names;
}

}  // namespace

TEST_CASE("mha_parity names a missing input or parameter file") {
  fs::path dir = copy_case("cross_attention_f64", "missing_key");
  fs::remove(dir / "key.npy");
  check_case_error(dir, "key.npy", "missing file");

  dir = copy_case("cross_attention_f64", "missing_parameter");
  fs::remove(dir / "in_proj_weight.npy");
  check_case_error(dir, "in_proj_weight.npy", "missing file");

  dir = copy_case("kdim_vdim_differ_f64", "missing_separate_parameter");
  fs::remove(dir / "v_proj_weight.npy");
  check_case_error(dir, "v_proj_weight.npy", "(8,5)");

  dir = copy_case("cross_attention_f64", "missing_config");
  fs::remove(dir / "config.json");
  check_case_error(dir, "config.json", "missing file");
}

TEST_CASE("mha_parity names the file whose shape does not fit the config") {
  fs::path dir = copy_case("cross_attention_f64", "query_shape");
  parity::write_npy(dir / "query.npy", zeros({3, 2, 7}, kFloat64));
  check_case_error(dir, "query.npy", "shape (3,2,7)");

  dir = copy_case("cross_attention_f64", "query_rank");
  parity::write_npy(dir / "query.npy", zeros({3, 2, 8, 1}, kFloat64));
  check_case_error(dir, "query.npy", "shape (3,2,8,1)");

  dir = copy_case("cross_attention_f64", "key_batch");
  parity::write_npy(dir / "key.npy", zeros({4, 3, 8}, kFloat64));
  check_case_error(dir, "key.npy", "shape (4,3,8)");

  dir = copy_case("cross_attention_f64", "value_length");
  parity::write_npy(dir / "value.npy", zeros({5, 2, 8}, kFloat64));
  check_case_error(dir, "value.npy", "expected (4,2,8)");

  dir = copy_case("cross_attention_f64", "grad_output_shape");
  parity::write_npy(dir / "grad_output.npy", zeros({3, 2, 4}, kFloat64));
  check_case_error(dir, "grad_output.npy", "shape (3,2,4)");

  dir = copy_case("bool_attn_mask_2d", "attn_mask_shape");
  parity::write_npy(dir / "attn_mask.npy", zeros({4, 3}, kBool));
  check_case_error(dir, "attn_mask.npy", "shape (4,3)");

  dir = copy_case("bool_attn_mask_3d", "attn_mask_heads");
  parity::write_npy(dir / "attn_mask.npy", zeros({2, 3, 4}, kBool));
  check_case_error(dir, "attn_mask.npy", "(N*H, L, S)");

  dir = copy_case("bool_key_padding_mask", "key_padding_mask_shape");
  parity::write_npy(dir / "key_padding_mask.npy", zeros({2, 3}, kBool));
  check_case_error(dir, "key_padding_mask.npy", "shape (2,3)");

  dir = copy_case("cross_attention_f64", "parameter_shape");
  parity::write_npy(dir / "out_proj.bias.npy", zeros({9}, kFloat64));
  check_case_error(dir, "out_proj.bias.npy", "shape (9)");
}

TEST_CASE("mha_parity reports broken or incomplete config.json") {
  fs::path dir = copy_case("cross_attention_f64", "bad_json");
  write_text(dir / "config.json", "{\"embed_dim\": 8, \"num_heads\": ");
  check_case_error(dir, "config.json", "invalid JSON");

  dir = copy_case("cross_attention_f64", "config_missing_key");
  write_text(dir / "config.json", config_json("average_attn_weights"));
  check_case_error(dir, "config.json", "missing key \"average_attn_weights\"");

  dir = copy_case("cross_attention_f64", "unknown_key");
  write_text(dir / "config.json", config_json("", "\"batchfirst\": true"));
  check_case_error(dir, "config.json", "unknown key \"batchfirst\"");

  dir = copy_case("cross_attention_f64", "key_type");
  write_text(dir / "config.json", config_json("bias", "\"bias\": 1"));
  check_case_error(dir, "config.json", "\"bias\" must be true or false");

  dir = copy_case("cross_attention_f64", "bad_dtype");
  write_text(dir / "config.json", config_json("dtype", "\"dtype\": \"float16\""));
  check_case_error(dir, "config.json", "\"float16\"");

  dir = copy_case("cross_attention_f64", "heads_do_not_divide");
  write_text(dir / "config.json", config_json("num_heads", "\"num_heads\": 3"));
  check_case_error(dir, "config.json", "must be divisible by num_heads 3");

  // The committed config itself reads back (the edits above are what break it).
  CHECK(case_error(copy_case("cross_attention_f64", "good_config")).empty());
}

TEST_CASE("mha_parity rejects a mask or input of the wrong dtype") {
  fs::path dir = copy_case("float_attn_mask_2d", "float32_mask_in_float64_case");
  parity::write_npy(dir / "attn_mask.npy", zeros({3, 4}, kFloat32));
  check_case_error(dir, "attn_mask.npy", "must be bool or float64");

  dir = copy_case("bool_key_padding_mask", "int64_mask");
  const xt::xarray<std::int64_t> ints = xt::zeros<std::int64_t>({2, 4});
  xt::dump_npy((dir / "key_padding_mask.npy").string(), ints);
  check_case_error(dir, "key_padding_mask.npy", "unsupported dtype '<i8'");

  dir = copy_case("cross_attention_f64", "float32_query");
  parity::write_npy(dir / "query.npy", zeros({3, 2, 8}, kFloat32));
  check_case_error(dir, "query.npy", "dtype float32, but the case's dtype is float64");

  dir = copy_case("cross_attention_f64", "truncated");
  const std::string bytes = read_text(dir / "value.npy");
  write_text(dir / "value.npy", bytes.substr(0, bytes.size() - 10));
  check_case_error(dir, "value.npy", "needs 512 bytes of data, the file holds 502");

  dir = copy_case("cross_attention_f64", "not_npy");
  write_text(dir / "query.npy", "hello");
  check_case_error(dir, "query.npy", "not a valid .npy file");
}

TEST_CASE("mha_parity refuses an npy whose shape lies about its data, before allocating") {
  // (2^62, 4) float64 with no data behind the header segfaulted in linear.
  const std::string dict =
      "{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904, 4), }";
  std::string npy = std::string("\x93NUMPY\x01\x00", 8);
  const std::size_t header_len = 128 - 10;
  npy += static_cast<char>(header_len & 0xFF);
  npy += static_cast<char>(header_len >> 8);
  npy += dict + std::string(header_len - dict.size() - 1, ' ') + "\n";
  fs::path dir = copy_case("cross_attention_f64", "overflowing_shape");
  write_text(dir / "query.npy", npy);
  check_case_error(dir, "query.npy", "needs more bytes of data, the file holds 0");
}

TEST_CASE("mha_parity rejects a parameter file the configuration does not have") {
  const fs::path dir = copy_case("kdim_vdim_differ_f64", "stray_in_proj_weight");
  parity::write_npy(dir / "in_proj_weight.npy", zeros({24, 8}, kFloat64));
  check_case_error(dir, "in_proj_weight.npy", "no parameter in_proj_weight");
}

TEST_CASE("mha_parity reads npy files in C and Fortran order and round-trips every dtype") {
  const fs::path dir = kScratchDir / "mha_parity" / "npy";
  fs::remove_all(dir);
  fs::create_directories(dir);
  Tensor f = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor d = from_vector<double>({-1.5, 0.25}, {2});
  Tensor b = from_vector<bool>({true, false, false, true}, {2, 2});
  for (const Tensor& t : {f, d, b}) {
    parity::write_npy(dir / "t.npy", t);
    const Tensor back = parity::read_npy(dir / "t.npy");
    CHECK(back.dtype() == t.dtype());
    CHECK(back.shape() == t.shape());
    CHECK(back.to_vector<double>() == t.to_vector<double>());
  }
  // numpy writes a Fortran-ordered array as such: the values must come back row-major.
  xt::xarray<double, xt::layout_type::column_major> fortran = {{1, 2, 3}, {4, 5, 6}};
  xt::dump_npy((dir / "fortran.npy").string(), fortran);
  const Tensor back = parity::read_npy(dir / "fortran.npy");
  CHECK(back.shape() == Shape{2, 3});
  CHECK(back.to_vector<double>() == std::vector<double>{1, 2, 3, 4, 5, 6});
}

TEST_CASE("mha_parity gives self-attention one input gradient under three names") {
  const parity::Results results =
      parity::run_case(parity::load_case(kCasesDir / "self_attention_f64"));
  std::map<std::string, Tensor> by_name(results.begin(), results.end());
  REQUIRE(by_name.count("grad_query"));
  const std::vector<double> q = by_name["grad_query"].to_vector<double>();
  CHECK(by_name["grad_key"].to_vector<double>() == q);
  CHECK(by_name["grad_value"].to_vector<double>() == q);
  // The self-attention case holds query.npy only.
  CHECK(!fs::exists(kCasesDir / "self_attention_f64" / "key.npy"));
}

TEST_CASE("the mha_parity binary writes the expected files and reports errors in one line") {
  std::string out, err;
  SUBCASE("a good case writes exactly the files of expected/") {
    const fs::path dir = copy_case("add_bias_kv", "binary_good");
    const fs::path out_dir = dir / "result" / "nested";  // created by the tool
    CHECK(run_binary({dir.string(), out_dir.string()}, "good", &out, &err) == 0);
    CHECK(err.empty());
    REQUIRE(fs::is_directory(out_dir));
    CHECK(npy_files(out_dir) == npy_files(dir / "expected"));
  }
  SUBCASE("a missing file exits 1 with one line naming it") {
    const fs::path dir = copy_case("cross_attention_f64", "binary_missing");
    fs::remove(dir / "value.npy");
    CHECK(run_binary({dir.string(), (dir / "out").string()}, "missing", &out, &err) == 1);
    INFO("stderr: " << err);
    CHECK(err ==
          "mha_parity: " + (dir / "value.npy").string() + ": missing file (or not readable)\n");
  }
  SUBCASE("a bad config exits 1 with one line naming config.json") {
    const fs::path dir = copy_case("cross_attention_f64", "binary_config");
    write_text(dir / "config.json", "[1, 2");
    CHECK(run_binary({dir.string(), (dir / "out").string()}, "config", &out, &err) == 1);
    INFO("stderr: " << err);
    CHECK(err.rfind("mha_parity: " + (dir / "config.json").string() + ": invalid JSON", 0) == 0);
    CHECK(err.find('\n') == err.size() - 1);
  }
  SUBCASE("usage errors exit 2 and --help exits 0") {
    CHECK(run_binary({}, "no_args", &out, &err) == 2);
    CHECK(!err.empty());
    CHECK(run_binary({"a", "b", "c"}, "three_args", &out, &err) == 2);
    CHECK(run_binary({"--help"}, "help", &out, &err) == 0);
    CHECK(out.find("CASE_DIR") != std::string::npos);
    CHECK(out.find("OUT_DIR") != std::string::npos);
  }
}
