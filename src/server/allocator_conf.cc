// jemalloc's built-in options for the weir binary (compiled in only when the binary links jemalloc: see
// CMakeLists.txt). An operator's MALLOC_CONF environment variable is read after these and overrides them.
//
// thp:always: jemalloc asks for transparent huge pages (madvise MADV_HUGEPAGE) on the memory it maps,
// so a node that fills its memory with stream data (the hot tier) and raft entries takes one page fault
// per 2 MiB instead of one per 4 KiB. On this project's VMs (Firecracker, paravirtualised page tables) a
// 4 KiB fault costs ~20 us, and a 3-node cluster spent about a third of its CPU in them during a write
// phase: 25,000-30,000 faults a second. With huge pages: a few hundred in the same 4 s, and 1.5x the
// cluster's write MiB/s (docs/benchmarks.md, "Session 13: page faults and huge pages"). The kernel
// decides: with /sys/kernel/mm/transparent_hugepage/enabled at `never` nothing changes. The cost is
// memory rounded to 2 MiB per mapping, a few MiB per arena.
extern "C" {
// NOLINTNEXTLINE: the name and type are jemalloc's (je_malloc_conf without a prefix on Debian)
const char* malloc_conf = "thp:always";
}
