// cold_fetcher: reads of cold data (docs/cold-tier.md, "Reading"): data bytes [p, p+n) of one object,
// through a bounded cache of CRC-checked blocks and of the objects' footers, so that a catch-up reader
// that walks a stream from its start costs one ranged GET per few blocks, and a second reader of the
// same bytes none.
//
//   * A miss fetches every missing block of the read in one aligned range GET, extended by up to
//     `read_ahead_blocks` blocks after the read's last one (a sequential reader's next read is then a
//     hit); each block's CRC32C is checked before it is cached or returned.
//   * The cache holds whole data blocks (without their CRCs), least recently used first out, within
//     `cache_bytes`; footers are kept for up to `footers` objects the same way.
//   * A failed or corrupt GET caches nothing and comes back as the store's error ("Corrupt" for a CRC
//     mismatch): the caller answers 503 with the reason, and the next read tries again.
//
// Blocking (each miss is a GET): called on object_store workers only, never on a loop or a local-disk
// read thread. Thread-safe; two threads missing the same block may both fetch it.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "tier/object_format.h"
#include "tier/object_store.h"

namespace weir::tier {

struct cold_fetcher_options {
  std::size_t cache_bytes = 64u << 20;
  std::size_t footers = 4096;
  unsigned read_ahead_blocks = 1;
};

struct cold_fetcher_stats {
  std::uint64_t block_hits = 0;
  std::uint64_t block_misses = 0;
  std::uint64_t gets = 0;           // range GETs sent (one per footer read, which may take two)
  std::uint64_t bytes_fetched = 0;  // stored bytes those GETs returned
  std::uint64_t failures = 0;       // reads that came back with an error
  std::size_t cached_bytes = 0;
};

class cold_fetcher {
 public:
  cold_fetcher(object_store& store, cold_fetcher_options o = {});

  // Data bytes [data_position, data_position + length) of the object `key` of `object_size` bytes
  // (both from the committed index).
  store_result<object_bytes> read(const std::string& key, std::uint64_t object_size,
                                  std::uint64_t data_position, std::uint64_t length);
  // The object's footer (its ranges), from the cache or the store.
  store_result<std::shared_ptr<const object_footer>> footer(const std::string& key,
                                                            std::uint64_t object_size);

  // The record of `stream` that begins at `at`, from the record table of the object's range that holds
  // `at` (one GET of that range's entries; not cached: forks at such offsets are rare). Nothing when no
  // record begins there; an error when the object has no record table (format version 1, code
  // "NoRecordTable") or the store fails.
  store_result<std::optional<object_record>> record_at(const std::string& key, std::uint64_t object_size,
                                                       const std::string& stream, streams::stream_offset at);

  cold_fetcher_stats stats() const;

 private:
  using block = std::shared_ptr<const object_bytes>;
  template <class V>
  struct lru {
    std::list<std::string> order;  // most recent first
    std::unordered_map<std::string, std::pair<std::list<std::string>::iterator, V>> map;
  };

  block cached_block(const std::string& id);  // counts a hit or a miss
  bool is_cached(const std::string& id) const;
  void insert_block(const std::string& id, block b);
  void note(std::uint64_t gets, std::uint64_t bytes, bool failed);

  object_store& store_;
  cold_fetcher_options o_;
  mutable std::mutex mu_;
  lru<block> blocks_;
  std::size_t cached_bytes_ = 0;
  lru<std::shared_ptr<const object_footer>> footers_;
  cold_fetcher_stats stats_;
};

}  // namespace weir::tier
