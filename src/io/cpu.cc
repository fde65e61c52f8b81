#include "io/cpu.h"

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace weir::io {

unsigned online_cpus() {
  long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<unsigned>(n) : 1;
}

status pin_current_thread(unsigned cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu % online_cpus(), &set);
  int rc = ::pthread_setaffinity_np(::pthread_self(), sizeof set, &set);
  if (rc != 0) return make_error(rc, std::string("pthread_setaffinity_np: ") + std::strerror(rc));
  return {};
}

}  // namespace weir::io
