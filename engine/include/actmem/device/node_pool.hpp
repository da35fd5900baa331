// A recycling node pool for the replay's ordered maps (device/stream.hpp: what each micro-batch,
// chunk and layer holds). std::map allocates one node per insert and frees it per erase, once or
// more per layer of the replay: libc's malloc and free were 13% of an advise run (perf,
// llama-3.1-405b on 1,024 GPUs, 2026-12-02, when the allocator model's cached blocks were a
// std::set served from it too; free_blocks.hpp keeps them in arrays now). Nodes erased here are
// handed to the next insert instead, so a replay's steady state allocates nothing.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <vector>

namespace actmem {

// Fixed-size slots carved from chunks; freed slots form a list. One pool serves one node size:
// the first request fixes it, and a request of another size (never made by std::set, which
// allocates nodes one at a time) goes to operator new.
class NodePool {
 public:
  NodePool() = default;
  NodePool(const NodePool&) = delete;
  NodePool& operator=(const NodePool&) = delete;

  void* take(std::size_t bytes) {
    if (slot_ == 0) slot_ = bytes < sizeof(Free) ? sizeof(Free) : round(bytes);
    if (bytes > slot_) return ::operator new(bytes);
    if (free_ != nullptr) {
      Free* f = free_;
      free_ = f->next;
      return f;
    }
    if (used_ == kPerChunk || chunks_.empty()) {
      chunks_.emplace_back(new unsigned char[slot_ * kPerChunk]);
      used_ = 0;
    }
    return chunks_.back().get() + slot_ * used_++;
  }
  void give(void* p, std::size_t bytes) {
    if (bytes > slot_) return ::operator delete(p);
    Free* f = static_cast<Free*>(p);
    f->next = free_;
    free_ = f;
  }

 private:
  struct Free {
    Free* next;
  };
  static constexpr std::size_t kPerChunk = 256;
  // Slots keep the strictest alignment a node can need.
  static std::size_t round(std::size_t n) {
    constexpr std::size_t a = alignof(std::max_align_t);
    return (n + a - 1) / a * a;
  }
  std::size_t slot_ = 0, used_ = 0;
  Free* free_ = nullptr;
  std::vector<std::unique_ptr<unsigned char[]>> chunks_;
};

// The standard allocator interface over a NodePool that outlives the container.
template <class T>
struct PoolAllocator {
  using value_type = T;
  NodePool* pool;
  explicit PoolAllocator(NodePool* p) noexcept : pool(p) {}
  template <class U>
  PoolAllocator(const PoolAllocator<U>& o) noexcept : pool(o.pool) {}
  T* allocate(std::size_t n) {
    return static_cast<T*>(n == 1 ? pool->take(sizeof(T)) : ::operator new(n * sizeof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (n == 1)
      pool->give(p, sizeof(T));
    else
      ::operator delete(p);
  }
  template <class U>
  bool operator==(const PoolAllocator<U>& o) const noexcept {
    return pool == o.pool;
  }
  template <class U>
  bool operator!=(const PoolAllocator<U>& o) const noexcept {
    return pool != o.pool;
  }
};

}  // namespace actmem
