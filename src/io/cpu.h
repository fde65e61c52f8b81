// CPU pinning for thread-per-core loops.
#pragma once

#include "base/result.h"

namespace weir::io {

// Pins the calling thread to one CPU (modulo the number of online CPUs).
status pin_current_thread(unsigned cpu);
unsigned online_cpus();

}  // namespace weir::io
