// save_npz / load_npz: round trips of every dtype and rank, bit for bit; the .npy bytes
// numpy's format defines; files from an independent zip writer (below, stored members
// with their CRC-32) and from numpy itself; and failures: truncated, corrupted, empty,
// missing files, malformed members, and saves that fail without harming the old file.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "headgrad/core/process.hpp"
#include "headgrad/headgrad.hpp"
#include "headgrad/train/npz.hpp"
#include "train/npy_bytes.hpp"

namespace fs = std::filesystem;
using namespace headgrad;
using headgrad::train::IOError;
using headgrad::train::kMaxNpzComment;
using headgrad::train::load_npz;
using headgrad::train::NpzFile;
using headgrad::train::read_npz;
using headgrad::train::save_npz;
using namespace headgrad::test;

namespace {

// A fresh folder under the system's temporary folder, removed with everything in it.
struct ScratchDir {
  fs::path path;
  explicit ScratchDir(const std::string& name)
      : path(fs::temp_directory_path() /
             ("headgrad_test_npz_" + std::to_string(::getpid()) + "_" + name)) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::permissions(path, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& file) const { return (path / file).string(); }
  std::set<std::string> listing() const {
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator(path)) names.insert(e.path().filename().string());
    return names;
  }
};

std::string read_bytes(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Replaces `file` by a new one (removed first: ext4 flushes a file truncated and
// rewritten in place to disk, which made the loops below slow).
void write_bytes(const std::string& file, const std::string& bytes) {
  fs::remove(file);
  std::ofstream(file, std::ios::binary) << bytes;
}

// The test pattern (the same as in npz_numpy_check.py): element i of float tensors is
// (i - 3) * 0.25, of int64 tensors (i - 3) * 2000000000000000003, of bool tensors i % 3 == 0.
Tensor pattern(DType dtype, const Shape& shape) {
  Tensor t = empty(shape, dtype);
  const std::int64_t n = t.numel();
  for (std::int64_t i = 0; i < n; ++i) {
    switch (dtype) {
      case DType::float32:
        t.data<float>()[i] = static_cast<float>((static_cast<double>(i) - 3) * 0.25);
        break;
      case DType::float64:
        t.data<double>()[i] = (static_cast<double>(i) - 3) * 0.25;
        break;
      case DType::int64:
        t.data<std::int64_t>()[i] = (i - 3) * 2000000000000000003LL;
        break;
      case DType::boolean:
        t.data<bool>()[i] = i % 3 == 0;
        break;
    }
  }
  return t;
}

// The entries of npz_numpy_check.py's table.
nn::StateDict pattern_entries() {
  nn::StateDict d;
  d.insert("scalar_f32", pattern(kFloat32, {}));
  d.insert("vector_f64", pattern(kFloat64, {5}));
  d.insert("matrix_f32", pattern(kFloat32, {2, 3}));
  d.insert("layers.0.self_attn.in_proj_weight", pattern(kFloat64, {2, 3, 4}));
  d.insert("optimizer/state.0.exp_avg", pattern(kFloat32, {1, 2, 1, 3}));
  d.insert("trainer/step", pattern(kInt64, {}));
  d.insert("ids", pattern(kInt64, {4}));
  d.insert("mask", pattern(kBool, {2, 2}));
  d.insert("empty", pattern(kFloat32, {0, 3}));
  return d;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  const auto n = static_cast<std::size_t>(a.numel()) * element_size(a.dtype());
  return n == 0 || std::memcmp(a.raw_data(), b.raw_data(), n) == 0;
}

// CHECKs that `actual` holds exactly the keys of `expected`, in order, bit for bit.
void check_same_entries(const nn::StateDict& actual, const nn::StateDict& expected) {
  REQUIRE(actual.keys() == expected.keys());
  for (const auto& [key, t] : expected) {
    CAPTURE(key);
    CHECK(actual.at(key).dtype() == t.dtype());
    CHECK(actual.at(key).shape() == t.shape());
    CHECK(same_bits(actual.at(key), t));
  }
}

template <typename T>
std::string bytes_of(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

std::string raw_bytes(const Tensor& t) {
  return std::string(static_cast<const char*>(t.raw_data()),
                     static_cast<std::size_t>(t.numel()) * element_size(t.dtype()));
}

// The IOError message of load_npz(file); fails the test when there is none.
std::string load_error(const std::string& file) {
  try {
    load_npz(file);
  } catch (const IOError& e) {
    CHECK(e.path() == file);
    return e.what();
  }
  FAIL("load_npz did not throw for " << file);
  return {};
}

}  // namespace

TEST_CASE("save_npz and load_npz round trip every dtype and rank bit for bit") {
  ScratchDir dir("round_trip");
  nn::StateDict entries = pattern_entries();
  // Values that must survive unchanged: signed zero, infinities, a NaN payload,
  // subnormals, the extremes of every type.
  Tensor f32 = empty({7}, kFloat32);
  const float f32_values[] = {-0.0f,
                              INFINITY,
                              -INFINITY,
                              std::numeric_limits<float>::denorm_min(),
                              std::numeric_limits<float>::max(),
                              std::numeric_limits<float>::lowest(),
                              std::bit_cast<float>(0x7FC12345u)};
  std::memcpy(f32.raw_data(), f32_values, sizeof f32_values);
  Tensor f64 = empty({2, 2}, kFloat64);
  const double f64_values[] = {-0.0, std::numeric_limits<double>::denorm_min(),
                               std::bit_cast<double>(0x7FF8000000ABCDEFull), 1.0 / 3.0};
  std::memcpy(f64.raw_data(), f64_values, sizeof f64_values);
  Tensor i64 = empty({3}, kInt64);
  const std::int64_t i64_values[] = {std::numeric_limits<std::int64_t>::min(), -1,
                                     std::numeric_limits<std::int64_t>::max()};
  std::memcpy(i64.raw_data(), i64_values, sizeof i64_values);
  entries.insert("special/f32", f32);
  entries.insert("special/f64", f64);
  entries.insert("special/i64", i64);
  entries.insert("rank5", randn({2, 1, 3, 1, 2}, kFloat64));
  entries.insert("empty_1d_bool", zeros({0}, kBool));
  entries.insert(
      "gr\xc3\xb6\xc3\x9f"
      "e/\xce\xbc",
      ones({2}, kFloat64));  // UTF-8 "größe/μ"

  const std::string file = dir / "state.npz";
  save_npz(file, entries);
  check_same_entries(load_npz(file), entries);
  CHECK(dir.listing() == std::set<std::string>{"state.npz"});
}

TEST_CASE("save_npz writes each entry as the bytes numpy.save writes") {
  ScratchDir dir("format");
  nn::StateDict entries;
  const std::vector<float> values = {1.5f, -2.0f, 0.25f, 8.0f, -0.5f, 3.0f};
  Tensor t = empty({2, 3}, kFloat32);
  std::memcpy(t.raw_data(), values.data(), 24);
  entries.insert("w", t);
  entries.insert("s", scalar_tensor(2.5, kFloat64));
  entries.insert("v", zeros({3}, kInt64));
  entries.insert("b", ones({1}, kBool));
  const std::string file = dir / "f.npz";
  save_npz(file, entries);
  const std::string bytes = read_bytes(file);
  // numpy 1.24's np.save of each array: a 128-byte header (length field 118 = 'v'), the
  // dict padded with spaces up to the closing newline, then the data. Members are stored,
  // so each appears verbatim in the archive, named "<key>.npy".
  auto numpy_save = [](const std::string& dict, const std::string& data) {
    return std::string("\x93NUMPY\x01\x00v\x00", 10) + dict +
           std::string(128 - 10 - dict.size() - 1, ' ') + "\n" + data;
  };
  CHECK(bytes.find(numpy_save("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                              bytes_of(values))) != std::string::npos);
  CHECK(bytes.find(numpy_save("{'descr': '<f8', 'fortran_order': False, 'shape': (), }",
                              bytes_of(std::vector<double>{2.5}))) != std::string::npos);
  CHECK(bytes.find(numpy_save("{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }",
                              std::string(24, '\0'))) != std::string::npos);
  CHECK(bytes.find(numpy_save("{'descr': '|b1', 'fortran_order': False, 'shape': (1,), }",
                              std::string(1, '\1'))) != std::string::npos);
  for (const char* name : {"w.npy", "s.npy", "v.npy", "b.npy"})
    CHECK(bytes.find(name) != std::string::npos);
}

TEST_CASE("saving the same entries twice gives byte-identical files") {
  ScratchDir dir("deterministic");
  save_npz(dir / "a.npz", pattern_entries());
  save_npz(dir / "b.npz", pattern_entries());
  CHECK(read_bytes(dir / "a.npz") == read_bytes(dir / "b.npz"));
}

TEST_CASE("an empty set of entries gives an empty zip that loads back empty") {
  ScratchDir dir("empty_archive");
  save_npz(dir / "e.npz", nn::StateDict());
  const std::string bytes = read_bytes(dir / "e.npz");
  CHECK(bytes == std::string("PK\x05\x06", 4) + std::string(18, '\0'));  // numpy's empty savez
  CHECK(load_npz(dir / "e.npz").empty());
}

TEST_CASE("load_npz reads archives written by an independent zip writer") {
  ScratchDir dir("independent");
  const std::vector<double> d = {1.0, -2.5, 4.0};
  const std::vector<std::int64_t> ids = {7, -9};
  write_bytes(dir / "x.npz",
              stored_zip({{"a.npy", npy("<f8", "(3,)", bytes_of(d))},
                          {"nested/b.c.npy", npy("<i8", "(1, 2)", bytes_of(ids))},
                          // keys in another order, double quotes, no trailing comma
                          {"c.npy", npy_raw("{\"shape\": (), \"fortran_order\": False, "
                                            "\"descr\": \"<f4\"}",
                                            bytes_of(std::vector<float>{0.5f}))},
                          // format 2.0 (4-byte header length); any non-zero bool byte is true
                          {"d.npy", npy_raw("{'descr': '|b1', 'fortran_order': False, "
                                            "'shape': (3,), }",
                                            std::string("\0\1\2", 3), 2)}}));
  const nn::StateDict got = load_npz(dir / "x.npz");
  REQUIRE(got.keys() == std::vector<std::string>{"a", "nested/b.c", "c", "d"});
  CHECK(got.at("a").to_vector<double>() == d);
  CHECK(got.at("nested/b.c").shape() == Shape{1, 2});
  CHECK(got.at("nested/b.c").to_vector<std::int64_t>() == ids);
  CHECK(got.at("c").shape() == Shape{});
  CHECK(got.at("c").item<float>() == 0.5f);
  CHECK(got.at("d").dtype() == kBool);
  CHECK(got.at("d").to_vector<bool>() == std::vector<bool>{false, true, true});
}

TEST_CASE("load_npz names the file and the member for every malformed member") {
  ScratchDir dir("malformed");
  const std::string f4x2 = bytes_of(std::vector<float>{1.0f, 2.0f});
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      // member, contents, expected words
      {"magic.npy", "NUMPY!" + std::string(64, ' '), "no \\x93NUMPY magic"},
      {"short.npy", "\x93NU", "not an .npy file"},
      {"version.npy", "\x93NUMPY\x07" + std::string(60, '\0'), "format version 7.0"},
      {"dtype.npy", npy("<i4", "(2,)", f4x2), "unsupported dtype '<i4'"},
      {"bigendian.npy", npy(">f4", "(2,)", f4x2), "unsupported dtype '>f4'"},
      {"order.npy", npy_raw("{'descr': '<f4', 'fortran_order': 1, 'shape': (2,), }", f4x2),
       "fortran_order must be True or False"},
      {"size.npy", npy("<f4", "(3,)", f4x2), "needs 12 bytes of data, the member holds 8"},
      {"negative.npy", npy("<f4", "(-2,)", f4x2), "malformed shape"},
      {"nokey.npy", npy_raw("{'descr': '<f4', 'shape': (2,), }", f4x2), "lacks one of"},
      {"extrakey.npy",
       npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", f4x2),
       "unexpected key 'x'"},
      {"garbage.npy", npy_raw("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } x", f4x2),
       "after the closing"},
      {"header_len.npy", std::string("\x93NUMPY\x01\x00\xff\x7f", 10) + "{}", "runs past"},
      {"notnpy.txt", "hello", "not an .npy member"},
  };
  for (const auto& [member, contents, words] : cases) {
    CAPTURE(member);
    const std::string file = dir / (member + ".npz");
    write_bytes(file, stored_zip({{"ok.npy", npy("<f4", "(2,)", f4x2)}, {member, contents}}));
    const std::string message = load_error(file);
    CHECK(message.find("load_npz: '" + file + "'") != std::string::npos);
    CHECK(message.find("entry '" + member + "'") != std::string::npos);
    CHECK(message.find(words) != std::string::npos);
    try {
      load_npz(file);
    } catch (const IOError& e) {
      CHECK(e.entry() == member);
    }
  }
}

TEST_CASE("load_npz rejects a missing file, a folder, an empty file and a non-zip file") {
  ScratchDir dir("missing");
  CHECK(load_error(dir / "nope.npz").find("no such file") != std::string::npos);
  fs::create_directories(dir / "folder.npz");
  CHECK(load_error(dir / "folder.npz").find("is a directory") != std::string::npos);
  write_bytes(dir / "zero.npz", "");
  CHECK(load_error(dir / "zero.npz").find("empty (0 bytes)") != std::string::npos);
  write_bytes(dir / "text.npz", "this is not a zip archive at all, just text\n");
  CHECK(load_error(dir / "text.npz").find("not a zip archive") != std::string::npos);
  // An error is a headgrad::Error, so callers may catch the base class.
  CHECK_THROWS_AS(load_npz(dir / "nope.npz"), Error);
}

TEST_CASE("load_npz rejects a file truncated at any byte") {
  ScratchDir dir("truncated");
  const std::string file = dir / "full.npz";
  save_npz(file, pattern_entries());
  const std::string bytes = read_bytes(file);
  REQUIRE(bytes.size() > 500);
  int rejected = 0;
  for (std::size_t cut = 0; cut < bytes.size(); ++cut) {
    write_bytes(dir / "cut.npz", bytes.substr(0, cut));
    try {
      load_npz(dir / "cut.npz");
      FAIL("a file cut at byte " << cut << " of " << bytes.size() << " loaded");
    } catch (const IOError& e) {
      ++rejected;
      CHECK(std::string(e.what()).find(dir / "cut.npz") != std::string::npos);
    }
  }
  CHECK(rejected == static_cast<int>(bytes.size()));
}

TEST_CASE(
    "a flipped byte anywhere gives an IOError or, in a field no reader uses, the same entries") {
  ScratchDir dir("flipped");
  const std::string file = dir / "full.npz";
  const nn::StateDict entries = pattern_entries();
  save_npz(file, entries);
  const std::string bytes = read_bytes(file);
  // Where each member's .npy bytes lie in the archive (stored, so verbatim).
  std::vector<std::pair<std::size_t, std::size_t>> members;
  for (const auto& [key, t] : entries) {
    // The member follows its local header, which ends with its name.
    const std::size_t at = bytes.find("\x93NUMPY", bytes.find(key + ".npy"));
    REQUIRE(at != std::string::npos);
    const std::size_t header_len =
        static_cast<unsigned char>(bytes[at + 8]) + 256 * static_cast<unsigned char>(bytes[at + 9]);
    const std::size_t end = at + 10 + header_len + raw_bytes(t).size();
    CHECK(bytes.substr(end - raw_bytes(t).size(), raw_bytes(t).size()) == raw_bytes(t));
    members.emplace_back(at, end);
  }
  int in_members = 0;
  for (std::size_t at = 0; at < bytes.size(); ++at) {
    std::string corrupt = bytes;
    corrupt[at] = static_cast<char>(corrupt[at] ^ 0x10);
    write_bytes(dir / "flip.npz", corrupt);
    CAPTURE(at);
    bool in_member = false;
    for (const auto& [begin, end] : members) in_member = in_member || (at >= begin && at < end);
    in_members += in_member;
    try {
      const nn::StateDict got = load_npz(dir / "flip.npz");
      CHECK_FALSE(in_member);
      check_same_entries(got, entries);
    } catch (const IOError& e) {
      // Inside a member only the CRC tells, and it must.
      if (in_member) CHECK(std::string(e.what()).find("CRC mismatch") != std::string::npos);
    }
  }
  CHECK(in_members > 500);
}

TEST_CASE("save_npz refuses keys that are not UTF-8 relative paths and undefined tensors") {
  ScratchDir dir("bad_keys");
  const std::vector<std::string> keys = {"",
                                         "/abs",
                                         "a//b",
                                         "a/",
                                         "../up",
                                         "a/./b",
                                         "b\\s",
                                         std::string("nul\0x", 5),
                                         "tab\there",
                                         "latin1 \xe9",
                                         "overlong \xc0\xaf"};  // the last two are not UTF-8
  for (const std::string& key : keys) {
    CAPTURE(key);
    nn::StateDict d;
    d.insert(key, zeros({1}));
    CHECK_THROWS_AS(save_npz(dir / "k.npz", d), ValueError);
  }
  nn::StateDict d;
  d.insert("fine", zeros({1}));
  d.insert("undefined", Tensor());
  CHECK_THROWS_WITH_AS(save_npz(dir / "k.npz", d), doctest::Contains("'undefined' is undefined"),
                       ValueError);
  CHECK(dir.listing().empty());
}

TEST_CASE("a failed save leaves the previous file intact and no temporary file behind") {
  ScratchDir dir("atomic");
  const std::string file = dir / "ckpt.npz";
  save_npz(file, pattern_entries());
  const std::string before = read_bytes(file);
  const std::set<std::string> listing = dir.listing();

  SUBCASE("an undefined tensor") {
    nn::StateDict d = pattern_entries();
    d.insert("late", Tensor());
    CHECK_THROWS_AS(save_npz(file, d), ValueError);
  }
  SUBCASE("the disk refuses the write midway (file size limit)") {
    // RLIMIT_FSIZE makes write() fail with EFBIG once the file would pass 4 KiB.
    nn::StateDict big;
    big.insert("big", zeros({100000}, kFloat64));
    rlimit old_limit{};
    REQUIRE(::getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
    auto old_handler = ::signal(SIGXFSZ, SIG_IGN);
    rlimit small = old_limit;
    small.rlim_cur = 4096;
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
    std::string message;
    try {
      save_npz(file, big);
    } catch (const IOError& e) {
      message = e.what();
    }
    ::setrlimit(RLIMIT_FSIZE, &old_limit);
    ::signal(SIGXFSZ, old_handler);
    CHECK(message.find("cannot write") != std::string::npos);
    CHECK(message.find(file) != std::string::npos);
  }
  SUBCASE("the folder is not writable") {
    if (::geteuid() == 0) {
      MESSAGE("SKIPPED the read-only folder check: root writes into any folder");
    } else {
      fs::permissions(dir.path, fs::perms::owner_read | fs::perms::owner_exec);
      CHECK_THROWS_WITH_AS(save_npz(file, pattern_entries()),
                           doctest::Contains("cannot create a temporary file"), IOError);
      fs::permissions(dir.path, fs::perms::owner_all);
    }
  }
  SUBCASE("the target is a folder, or its folder does not exist") {
    fs::create_directories(dir / "sub.npz");
    CHECK_THROWS_WITH_AS(save_npz(dir / "sub.npz", pattern_entries()),
                         doctest::Contains("is a directory"), IOError);
    CHECK_THROWS_AS(save_npz(dir / "no/such/folder/x.npz", pattern_entries()), IOError);
    fs::remove(dir / "sub.npz");
  }
  CHECK(read_bytes(file) == before);
  CHECK(dir.listing() == listing);
  check_same_entries(load_npz(file), pattern_entries());
}

TEST_CASE("numpy opens a saved file and headgrad reads numpy's savez and savez_compressed") {
  const fs::path script = fs::path(__FILE__).parent_path() / "npz_numpy_check.py";
  const char* python = "/usr/bin/python3";
  if (!fs::exists(script) || !fs::exists(python)) {
    MESSAGE("SKIPPED: needs " << python << " and " << script.string());
    return;
  }
  ScratchDir dir("numpy");
  const std::string ours = dir / "headgrad.npz";
  save_npz(ours, pattern_entries());
  const fs::path log_file = dir.path / "log.txt";
  const int status = run_program({python, script.string(), ours, dir.path.string()},
                                 ProgramOptions()
                                     .with_stdout_to(Redirect::file(log_file))
                                     .with_stderr_to(Redirect::to_stdout()));
  const std::string log = read_bytes(log_file.string());
  INFO(log);
  if (status == 77) {
    MESSAGE("SKIPPED: " << log);
    return;
  }
  REQUIRE(status == 0);
  check_same_entries(load_npz(dir / "savez.npz"), pattern_entries());
  check_same_entries(load_npz(dir / "savez_compressed.npz"), pattern_entries());
}

TEST_CASE("a torch.save file is named as such, with the numpy.savez that replaces it") {
  // torch.save writes a zip of "<name>/data.pkl" (the pickle) and "<name>/data/<n>" (storages).
  ScratchDir dir("torch_save");
  const std::string file = dir / "model.pt";
  write_bytes(file, stored_zip({{"mha/data.pkl", "\x80\x02}q\x00."}, {"mha/data/0", "xxxx"}}));
  const std::string message = load_error(file);
  CHECK(message.find("entry 'mha/data.pkl'") != std::string::npos);
  CHECK(message.find("torch.save file") != std::string::npos);
  CHECK(message.find("numpy.savez(path") != std::string::npos);
}

TEST_CASE("an archive comment round-trips through save_npz and read_npz, numpy's files have none") {
  ScratchDir dir("comment");
  const nn::StateDict entries = pattern_entries();
  const std::string comment = "{\"headgrad\": {\"attention\": []}}";
  save_npz(dir / "c.npz", entries, comment);
  const NpzFile file = read_npz(dir / "c.npz");
  CHECK(file.comment == comment);
  check_same_entries(file.entries, entries);
  save_npz(dir / "plain.npz", entries);
  CHECK(read_npz(dir / "plain.npz").comment.empty());
  write_bytes(dir / "independent.npz",
              stored_zip({{"a.npy", npy("<f4", "()", bytes_of(std::vector<float>{1}))}}));
  CHECK(read_npz(dir / "independent.npz").comment.empty());
  CHECK_THROWS_AS(save_npz(dir / "long.npz", entries, std::string(kMaxNpzComment + 1, 'x')),
                  ValueError);
  CHECK_FALSE(fs::exists(dir / "long.npz"));
}
