#include "http/h2_alloc.h"

#include <nghttp2/nghttp2.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace weir::http {

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool use_lists = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool use_lists = false;
#else
constexpr bool use_lists = true;
#endif
#else
constexpr bool use_lists = true;
#endif

// Every block starts with this header; the caller's bytes follow it, 16-byte aligned as malloc's are.
struct alignas(16) block_header {
  std::size_t size;     // bytes the caller may use
  std::uint32_t klass;  // size class, or `unlisted`
};
static_assert(sizeof(block_header) == 16);

constexpr std::size_t class_step = 64, classes = 16;  // blocks of 64, 128, ... 1024 bytes
constexpr std::uint32_t unlisted = 0xffffffffu;
constexpr std::uint32_t max_spare = 256;

struct free_block {
  free_block* next;
};

// Trivially destructible, so that a free after the thread's destructors ran is still safe to check.
struct thread_lists {
  free_block* head[classes];
  std::uint32_t count[classes];
  bool registered;  // the reaper below will free the lists at thread exit
  bool gone;        // it has: free straight to free()
};
thread_local thread_lists lists;

struct reaper {
  ~reaper() {
    for (std::size_t c = 0; c < classes; ++c) {
      while (free_block* b = lists.head[c]) {
        lists.head[c] = b->next;
        std::free(reinterpret_cast<block_header*>(b) - 1);
      }
      lists.count[c] = 0;
    }
    lists.gone = true;
  }
};

void* user(block_header* h) {
  return h + 1;
}
block_header* header_of(void* p) {
  return static_cast<block_header*>(p) - 1;
}

void* allocate(std::size_t size) {
  // Classes by the whole block, header included: malloc gets a multiple of 64 bytes.
  const std::size_t klass = (size + sizeof(block_header) - 1) / class_step;
  if (!use_lists || klass >= classes) {
    auto* h = static_cast<block_header*>(std::malloc(sizeof(block_header) + size));
    if (h == nullptr) return nullptr;
    h->size = size;
    h->klass = unlisted;
    return user(h);
  }
  if (free_block* b = lists.head[klass]; b != nullptr) {
    lists.head[klass] = b->next;
    --lists.count[klass];
    return b;
  }
  if (!lists.registered) {
    lists.registered = true;
    static thread_local reaper r;
    (void)r;
  }
  const std::size_t room = (klass + 1) * class_step - sizeof(block_header);
  auto* h = static_cast<block_header*>(std::malloc(sizeof(block_header) + room));
  if (h == nullptr) return nullptr;
  h->size = room;
  h->klass = static_cast<std::uint32_t>(klass);
  return user(h);
}

void release(void* p) {
  if (p == nullptr) return;
  block_header* h = header_of(p);
  const std::uint32_t klass = h->klass;
  if (klass == unlisted || lists.gone || lists.count[klass] >= max_spare) {
    std::free(h);
    return;
  }
  auto* b = static_cast<free_block*>(p);
  b->next = lists.head[klass];
  lists.head[klass] = b;
  ++lists.count[klass];
}

void* mem_malloc(std::size_t size, void*) {
  return allocate(size);
}
void mem_free(void* p, void*) {
  release(p);
}
void* mem_calloc(std::size_t n, std::size_t size, void*) {
  if (size != 0 && n > SIZE_MAX / size) return nullptr;
  void* p = allocate(n * size);
  if (p != nullptr) std::memset(p, 0, n * size);
  return p;
}
void* mem_realloc(void* p, std::size_t size, void*) {
  if (p == nullptr) return allocate(size);
  block_header* h = header_of(p);
  if (size <= h->size && h->klass != unlisted) return p;  // the class's room holds it
  void* q = allocate(size);
  if (q == nullptr) return nullptr;  // p stays valid, as realloc's contract says
  std::memcpy(q, p, h->size < size ? h->size : size);
  release(p);
  return q;
}

nghttp2_mem mem{nullptr, mem_malloc, mem_free, mem_calloc, mem_realloc};

}  // namespace

nghttp2_mem* h2_mem() {
  return &mem;
}

bool h2_mem_keeps_blocks() {
  return use_lists;
}

}  // namespace weir::http
