#include "crash/crash_verifier.h"

#include <simdjson.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <thread>

#include "crash/crash_load.h"

namespace weir::crash_test {

namespace {

// Messages of one JSON read (an array, PROTOCOL.md 9.1.5), minified, with their "k" fields.
bool parse_json_array(const std::string& body, std::vector<std::string>& messages,
                      std::vector<std::string>& keys, std::string& error) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(body);
  simdjson::dom::element doc;
  simdjson::dom::array arr;
  if (parser.parse(padded).get(doc) != simdjson::SUCCESS || doc.get_array().get(arr) != simdjson::SUCCESS) {
    error = "JSON read is not a JSON array: \"" + body.substr(0, 200) + "\"";
    return false;
  }
  for (simdjson::dom::element el : arr) {
    messages.push_back(simdjson::minify(el));
    std::string_view k;
    keys.emplace_back(el["k"].get_string().get(k) == simdjson::SUCCESS ? std::string(k) : std::string());
  }
  return true;
}

// The sent message in the same minified form as a read-back (the server may re-serialize JSON).
std::string normalized(const std::string& message) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(message);
  simdjson::dom::element doc;
  if (parser.parse(padded).get(doc) != simdjson::SUCCESS) return message;
  return simdjson::minify(doc);
}

std::string hex_preview(std::string_view bytes) {
  std::string out;
  char buf[8];
  for (unsigned char ch : bytes.substr(0, 24)) {
    if (ch >= 0x20 && ch < 0x7f) {
      out.push_back(static_cast<char>(ch));
    } else {
      std::snprintf(buf, sizeof buf, "\\x%02x", ch);
      out += buf;
    }
  }
  return out;
}

std::size_t first_difference(std::string_view a, std::string_view b) {
  std::size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return i;
}

using record_index = std::map<std::pair<std::uint32_t, std::uint64_t>, std::size_t>;

record_index index_of(const stream_model& s) {
  record_index idx;
  for (std::size_t i = 0; i < s.appends.size(); ++i) idx[{s.appends[i].writer, s.appends[i].seq}] = i;
  return idx;
}

}  // namespace

readback read_stream(blocking_client& c, const stream_model& s) {
  readback rb;
  const http_reply h = c.request("HEAD", s.path);
  if (!h.ok()) {
    rb.error = "HEAD " + s.path + ": " + h.error;
    return rb;
  }
  rb.head_status = h.status;
  if (h.status != 200) return rb;
  rb.head_closed = h.closed();
  rb.head_content_type = h.header("Content-Type");
  std::string offset = "-1";  // PROTOCOL.md 8: the stream beginning
  for (int i = 0; i < 1'000'000; ++i) {
    const http_reply r = c.request("GET", s.path + "?offset=" + url_encode(offset));
    if (!r.ok() || r.status != 200) {
      rb.error = "GET " + s.path + "?offset=" + offset + ": " +
                 (r.ok() ? "status " + std::to_string(r.status) + " " + r.body.substr(0, 200) : r.error);
      return rb;
    }
    std::size_t got = r.body.size();
    if (s.kind == stream_kind::json) {
      const std::size_t before = rb.messages.size();
      if (!parse_json_array(r.body, rb.messages, rb.keys, rb.error)) return rb;
      got = rb.messages.size() - before;
    } else {
      rb.content += r.body;
    }
    const std::string next = r.next_offset();
    if (next.empty()) {
      rb.error = "GET " + s.path + "?offset=" + offset + " has no Stream-Next-Offset";
      return rb;
    }
    if (r.up_to_date()) {
      rb.closed_at_tail = r.closed();
      return rb;
    }
    if (got == 0 && next == offset) {
      rb.error = "GET " + s.path + "?offset=" + offset + " made no progress and is not up to date";
      return rb;
    }
    offset = next;
  }
  rb.error = "GET " + s.path + ": more than a million reads without reaching the tail";
  return rb;
}

crash_verifier::crash_verifier(crash_model& model, problem_log& problems, int cycle, std::uint64_t seed,
                               std::size_t old_ack_sample)
    : model_(model), problems_(problems), cycle_(cycle), rng_(seed), old_ack_sample_(old_ack_sample) {}

std::string crash_verifier::describe(const stream_model& s, const append_record& a) const {
  std::string d = (a.producer ? "producer append (epoch " + std::to_string(a.epoch) + ", seq " +
                                    std::to_string(a.producer_seq) + ")"
                              : std::string(a.closes ? "append-and-close" : "append")) +
                  " w" + std::to_string(a.writer) + " n" + std::to_string(a.seq) + " of " +
                  std::to_string(s.kind == stream_kind::json ? a.messages.size() : a.body.size()) +
                  (s.kind == stream_kind::json ? " messages" : " bytes") + " to " + s.path + ", " +
                  outcome_name(a.state) + " (cycle " + std::to_string(a.cycle) + ")";
  if (!a.ack_offset.empty()) d += ", ack Stream-Next-Offset " + a.ack_offset;
  return d;
}

void crash_verifier::run(std::uint16_t port, int threads) {
  const std::vector<stream_model*> streams = model_.all();
  std::vector<readback> reads(streams.size());
  std::atomic<std::size_t> next{0};
  auto read_worker = [&] {
    blocking_client c(port);
    for (std::size_t i; (i = next.fetch_add(1)) < streams.size();) reads[i] = read_stream(c, *streams[i]);
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(read_worker);
  for (auto& t : pool) t.join();
  pool.clear();

  // Sources before forks: a fork always has a higher id than its source.
  for (std::size_t i = 0; i < streams.size(); ++i) check_stream(*streams[i], reads[i]);

  std::vector<std::pair<const stream_model*, const append_record*>> checks;
  for (stream_model* s : streams) {
    for (const append_record* a : pick_ack_checks(*s)) checks.emplace_back(s, a);
  }
  next = 0;
  auto ack_worker = [&] {
    blocking_client c(port);
    for (std::size_t i; (i = next.fetch_add(1)) < checks.size();)
      check_ack_offset(c, *checks[i].first, *checks[i].second);
  };
  for (int t = 0; t < threads; ++t) pool.emplace_back(ack_worker);
  for (auto& t : pool) t.join();
  counts_.ack_offsets_read += checks.size();
}

void crash_verifier::check_stream(stream_model& s, readback& rb) {
  ++counts_.streams;
  for (auto& a : s.appends) a.found = false;
  if (!rb.error.empty()) {
    problems_.add("read failed", rb.error);
    return;
  }
  std::size_t acked = 0;
  for (const auto& a : s.appends) acked += a.state == outcome::acked ? 1 : 0;
  const std::string what = std::string(s.kind == stream_kind::json ? "JSON" : "bytes") +
                           (s.source >= 0 ? " fork" : "") + (s.producer_id.empty() ? "" : " producer") +
                           " stream " + s.path + " (created in cycle " + std::to_string(s.cycle_created) +
                           ", " + outcome_name(s.created) + ", " + std::to_string(acked) +
                           " acknowledged appends)";
  if (s.created == outcome::pending && (rb.head_status == 200 || rb.head_status == 404)) {
    s.created = rb.head_status == 200 ? outcome::present : outcome::absent;
  }
  if (must_exist(s.created) && rb.head_status != 200) {
    problems_.add("stream lost", what + ": HEAD answered " + std::to_string(rb.head_status));
    problems_.count("acknowledged append lost (with its stream)", acked);
    return;
  }
  if (!must_exist(s.created)) {
    if (rb.head_status != 404) {
      problems_.add("stream that was never created exists",
                    what + ": HEAD answered " + std::to_string(rb.head_status));
    }
    return;
  }
  if (rb.head_content_type != content_type_of(s.kind)) {
    problems_.add("content type changed", what + ": Content-Type \"" + rb.head_content_type + "\"");
  }
  std::vector<std::size_t> order;  // indices of the found appends, in stream order
  if (s.kind == stream_kind::json) {
    parse_json(s, rb, order);
  } else {
    parse_bytes(s, rb, fork_start(s, rb), order);
  }
  const std::size_t size = s.kind == stream_kind::json ? rb.messages.size() : rb.content.size();

  for (auto& a : s.appends) {
    if (must_exist(a.state) && !a.found) {
      problems_.add(a.state == outcome::acked ? "acknowledged append lost" : "append found earlier now lost",
                    describe(s, a));
    }
    if (a.state == outcome::acked) ++counts_.acked_checked;
    if (a.state == outcome::pending) {
      a.state = a.found ? outcome::present : outcome::absent;
      ++(a.found ? counts_.pending_present : counts_.pending_absent);
    }
  }
  // Each writer's appends are sequential, so they must read back in the order they were sent.
  std::map<std::uint32_t, std::uint64_t> last_seq;
  for (std::size_t i : order) {
    const append_record& a = s.appends[i];
    auto it = last_seq.find(a.writer);
    if (it != last_seq.end() && it->second > a.seq) {
      problems_.add("appends reordered", describe(s, a) + " reads back after n" + std::to_string(it->second));
    }
    last_seq[a.writer] = a.seq;
  }
  // PROTOCOL.md 8: offsets of later data sort after offsets of earlier data.
  const append_record* prev = nullptr;
  for (std::size_t i : order) {
    const append_record& a = s.appends[i];
    if (a.ack_offset.empty()) continue;
    if (prev != nullptr && !(prev->ack_offset < a.ack_offset)) {
      problems_.add("ack offsets out of order", describe(s, a) + " lies after " + describe(s, *prev) +
                                                    " but its offset does not sort after it");
    }
    prev = &a;
  }
  check_closure(s, rb, size);
  check_prefix(s, rb);
  s.verified = true;
  s.content = std::move(rb.content);
  s.messages = std::move(rb.messages);
}

std::size_t crash_verifier::fork_start(stream_model& s, const readback& rb) {
  if (s.source < 0) return 0;
  const stream_model& src = model_.at(static_cast<std::size_t>(s.source));
  const append_record& at = src.appends[s.fork_after];
  if (!at.found) {
    problems_.add("fork prefix unknown", s.path + ": the source append its fork offset " + s.fork_offset +
                                             " follows was not found in " + src.path);
    return 0;
  }
  const std::size_t n = at.end;
  const std::string_view inherited = std::string_view(rb.content).substr(0, n);
  if (rb.content.size() < n || inherited != std::string_view(src.content).substr(0, n)) {
    problems_.add("fork lost its inherited prefix",
                  s.path + " forked from " + src.path + " at " + s.fork_offset + " (" + std::to_string(n) +
                      " bytes): reads back " + std::to_string(rb.content.size()) +
                      " bytes, first difference at byte " +
                      std::to_string(first_difference(inherited, src.content)));
  }
  return std::min(n, rb.content.size());
}

void crash_verifier::parse_bytes(stream_model& s, const readback& rb, std::size_t start,
                                 std::vector<std::size_t>& order) {
  const record_index idx = index_of(s);
  const std::string& c = rb.content;
  for (std::size_t p = start; p < c.size();) {
    const std::size_t close = c.find(']', p);
    int sid = -1;
    unsigned w = 0;
    unsigned long long n = 0;
    std::size_t len = 0;
    auto foreign = [&](const std::string& why) {
      problems_.add("torn or foreign bytes", s.path + " at byte " + std::to_string(p) + " of " +
                                                 std::to_string(c.size()) + ": " + why + ": \"" +
                                                 hex_preview(std::string_view(c).substr(p)) + "\"");
    };
    if (c[p] != '[' || close == std::string::npos || close - p > 80 ||
        std::sscanf(c.c_str() + p, "[s%d w%u n%llu l%zu]", &sid, &w, &n, &len) != 4) {
      foreign("no append starts here");
      return;
    }
    char head[96];
    std::snprintf(head, sizeof head, "[s%d w%u n%llu l%zu]", sid, w, n, len);
    if (std::string_view(c).substr(p, close + 1 - p) != head) {
      foreign("malformed append header");
      return;
    }
    if (sid != s.id) {
      foreign("an append of stream /crash/s" + std::to_string(sid));
      return;
    }
    auto it = idx.find({w, n});
    if (it == idx.end()) {
      foreign("an append that was never sent to this stream");
      return;
    }
    append_record& a = s.appends[it->second];
    const std::string_view stored = std::string_view(c).substr(p, a.body.size());
    if (stored != a.body) {
      problems_.add("append torn or changed", describe(s, a) + ": at byte " + std::to_string(p) +
                                                  " reads back " + std::to_string(stored.size()) +
                                                  " bytes, first difference at byte " +
                                                  std::to_string(first_difference(stored, a.body)));
      return;
    }
    if (a.found) problems_.add("append stored twice", describe(s, a));
    if (a.state == outcome::absent) problems_.add("absent or refused append appeared", describe(s, a));
    a.found = true;
    a.end = p + a.body.size();
    order.push_back(it->second);
    ++counts_.appends_found;
    p = a.end;
  }
}

void crash_verifier::parse_json(stream_model& s, const readback& rb, std::vector<std::size_t>& order) {
  const record_index idx = index_of(s);
  for (std::size_t p = 0; p < rb.messages.size();) {
    int sid = -1;
    unsigned w = 0;
    unsigned long long n = 0;
    std::size_t i = 0;
    const std::string& key = rb.keys[p];
    auto foreign = [&](const std::string& why) {
      problems_.add("torn or foreign JSON", s.path + " message " + std::to_string(p) + " of " +
                                                std::to_string(rb.messages.size()) + ": " + why + ": " +
                                                rb.messages[p].substr(0, 120));
    };
    if (std::sscanf(key.c_str(), "s%d/w%u/n%llu/i%zu", &sid, &w, &n, &i) != 4) {
      foreign("not a message of this test");
      return;
    }
    auto it = sid == s.id ? idx.find({w, n}) : idx.end();
    if (it == idx.end()) {
      foreign("a message that was never sent to this stream");
      return;
    }
    append_record& a = s.appends[it->second];
    // 9.1.1: an append's messages are one unit: all of them, in order, or none.
    for (std::size_t j = 0; j < a.messages.size(); ++j) {
      if (p + j >= rb.messages.size() || i != 0 || rb.messages[p + j] != normalized(a.messages[j])) {
        problems_.add("JSON append torn or changed", describe(s, a) + ": message " + std::to_string(j) +
                                                         " at position " + std::to_string(p + j) +
                                                         " differs");
        return;
      }
    }
    if (a.found) problems_.add("append stored twice", describe(s, a));
    if (a.state == outcome::absent) problems_.add("absent or refused append appeared", describe(s, a));
    a.found = true;
    a.end = p + a.messages.size();
    order.push_back(it->second);
    ++counts_.appends_found;
    p = a.end;
  }
}

void crash_verifier::check_closure(stream_model& s, const readback& rb, std::size_t size) {
  const bool closed = rb.head_closed;
  if (closed != rb.closed_at_tail) {
    problems_.add("closure inconsistent", s.path + ": HEAD says closed=" + (closed ? "true" : "false") +
                                              " but the read at the tail says " +
                                              (rb.closed_at_tail ? "true" : "false"));
  }
  if (s.close == outcome::pending) s.close = closed ? outcome::present : outcome::absent;
  if (s.close && must_exist(*s.close) && !closed) {
    problems_.add("acknowledged close lost", s.path + " (closed in cycle " + std::to_string(s.close_cycle) +
                                                 ", " + outcome_name(*s.close) + ") is open again");
  }
  if ((!s.close || *s.close == outcome::absent) && closed) {
    problems_.add("stream closed without a close", s.path + " reads back closed");
  }
  if (!s.close_record) return;
  // 4.1: an append-and-close is atomic: the body is the last data if and only if the stream is closed.
  const append_record& a = s.appends[*s.close_record];
  if (closed && (!a.found || a.end != size)) {
    problems_.add("append-and-close not atomic", describe(s, a) +
                                                     ": the stream is closed but the final append " +
                                                     (a.found ? "is not the last data" : "is missing"));
  }
  if (!closed && a.found) {
    problems_.add("append-and-close not atomic",
                  describe(s, a) + ": its data is stored but the stream is open");
  }
}

void crash_verifier::check_prefix(stream_model& s, const readback& rb) {
  if (!s.verified) return;
  if (s.kind == stream_kind::json) {
    const bool ok = rb.messages.size() >= s.messages.size() &&
                    std::equal(s.messages.begin(), s.messages.end(), rb.messages.begin());
    if (!ok) {
      problems_.add("data moved or vanished",
                    s.path + ": the " + std::to_string(s.messages.size()) +
                        " messages read after the previous restart are not a prefix of the " +
                        std::to_string(rb.messages.size()) + " read now");
    }
    return;
  }
  if (rb.content.compare(0, s.content.size(), s.content) != 0) {
    problems_.add("data moved or vanished", s.path + ": the " + std::to_string(s.content.size()) +
                                                " bytes read after the previous restart differ from the " +
                                                std::to_string(rb.content.size()) + " read now at byte " +
                                                std::to_string(first_difference(s.content, rb.content)));
  }
}

std::vector<const append_record*> crash_verifier::pick_ack_checks(const stream_model& s) {
  std::vector<const append_record*> now, old;
  for (const auto& a : s.appends) {
    if (a.state != outcome::acked || !a.found) continue;
    (a.cycle >= cycle_ ? now : old).push_back(&a);
  }
  std::shuffle(old.begin(), old.end(), rng_);
  const std::size_t keep = std::min(old.size(), old_ack_sample_);
  now.insert(now.end(), old.begin(), old.begin() + static_cast<std::ptrdiff_t>(keep));
  return now;
}

void crash_verifier::check_ack_offset(blocking_client& c, const stream_model& s, const append_record& a) {
  // The ack said: "your append ends here". A read from there must start with whatever follows it.
  const http_reply r = c.request("GET", s.path + "?offset=" + url_encode(a.ack_offset));
  if (!r.ok() || r.status != 200) {
    problems_.add("ack offset no longer readable",
                  describe(s, a) + ": GET answered " +
                      (r.ok() ? std::to_string(r.status) + " " + r.body.substr(0, 120) : r.error));
    return;
  }
  bool ok;
  std::size_t size;
  if (s.kind == stream_kind::json) {
    std::vector<std::string> msgs, keys;
    std::string error;
    size = s.messages.size();
    ok = parse_json_array(r.body, msgs, keys, error) && (msgs.empty() == (a.end == size)) &&
         a.end + msgs.size() <= size && std::equal(msgs.begin(), msgs.end(), s.messages.begin() + a.end);
  } else {
    size = s.content.size();
    ok = (r.body.empty() == (a.end == size)) && s.content.compare(a.end, r.body.size(), r.body) == 0;
  }
  if (!ok) {
    problems_.add("offset moved", describe(s, a) + ": it ends at position " + std::to_string(a.end) + " of " +
                                      std::to_string(size) +
                                      ", but a read from its ack offset returns other data");
  }
}

}  // namespace weir::crash_test
