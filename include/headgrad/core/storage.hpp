// A device-agnostic, reference-counted byte buffer. CPU storage is an xtensor uvector with
// a 64-byte aligned allocator; kernels read it through raw pointers or xt::adapt views. A
// CUDA storage will hold device memory behind the same interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "headgrad/core/device.hpp"

namespace headgrad {

class Storage {
 public:
  // Uninitialized storage of `nbytes` on `device`.
  Storage(std::size_t nbytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }
  std::size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

  // Bumped by every in-place write; autograd uses it to detect that a value saved for
  // backward was overwritten.
  std::uint64_t version() const { return version_; }
  void bump_version() { ++version_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  void* data_ = nullptr;
  std::size_t nbytes_ = 0;
  Device device_;
  std::uint64_t version_ = 0;
};

}  // namespace headgrad
