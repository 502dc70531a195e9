// Byte builders for the .npy and .npz tests: .npy files as numpy's format document defines
// them, and an independent zip writer (stored members with their CRC-32, no extra fields),
// so that the readers are tested against files headgrad's own writer did not make.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace headgrad::test {

// --- an independent zip writer: stored members, CRC-32 (IEEE), no extra fields ----------

inline std::uint32_t crc32(const std::string& data) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (unsigned char c : data) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

inline void put(std::string& out, std::uint64_t value, int bytes) {
  for (int b = 0; b < bytes; ++b) out += static_cast<char>((value >> (8 * b)) & 0xFF);
}

// A zip member: `data` is written as is; `method` 0 is stored, 8 deflate (then `data` must
// be deflated bytes); `claimed_size`, when set, replaces the uncompressed size the
// directory states (a lie, for the hostile-input tests).
struct ZipMember {
  std::string name, data;
  std::uint16_t method = 0;
  std::int64_t claimed_size = -1;
};

inline std::string zip_archive(const std::vector<ZipMember>& members) {
  std::string out, central;
  for (const auto& [name, data, method, claimed_size] : members) {
    const std::size_t offset = out.size();
    const std::uint32_t crc = crc32(data);
    auto common = [&](std::string& s) {
      put(s, 20, 2);  // version needed
      put(s, 0, 2);   // flags
      put(s, method, 2);
      put(s, 0, 2);     // time
      put(s, 0x21, 2);  // date 1980-01-01
      put(s, crc, 4);
      put(s, data.size(), 4);
      put(s, claimed_size >= 0 ? static_cast<std::uint64_t>(claimed_size) : data.size(), 4);
      put(s, name.size(), 2);
      put(s, 0, 2);  // extra length
    };
    put(out, 0x04034b50, 4);
    common(out);
    out += name + data;
    put(central, 0x02014b50, 4);
    put(central, 20, 2);  // made by
    common(central);
    put(central, 0, 2);  // comment length
    put(central, 0, 2);  // disk
    put(central, 0, 2);  // internal attributes
    put(central, 0, 4);  // external attributes
    put(central, offset, 4);
    central += name;
  }
  const std::size_t cd_offset = out.size();
  out += central;
  put(out, 0x06054b50, 4);
  put(out, 0, 2);
  put(out, 0, 2);
  put(out, members.size(), 2);
  put(out, members.size(), 2);
  put(out, central.size(), 4);
  put(out, cd_offset, 4);
  put(out, 0, 2);
  return out;
}

inline std::string stored_zip(const std::vector<std::pair<std::string, std::string>>& members) {
  std::vector<ZipMember> all;
  for (const auto& [name, data] : members) all.push_back({name, data});
  return zip_archive(all);
}

// An .npy file as numpy's format document defines it: magic, version, little-endian
// header length, the header dict padded with spaces to a 64-byte boundary plus '\n'.
inline std::string npy_raw(const std::string& dict, const std::string& data, int major = 1) {
  const int length_bytes = major == 1 ? 2 : 4;
  const std::size_t unpadded = 8 + length_bytes + dict.size() + 1;
  const std::size_t pad = (64 - unpadded % 64) % 64;
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  put(out, dict.size() + pad + 1, length_bytes);
  return out + dict + std::string(pad, ' ') + "\n" + data;
}

inline std::string npy(const std::string& descr, const std::string& shape,
                       const std::string& data) {
  return npy_raw("{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }",
                 data);
}

}  // namespace headgrad::test
