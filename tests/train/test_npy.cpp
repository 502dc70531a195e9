// load_npy / save_npy, and the hostile inputs both readers refuse cheaply: header lengths
// and shapes that lie, data that is missing, sizes that overflow, zip members that claim
// more bytes than their archive can hold, and path-like keys.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "headgrad/headgrad.hpp"
#include "headgrad/train/npy.hpp"
#include "headgrad/train/npz.hpp"
#include "train/npy_bytes.hpp"

namespace fs = std::filesystem;
using namespace headgrad;
using namespace headgrad::test;
using headgrad::train::IOError;

namespace {

struct Scratch {
  fs::path path;
  explicit Scratch(const std::string& name)
      : path(fs::temp_directory_path() /
             ("headgrad_test_npy_" + std::to_string(::getpid()) + "_" + name)) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& file) const { return (path / file).string(); }
};

void write_bytes(const std::string& file, const std::string& bytes) {
  fs::remove(file);
  std::ofstream(file, std::ios::binary) << bytes;
}

std::string read_bytes(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

template <typename F>
std::string io_error(F&& f) {
  try {
    f();
  } catch (const IOError& e) {
    return e.what();
  }
  FAIL("no IOError");
  return {};
}

template <typename T>
std::string bytes_of(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

}  // namespace

TEST_CASE("save_npy and load_npy round-trip every dtype and rank bit for bit") {
  Scratch dir("roundtrip");
  Tensor f = arange(6.0).reshape({2, 3});
  Tensor d = arange(5.0, TensorOptions(kFloat64)) * 0.25;
  Tensor i = arange(4.0).to(kInt64);
  Tensor b = gt(arange(3.0), scalar_tensor(0.5));
  Tensor s = scalar_tensor(2.5);
  Tensor e = zeros({0, 3});
  for (const Tensor& t : {f, d, i, b, s, e}) {
    train::save_npy(dir / "t.npy", t);
    const Tensor back = train::load_npy(dir / "t.npy");
    CHECK(back.dtype() == t.dtype());
    CHECK(back.shape() == t.shape());
    const auto n = static_cast<std::size_t>(t.numel()) * element_size(t.dtype());
    CHECK(std::string(static_cast<const char*>(back.raw_data()), n) ==
          std::string(static_cast<const char*>(t.raw_data()), n));
  }
  // The bytes are numpy's: the header dict, padded to 64 bytes.
  train::save_npy(dir / "f.npy", f);
  const std::string bytes = read_bytes(dir / "f.npy");
  CHECK(bytes.size() == 128 + 24);
  CHECK(bytes.find("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }") == 10);
}

TEST_CASE("load_npy reads a Fortran-order file back row-major") {
  Scratch dir("fortran");
  // numpy.save of np.asfortranarray([[1, 2, 3], [4, 5, 6]]): the data goes column by column.
  write_bytes(dir / "f.npy", npy_raw("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }",
                                     bytes_of(std::vector<double>{1, 4, 2, 5, 3, 6})));
  const Tensor t = train::load_npy(dir / "f.npy");
  CHECK(t.shape() == Shape{2, 3});
  CHECK(t.to_vector<double>() == std::vector<double>{1, 2, 3, 4, 5, 6});
}

TEST_CASE("load_npy reads an empty Fortran-order file whose other dims multiply past int64") {
  // A fuzzer's input: no elements (a 0 dim), the rest 2^40 * 2^40, Fortran order, so the
  // reader permutes the empty tensor; its strides overflowed.
  Scratch dir("fortran_empty");
  write_bytes(dir / "e.npy",
              npy_raw("{'descr': '<f4', 'fortran_order': True, 'shape': (0, 1099511627776, "
                      "1099511627776), }",
                      {}));
  const Tensor t = train::load_npy(dir / "e.npy");
  CHECK(t.shape() == Shape{0, std::int64_t{1} << 40, std::int64_t{1} << 40});
  CHECK(t.numel() == 0);
}

TEST_CASE("load_npy refuses lying headers and missing data before allocating, naming the file") {
  Scratch dir("hostile");
  std::string many_dims = "(";
  for (int d = 0; d < 65; ++d) many_dims += "1, ";
  many_dims += ")";
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      // A 12-byte file whose header claims 0xFFFFFFF0 bytes (it cost 8.5 GB before).
      {"huge_header.npy", std::string("\x93NUMPY\x02\x00\xf0\xff\xff\xff", 12),
       "is implausibly large"},
      {"header_past_end.npy", std::string("\x93NUMPY\x01\x00\x40\x00", 10) + "{}", "runs past"},
      {"empty_header.npy", std::string("\x93NUMPY\x01\x00\x00\x00", 10), "expected '{'"},
      {"ends_in_length.npy", std::string("\x93NUMPY\x02\x00\x10", 9), "not an .npy file"},
      // (2^62, 4) float32 with no data: the crash through mha_parity.
      {"overflow.npy", npy("<f4", "(4611686018427387904, 4)", ""), "needs more bytes of data"},
      {"no_data.npy", npy("<f4", "(1099511627776,)", ""),
       "needs 4398046511104 bytes of data, the file holds 0"},
      {"short_data.npy", npy("<f8", "(3,)", std::string(16, '\0')), "needs 24 bytes"},
      {"long_data.npy", npy("<f8", "(1,)", std::string(16, '\0')), "the file holds 16"},
      {"repeated_key.npy",
       npy_raw("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
               std::string(4, '\0')),
       "repeated key 'descr'"},
      {"many_dims.npy", npy("<f4", many_dims, ""), "more than 64 dimensions"},
      {"nul.npy", npy_raw(std::string("{'descr\0': '<f4'}", 17), ""), "unexpected key"},
  };
  for (const auto& [name, contents, words] : cases) {
    CAPTURE(name);
    write_bytes(dir / name, contents);
    const std::string why = io_error([&] { train::load_npy(dir / name); });
    CHECK(why.find("load_npy: '" + (dir / name) + "'") == 0);
    CHECK(why.find(words) != std::string::npos);
  }
  CHECK(io_error([&] { train::load_npy(dir / "absent.npy"); }).find("no such file") !=
        std::string::npos);
  CHECK(io_error([&] { train::load_npy(dir.path.string()); }).find("is a directory") !=
        std::string::npos);
}

TEST_CASE("load_npy reads bool bytes other than 0 and 1 as true, as numpy does") {
  Scratch dir("bools");
  write_bytes(dir / "b.npy", npy("|b1", "(4,)", std::string("\x00\x01\x07\xff", 4)));
  const Tensor t = train::load_npy(dir / "b.npy");
  const std::vector<std::uint8_t> bytes(static_cast<const std::uint8_t*>(t.raw_data()),
                                        static_cast<const std::uint8_t*>(t.raw_data()) + 4);
  CHECK(bytes == std::vector<std::uint8_t>{0, 1, 1, 1});
}

TEST_CASE("load_npy refuses a tensor above the allocation limit with the file's name") {
  Scratch dir("limit");
  train::save_npy(dir / "big.npy", zeros({64}));
  set_max_tensor_bytes(128);
  const std::string why = io_error([&] { train::load_npy(dir / "big.npy"); });
  set_max_tensor_bytes(0);
  CHECK(why.find("big.npy") != std::string::npos);
  CHECK(why.find("set_max_tensor_bytes") != std::string::npos);
}

TEST_CASE("load_npz refuses members that claim more bytes than the archive can hold") {
  Scratch dir("claims");
  // A deflated member of 20 bytes claiming 4 GiB: more than deflate's 1032:1 can give.
  write_bytes(dir / "deflate.npz", zip_archive({{"w.npy", std::string(20, 'x'), 8, 0xFFFFFFF0}}));
  std::string why = io_error([&] { train::load_npz(dir / "deflate.npz"); });
  CHECK(why.find("entry 'w.npy'") != std::string::npos);
  CHECK(why.find("more than deflate can expand to") != std::string::npos);
  // A stored member claiming more bytes than the file has.
  write_bytes(dir / "stored.npz", zip_archive({{"w.npy", std::string(20, 'x'), 0, 1 << 30}}));
  why = io_error([&] { train::load_npz(dir / "stored.npz"); });
  CHECK(why.find("entry 'w.npy'") != std::string::npos);
  // A member larger than the allocation limit is refused before reading it.
  write_bytes(dir / "limit.npz",
              stored_zip({{"w.npy", npy("<f4", "(64,)", std::string(256, '\0'))}}));
  set_max_tensor_bytes(16);
  why = io_error([&] { train::load_npz(dir / "limit.npz"); });
  set_max_tensor_bytes(0);
  CHECK(why.find("entry 'w.npy'") != std::string::npos);
}

TEST_CASE("load_npz refuses path-like keys, as save_npz does") {
  Scratch dir("keys");
  const std::string ok = npy("<f4", "(1,)", std::string(4, '\0'));
  for (const std::string key : {"../../x", "/etc/x", "a//b", "a/./b", "a\\b"}) {
    CAPTURE(key);
    write_bytes(dir / "k.npz", stored_zip({{key + ".npy", ok}}));
    const std::string why = io_error([&] { train::load_npz(dir / "k.npz"); });
    CHECK(why.find("entry '" + key + ".npy'") != std::string::npos);
    CHECK(why.find("relative keys only") != std::string::npos);
  }
  write_bytes(dir / "k.npz", stored_zip({{"layers/0.w.npy", ok}}));
  CHECK(train::load_npz(dir / "k.npz").contains("layers/0.w"));
}
