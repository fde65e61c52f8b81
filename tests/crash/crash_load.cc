#include "crash/crash_load.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace weir::crash_test {

namespace {

const char* const k_json_pieces[] = {"a", "b",    "z",    "Q",   "7",       " ",        "-",
                                     "_", "\\\"", "\\\\", "\\n", "\\u00e9", "\xc3\xa9", "\xe6\x97\xa5",
                                     "{", "]",    ",",    ":"};

std::string describe_reply(const http_reply& r) {
  if (!r.ok()) return "transport error: " + r.error;
  std::string s = "status " + std::to_string(r.status);
  if (r.has_header("Stream-Next-Offset")) s += ", Stream-Next-Offset " + r.next_offset();
  if (r.has_header("Stream-Closed")) s += ", Stream-Closed " + r.header("Stream-Closed");
  std::string body = r.body.substr(0, 120);
  while (!body.empty() && std::isspace(static_cast<unsigned char>(body.back()))) body.pop_back();
  if (!body.empty()) s += ", body \"" + body + "\"";
  return s;
}

header_list producer_headers(const stream_model& s, const append_record& a) {
  return {{"Content-Type", content_type_of(s.kind)},
          {"Producer-Id", s.producer_id},
          {"Producer-Epoch", std::to_string(a.epoch)},
          {"Producer-Seq", std::to_string(a.producer_seq)}};
}

}  // namespace

std::string url_encode(const std::string& s) {
  std::string out;
  for (unsigned char ch : s) {
    if (std::isalnum(ch) || ch == '-' || ch == '.' || ch == '_' || ch == '~') {
      out.push_back(static_cast<char>(ch));
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", ch);
      out += buf;
    }
  }
  return out;
}

const char* content_type_of(stream_kind k) {
  return k == stream_kind::json ? "application/json" : "application/octet-stream";
}

load_writer::load_writer(crash_model& model, writer_state& state, problem_log& problems,
                         std::vector<int> shared, std::uint64_t seed, int cycle)
    : model_(model), st_(state), problems_(problems), shared_(std::move(shared)), rng_(seed), cycle_(cycle) {}

void load_writer::unexpected(const stream_model& s, const std::string& what, const http_reply& r) {
  problems_.add("unexpected answer under load",
                what + " on " + s.path + " (cycle " + std::to_string(cycle_) + "): " + describe_reply(r));
}

stream_model* load_writer::pick_owned_bytes(bool usable_only) {
  std::vector<stream_model*> c;
  for (int id : st_.bytes_streams) {
    stream_model& s = model_.at(static_cast<std::size_t>(id));
    std::lock_guard lock(s.mu);
    if (usable_only ? s.usable() : must_exist(s.created)) c.push_back(&s);
  }
  if (c.empty()) return nullptr;
  return c[rng_() % c.size()];
}

void load_writer::run(std::uint16_t port, const std::atomic<bool>& stop, std::uint64_t max_requests) {
  blocking_client c(port);
  auto usable = [&](int id) {
    if (id < 0) return false;
    stream_model& s = model_.at(static_cast<std::size_t>(id));
    std::lock_guard lock(s.mu);
    return s.usable();
  };
  for (std::uint64_t i = 0; i < max_requests && !stop.load(std::memory_order_relaxed); ++i) {
    ++counts_.requests;
    bool alive = true;
    std::size_t usable_bytes = 0;
    for (int id : st_.bytes_streams) usable_bytes += usable(id) ? 1 : 0;
    if (usable_bytes < 2) {
      alive = create_stream(c, stream_kind::bytes, false);
    } else if (!usable(st_.json_stream)) {
      alive = create_stream(c, stream_kind::json, false);
    } else if (!usable(st_.producer_stream)) {
      alive = create_stream(c, stream_kind::bytes, true);
    } else {
      const auto r = rng_() % 100;
      if (r < 38) {
        alive = append_bytes(c, *pick_owned_bytes(true));
      } else if (r < 48 && !shared_.empty()) {
        alive = append_bytes(c, model_.at(static_cast<std::size_t>(shared_[rng_() % shared_.size()])));
      } else if (r < 66) {
        alive = append_json(c, model_.at(static_cast<std::size_t>(st_.json_stream)));
      } else if (r < 88) {
        alive = append_producer(c, model_.at(static_cast<std::size_t>(st_.producer_stream)));
      } else if (r < 93) {
        alive = fork_stream(c, *pick_owned_bytes(false));
      } else if (r < 97 && usable_bytes > 2) {
        alive = close_stream(c, *pick_owned_bytes(true));
      } else if (usable_bytes < 5) {
        alive = create_stream(c, stream_kind::bytes, false);
      } else {
        alive = append_bytes(c, *pick_owned_bytes(true));
      }
    }
    if (!alive) return;  // the kill: this writer's last request stays pending
  }
}

std::string load_writer::bytes_body(const stream_model& s, std::uint64_t seq) {
  const auto r = rng_() % 100;
  const std::size_t len = r < 70 ? 1 + rng_() % 400 : r < 97 ? 400 + rng_() % 3600 : 20'000 + rng_() % 60'000;
  char head[96];
  std::snprintf(head, sizeof head, "[s%d w%u n%llu l%zu]", s.id, st_.id, static_cast<unsigned long long>(seq),
                len);
  std::string body = head;
  body.reserve(body.size() + len);
  for (std::size_t i = 0; i < len; ++i) body.push_back(static_cast<char>(rng_() & 0xff));
  return body;
}

std::vector<std::string> load_writer::json_messages(const stream_model& s, std::uint64_t seq) {
  const std::size_t count = 1 + rng_() % 4;
  std::vector<std::string> out;
  for (std::size_t i = 0; i < count; ++i) {
    std::string m = "{\"k\":\"s" + std::to_string(s.id) + "/w" + std::to_string(st_.id) + "/n" +
                    std::to_string(seq) + "/i" + std::to_string(i) + "\",\"p\":\"";
    const std::size_t pieces = 1 + rng_() % 60;
    for (std::size_t j = 0; j < pieces; ++j) m += k_json_pieces[rng_() % std::size(k_json_pieces)];
    m += "\"}";
    out.push_back(std::move(m));
  }
  return out;
}

bool load_writer::finish_append(stream_model& s, std::size_t index, const http_reply& r, bool expect_close,
                                int expect_status) {
  if (!r.ok()) return false;
  const bool status_ok = expect_status == 200 ? r.status == 200 : (r.status == 200 || r.status == 204);
  const bool ok = status_ok && !r.next_offset().empty() && r.closed() == expect_close;
  std::string what;
  {
    std::lock_guard lock(s.mu);
    append_record& a = s.appends[index];
    if (ok) {
      a.state = outcome::acked;
      a.ack_offset = r.next_offset();
      ++counts_.acked_appends;
    } else {
      a.state = outcome::absent;  // refused: it must not be stored (and is reported below)
      what = std::string(expect_close ? "append-and-close"
                         : a.producer ? "producer append"
                                      : "append") +
             " of " + std::to_string(a.body.size()) + " bytes";
    }
  }
  if (!ok) unexpected(s, what, r);
  return true;
}

bool load_writer::append_bytes(blocking_client& c, stream_model& s) {
  const std::uint64_t seq = st_.next_seq++;
  std::string body = bytes_body(s, seq);
  std::size_t index;
  {
    std::lock_guard lock(s.mu);
    s.appends.push_back({.writer = st_.id, .seq = seq, .body = body, .cycle = cycle_});
    index = s.appends.size() - 1;
  }
  const http_reply r = c.request("POST", s.path, {{"Content-Type", content_type_of(s.kind)}}, body);
  return finish_append(s, index, r, false, 204);
}

bool load_writer::append_json(blocking_client& c, stream_model& s) {
  const std::uint64_t seq = st_.next_seq++;
  std::vector<std::string> msgs = json_messages(s, seq);
  std::string body;
  if (msgs.size() == 1 && rng_() % 2 == 0) {
    body = msgs[0];
  } else {  // PROTOCOL.md 9.1.2: one level of array is flattened into separate messages
    body = "[";
    for (std::size_t i = 0; i < msgs.size(); ++i) body += (i ? "," : "") + msgs[i];
    body += "]";
  }
  std::size_t index;
  {
    std::lock_guard lock(s.mu);
    s.appends.push_back({.writer = st_.id, .seq = seq, .body = body, .messages = msgs, .cycle = cycle_});
    index = s.appends.size() - 1;
  }
  const http_reply r = c.request("POST", s.path, {{"Content-Type", content_type_of(s.kind)}}, body);
  return finish_append(s, index, r, false, 204);
}

bool load_writer::append_producer(blocking_client& c, stream_model& s) {
  // Now and then a new session: PROTOCOL.md 5.2.1 "Producer restart" (epoch + 1, seq back to 0).
  if (st_.next_producer_seq > 0 && rng_() % 100 < 4) {
    ++st_.epoch;
    st_.next_producer_seq = 0;
  }
  const std::uint64_t seq = st_.next_seq++;
  append_record a{.writer = st_.id,
                  .seq = seq,
                  .body = bytes_body(s, seq),
                  .producer = true,
                  .epoch = st_.epoch,
                  .producer_seq = st_.next_producer_seq++,
                  .cycle = cycle_};
  const header_list headers = producer_headers(s, a);
  const std::string body = a.body;
  std::size_t index;
  {
    std::lock_guard lock(s.mu);
    s.appends.push_back(std::move(a));
    index = s.appends.size() - 1;
  }
  const http_reply r = c.request("POST", s.path, headers, body);
  if (r.ok() && r.status == 200 &&
      (r.header("Producer-Epoch") != headers[2].second || r.header("Producer-Seq") != headers[3].second)) {
    unexpected(s, "producer append (epoch " + headers[2].second + ", seq " + headers[3].second + ") echo", r);
  }
  return finish_append(s, index, r, false, 200);
}

bool load_writer::close_stream(blocking_client& c, stream_model& s) {
  const bool with_body = rng_() % 2 == 0;
  std::string body;
  std::size_t index = 0;
  {
    std::lock_guard lock(s.mu);
    s.close = outcome::pending;
    s.close_cycle = cycle_;
    if (with_body) {
      const std::uint64_t seq = st_.next_seq++;
      body = bytes_body(s, seq);
      s.appends.push_back({.writer = st_.id, .seq = seq, .body = body, .closes = true, .cycle = cycle_});
      index = s.appends.size() - 1;
      s.close_record = index;
    }
  }
  ++counts_.closes;
  header_list h = {{"Stream-Closed", "true"}};
  if (with_body) h.emplace_back("Content-Type", content_type_of(s.kind));
  const http_reply r = c.request("POST", s.path, h, body);
  if (!r.ok()) return false;
  if (with_body) {
    finish_append(s, index, r, true, 204);
    std::lock_guard lock(s.mu);
    s.close = s.appends[index].state == outcome::acked ? outcome::acked : outcome::absent;
    return true;
  }
  // PROTOCOL.md 5.3: close-only answers 204 with Stream-Closed: true and the unchanged tail.
  const bool ok = r.status == 204 && r.closed() && !r.next_offset().empty();
  {
    std::lock_guard lock(s.mu);
    s.close = ok ? outcome::acked : outcome::absent;
  }
  if (!ok) unexpected(s, "close", r);
  return true;
}

bool load_writer::fork_stream(blocking_client& c, stream_model& source) {
  std::size_t after = 0;
  std::string offset;
  {
    std::lock_guard lock(source.mu);
    for (std::size_t i = source.appends.size(); i-- > 0;) {
      if (source.appends[i].state == outcome::acked) {
        after = i;
        offset = source.appends[i].ack_offset;
        break;
      }
    }
  }
  if (offset.empty()) return append_bytes(c, source.usable() ? source : *pick_owned_bytes(true));
  stream_model& f = model_.add_stream(stream_kind::bytes, static_cast<int>(st_.id), cycle_);
  {
    std::lock_guard lock(f.mu);
    f.source = source.id;
    f.fork_after = after;
    f.fork_offset = offset;
  }
  st_.bytes_streams.push_back(f.id);
  ++counts_.forks;
  // PROTOCOL.md 4.2: the fork inherits the source's data up to (not including) Stream-Fork-Offset.
  const http_reply r = c.request("PUT", f.path,
                                 {{"Content-Type", content_type_of(stream_kind::bytes)},
                                  {"Stream-Forked-From", source.path},
                                  {"Stream-Fork-Offset", offset}});
  if (!r.ok()) return false;
  {
    std::lock_guard lock(f.mu);
    f.created = r.status == 201 ? outcome::acked : outcome::absent;
    f.create_offset = r.next_offset();
  }
  if (r.status != 201) unexpected(f, "fork of " + source.path + " at " + offset, r);
  return true;
}

bool load_writer::create_stream(blocking_client& c, stream_kind kind, bool producer) {
  stream_model& s = model_.add_stream(kind, static_cast<int>(st_.id), cycle_);
  if (producer) {
    s.producer_id = "w" + std::to_string(st_.id) + "-s" + std::to_string(s.id);
    st_.producer_stream = s.id;
    st_.epoch = 0;
    st_.next_producer_seq = 0;
  } else if (kind == stream_kind::json) {
    st_.json_stream = s.id;
  } else {
    st_.bytes_streams.push_back(s.id);
  }
  ++counts_.creates;
  const http_reply r = c.request("PUT", s.path, {{"Content-Type", content_type_of(kind)}});
  if (!r.ok()) return false;
  {
    std::lock_guard lock(s.mu);
    s.created = r.status == 201 ? outcome::acked : outcome::absent;
    s.create_offset = r.next_offset();
  }
  if (r.status != 201) unexpected(s, "create", r);
  return true;
}

bool retry_producer(blocking_client& c, crash_model& model, writer_state& w, problem_log& problems,
                    std::mt19937_64& rng) {
  if (w.producer_stream < 0) return true;
  stream_model& s = model.at(static_cast<std::size_t>(w.producer_stream));
  if (s.created != outcome::acked && s.created != outcome::present) return true;  // resolved by the verifier
  auto report = [&](const append_record& a, const std::string& expected, const http_reply& r) {
    problems.add("producer retry answered wrongly",
                 s.path + " producer " + s.producer_id + " epoch " + std::to_string(a.epoch) + " seq " +
                     std::to_string(a.producer_seq) + " (" + outcome_name(a.state) + ", sent in cycle " +
                     std::to_string(a.cycle) + "): expected " + expected + ", got " + describe_reply(r));
  };
  // 1. The append the kill interrupted: the client cannot know whether it was stored, so it retries.
  if (!s.appends.empty() && s.appends.back().state == outcome::pending && s.appends.back().producer) {
    append_record& a = s.appends.back();
    const http_reply r = c.request("POST", s.path, producer_headers(s, a), a.body);
    if (!r.ok()) return false;
    if (r.status == 200 && !r.next_offset().empty()) {
      a.state = outcome::acked;  // it had been lost; now stored once
      a.ack_offset = r.next_offset();
    } else if (r.status == 204) {
      a.state = outcome::present;  // PROTOCOL.md 5.2.1: duplicate, already stored
    } else {
      report(a, "200 (was lost) or 204 (was stored)", r);
      a.state = outcome::absent;
    }
  }
  // 2. Acknowledged appends of the current epoch, again: duplicates, 204, never stored twice.
  std::vector<append_record*> same_epoch, older_epoch;
  for (auto& a : s.appends) {
    if (!a.producer || !must_exist(a.state)) continue;
    (a.epoch == w.epoch ? same_epoch : older_epoch).push_back(&a);
  }
  // The latest one (the server's lastSeq) and two others, each once.
  if (same_epoch.size() > 1) std::shuffle(same_epoch.begin(), same_epoch.end() - 1, rng);
  for (std::size_t i = 0; i < 3 && i < same_epoch.size(); ++i) {
    append_record& a = *same_epoch[i == 0 ? same_epoch.size() - 1 : i - 1];
    const http_reply r = c.request("POST", s.path, producer_headers(s, a), a.body);
    if (!r.ok()) return false;
    if (r.status != 204) report(a, "204 (duplicate)", r);
  }
  // 3. An older epoch: fenced (403 with the current epoch), so the fence itself survived the restart.
  if (!older_epoch.empty()) {
    append_record& a = *older_epoch[rng() % older_epoch.size()];
    const http_reply r = c.request("POST", s.path, producer_headers(s, a), a.body);
    if (!r.ok()) return false;
    if (r.status != 403 || r.header("Producer-Epoch") != std::to_string(w.epoch)) {
      report(a, "403 with Producer-Epoch " + std::to_string(w.epoch) + " (stale epoch)", r);
    }
  }
  return true;
}

}  // namespace weir::crash_test
