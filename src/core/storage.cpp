// CPU storage on an xtensor uvector with a 64-byte aligned xsimd allocator.
#include "headgrad/core/storage.hpp"

#include <xsimd/memory/xsimd_aligned_allocator.hpp>
#include <xtensor/xstorage.hpp>

#include "headgrad/core/error.hpp"

namespace headgrad {

struct Storage::Impl {
  xt::uvector<unsigned char, xsimd::aligned_allocator<unsigned char, 64>> bytes;
};

Storage::Storage(std::size_t nbytes, Device device) : nbytes_(nbytes), device_(device) {
  if (!device.is_cpu()) {
    throw DeviceError("Storage: device " + device.str() +
                      " is not available in this build (only cpu is implemented)");
  }
  impl_ = std::make_unique<Impl>();
  // Never zero bytes, so that data() is a valid aligned pointer even for empty tensors.
  impl_->bytes.resize(nbytes == 0 ? 64 : nbytes);
  data_ = impl_->bytes.data();
}

Storage::~Storage() = default;

}  // namespace headgrad
