// The tracking allocator: the single path from the executor to device memory.
#include "device.hpp"

#include <stdexcept>

namespace actmem::exec {

const char* elem_name(Elem e) {
  switch (e) {
    case Elem::kF32:
      return "fp32";
    case Elem::kF64:
      return "fp64";
    case Elem::kBf16:
      return "bf16";
    case Elem::kU8:
      return "u8";
    case Elem::kI32:
      return "i32";
  }
  return "?";
}

void Tracker::on_alloc(const Buf& b, Category c) {
  ++count_;
  if (c == Category::kBatch) {
    batch_ += b.bytes();
    if (batch_ > batch_peak_) batch_peak_ = batch_;
    return;
  }
  live_ += b.bytes();
  if (live_ > peak_) peak_ = live_, peak_at_ = phase_;
}

void Tracker::on_free(const Buf& b, Category c) {
  if (c == Category::kBatch)
    batch_ -= b.bytes();
  else
    live_ -= b.bytes();
}

Buf Device::alloc(std::size_t n, Elem e, const std::string& name, Category c) {
  Buf b;
  b.n = n;
  b.e = e;
  b.name = name;
  if (b.bytes() > 0) {
    b.p = raw_alloc(b.bytes());
    if (!b.p)
      throw std::runtime_error("out of device memory allocating '" + name + "' (" +
                               std::to_string(b.bytes()) + " bytes)");
    zero(b.p, b.bytes());
  }
  tracker_.on_alloc(b, c);
  return b;
}

void Device::free(Buf& b, Category c) {
  if (b.p) raw_free(b.p);
  tracker_.on_free(b, c);
  b.p = nullptr;
  b.n = 0;
}

}  // namespace actmem::exec
