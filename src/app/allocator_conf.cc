// jemalloc's built-in options for the weir binary (compiled in only when the binary links jemalloc: see
// CMakeLists.txt). An operator's MALLOC_CONF environment variable is read after these and overrides them.
//
// thp:always: jemalloc asks for transparent huge pages (madvise MADV_HUGEPAGE) on the memory it maps,
// so a node that fills its memory with stream data (the hot tier) and raft entries takes one page fault
// per 2 MiB instead of one per 4 KiB. On this project's VMs (Firecracker, paravirtualised page tables) a
// 4 KiB fault costs ~20 us, and a 3-node cluster spent about a third of its CPU in them during a write
// phase: 22,000-31,000 faults a second, against a few hundred with huge pages.
//
// dirty_decay_ms:60000: freed pages go back to the kernel over a minute, not jemalloc's default 10 s.
// With huge pages, each purge of part of one splits it and the next use faults it in again: with the
// default decay the cluster's second write phase was 15-23% slower than without huge pages; with a
// minute, faster in both (+37-83% write MiB/s at 64 writers, +10-27% at 128: docs/benchmarks.md,
// "Allocator: page faults and huge pages").
// A burst's memory is still given back once the node has not needed it for a minute or so.
//
// The kernel decides: with /sys/kernel/mm/transparent_hugepage/enabled at `never` only the decay
// applies. The cost is memory rounded up to 2 MiB per mapping (an idle node: ~48 MiB resident, ~19
// without) and up to a minute's freed memory held.
extern "C" {
// NOLINTNEXTLINE: the name and type are jemalloc's (je_malloc_conf without a prefix on Debian)
const char* malloc_conf = "thp:always,dirty_decay_ms:60000";
}
