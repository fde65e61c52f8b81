#include "http/loop_context.h"

#include "http/admission.h"
#include "http/connection.h"
#include "http/listener.h"

namespace weir::http {

loop_context::loop_context(io::event_loop& l, const server_options& o, const handler& h)
    : loop(&l),
      opts(&o),
      on_request(&h),
      server_line("Server: " + o.server_name + "\r\n"),
      read_scratch(new char[read_scratch_bytes]),
      reads(o.read_bytes_per_turn) {
  ok_prefix = "HTTP/1.1 200 OK\r\n" + server_line + std::string(date.header_line());
}

void loop_context::update_date(std::time_t now) {
  date.update(now);
  auto line = date.header_line();
  ok_prefix.replace(ok_prefix.size() - line.size(), line.size(), line);
}

loop_context::~loop_context() = default;

connection* loop_context::acquire() {
  connection* c;
  if (free_list.empty()) {
    pool.push_back(std::make_unique<connection>(*this));
    c = pool.back().get();
  } else {
    c = free_list.back();
    free_list.pop_back();
  }
  c->active_index = active.size();
  active.push_back(c);
  return c;
}

void loop_context::release(connection* c) {
  if (limits) limits->release(c->client);
  std::size_t i = c->active_index;
  WEIR_ASSERT(i < active.size() && active[i] == c, "connection not active at {} (of {})", i, active.size());
  active[i] = active.back();
  active[i]->active_index = i;
  active.pop_back();
  open.set(active.size());
  // Not reusable before the current epoll batch is over: a stale event for the old fd could otherwise
  // be delivered to the new connection. Posted tasks run after the batch.
  recycle.push_back(c);
  if (recycle.size() == 1) {
    loop->post([this] {
      free_list.insert(free_list.end(), recycle.begin(), recycle.end());
      recycle.clear();
    });
  }
  check_drained();
}

void loop_context::defer(connection* c) {
  if (c->read_deferred) return;
  c->read_deferred = true;
  deferred.push_back(c);
  reads_deferred.add();
  if (resume_posted) return;
  resume_posted = true;
  loop->post([this] { resume_deferred(); });
}

void loop_context::flush_later(connection* c) {
  if (c->flush_wanted) return;
  c->flush_wanted = true;
  flushes.push_back(c);
  if (flush_posted) return;
  flush_posted = true;
  loop->at_turn_end([this] { flush_all(); });
}

void loop_context::flush_all() {
  flush_posted = false;
  flushing.swap(flushes);
  // A connection closed since it was queued has flush_wanted cleared (close_now); one queued again
  // while these are sent goes into `flushes`, for a task of its own.
  for (connection* c : flushing) {
    if (c->flush_wanted) c->flushed();
  }
  flushing.clear();
}

void loop_context::resume_deferred() {
  resume_posted = false;
  while (!deferred.empty()) {
    connection* c = deferred.front();
    if (!c->read_deferred) {  // closed since (close_now clears it), or already driven
      deferred.pop_front();
      continue;
    }
    if (!reads.allows(loop->turn())) break;
    deferred.pop_front();
    c->read_deferred = false;
    resuming = c;
    c->resume_reading();  // may queue it again, at the back
    resuming = nullptr;
  }
  // Posted from a posted task: runs in the next turn, after its I/O events and timers.
  if (!deferred.empty() && !resume_posted) {
    resume_posted = true;
    loop->post([this] { resume_deferred(); });
  }
}

void loop_context::sweep() {
  std::int64_t now = loop->now_ms();
  // Backwards: a timed-out connection is swap-removed with one we have already visited.
  for (std::size_t i = active.size(); i-- > 0;) {
    if (i >= active.size()) continue;
    connection* c = active[i];
    if (c->deadline() != 0 && now >= c->deadline()) c->on_timeout();
  }
}

bool loop_context::close_oldest_idle() {
  connection* oldest = nullptr;
  for (connection* c : active) {
    if (c->idle() && (!oldest || c->idle_since() < oldest->idle_since())) oldest = c;
  }
  if (!oldest) return false;
  oldest->close_now();
  return true;
}

void loop_context::begin_drain() {
  if (draining) return;
  draining = true;
  if (accept) accept->close();
  for (std::size_t i = active.size(); i-- > 0;) {
    if (i < active.size()) active[i]->drain();
  }
  loop->add_timer(opts->drain_timeout, [this] { force_close_all(); });
  check_drained();
}

void loop_context::force_close_all() {
  while (!active.empty()) active.back()->close_now();
}

void loop_context::check_drained() {
  if (draining && active.empty() && on_drained) {
    auto fn = std::move(on_drained);
    on_drained = nullptr;
    fn();
  }
}

}  // namespace weir::http
