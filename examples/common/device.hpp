// The --device flag of the example programs and bench_case: "cpu", "cuda" (= cuda:0) or
// "cuda:N", parsed into a headgrad::Device, with a clear error for anything else and for a
// GPU this build or this machine cannot give.
//
//   std::string device_text = "cpu";
//   examples::add_device_option(app, device_text);
//   CLI11_PARSE(app, argc, argv);
//   try { const Device device = examples::parse_device(device_text); ... }
#pragma once

#include <CLI/CLI.hpp>
#include <headgrad/core/cuda.hpp>
#include <headgrad/core/device.hpp>
#include <headgrad/core/error.hpp>

#include <cctype>
#include <string>

namespace headgrad::examples {

// Device::parse (the syntax: ValueError naming the flag), then, for a GPU, that this build
// has CUDA and this machine that GPU. Throws DeviceError saying which is missing.
inline Device parse_device(const std::string& text) {
  Device device;
  try {
    device = Device::parse(text);
  } catch (const ValueError& e) {
    throw ValueError(std::string("--device ") + e.what());
  }
  if (device.is_cpu()) return device;
  if (!cuda_built())
    throw DeviceError("--device " + text +
                      ": this headgrad was built without CUDA (configure with "
                      "-DHEADGRAD_CUDA=ON, e.g. cmake --preset gpu; see docs/cuda.md); use "
                      "--device cpu");
  if (!cuda_is_available())
    throw DeviceError("--device " + text +
                      ": no CUDA GPU is available on this machine (no GPU, or no driver); use "
                      "--device cpu");
  const int count = cuda_device_count();
  if (device.index() >= count)
    throw DeviceError("--device " + text + ": this machine has " + std::to_string(count) +
                      " CUDA GPU" + (count == 1 ? "" : "s") + " (cuda:0" +
                      (count > 1 ? " to cuda:" + std::to_string(count - 1) : std::string()) + ")");
  return device;
}

// Adds --device to `app`, bound to `text` (whose value is the default, normally "cpu").
inline CLI::Option* add_device_option(CLI::App& app, std::string& text) {
  return app
      .add_option("--device", text,
                  "where tensors live and ops run: cpu, cuda (the first GPU) or cuda:N")
      ->capture_default_str();
}

}  // namespace headgrad::examples
