// h2_alloc: the memory nghttp2 gets (nghttp2_mem) for its per-stream objects: blocks up to 1 KiB kept on
// per-thread free lists by size class, so that a stream's objects (the stream, its queued frames, the
// copied field list, decoded field values) come from the last one's instead of a malloc and a free each.
// A request costs nghttp2 about five of each; the lists turn them into a pop and a push.
//
// Bounded: at most 256 spare blocks per class and thread (about 2 MiB a thread at worst); larger blocks
// and anything beyond the bound go straight to malloc/free. The lists are freed when their thread ends.
// Under AddressSanitizer every call goes to malloc/free, so that nghttp2's use of freed memory is still
// caught. Any thread may call it; a block freed on another thread than the one that allocated it joins
// that thread's lists.
#pragma once

#include <nghttp2/nghttp2.h>

namespace weir::http {

nghttp2_mem* h2_mem();
// False under AddressSanitizer, where every block goes to malloc/free.
bool h2_mem_keeps_blocks();

}  // namespace weir::http
