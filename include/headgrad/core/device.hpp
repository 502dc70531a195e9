// Where a tensor's storage lives: the CPU, or GPU i (Device::cuda(i); see core/cuda.hpp
// for what a build and a machine provide).
#pragma once

#include <iosfwd>
#include <string>

namespace headgrad {

enum class DeviceType { cpu, cuda };

class Device {
 public:
  constexpr Device() = default;
  constexpr Device(DeviceType type, int index) : type_(type), index_(index) {}

  static constexpr Device cpu() { return Device(DeviceType::cpu, 0); }
  static constexpr Device cuda(int index = 0) { return Device(DeviceType::cuda, index); }

  constexpr DeviceType type() const { return type_; }
  constexpr int index() const { return index_; }
  constexpr bool is_cpu() const { return type_ == DeviceType::cpu; }
  constexpr bool is_cuda() const { return type_ == DeviceType::cuda; }

  friend constexpr bool operator==(const Device&, const Device&) = default;

  std::string str() const;  // "cpu", "cuda:0"
  // The inverse of str(), also taking "cuda" for cuda:0: ValueError naming what is
  // accepted for anything else. The syntax only (core/cuda.hpp says what a machine has).
  static Device parse(const std::string& text);

 private:
  DeviceType type_ = DeviceType::cpu;
  int index_ = 0;
};

std::ostream& operator<<(std::ostream& os, const Device& device);  // "cpu", "cuda:0"

}  // namespace headgrad
