#include "streams/command_codec.h"

#include <cstdint>
#include <type_traits>

namespace weir::streams {

const std::string& command_path(const command& c) {
  return std::visit(
      [](const auto& v) -> const std::string& {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, fork_retain_command> || std::is_same_v<T, fork_release_command>) {
          return v.source;
        } else {
          return v.path;
        }
      },
      c);
}

namespace {

class writer {
 public:
  void u8(std::uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void var(std::uint64_t v) {
    while (v >= 0x80) {
      u8(static_cast<std::uint8_t>(v | 0x80));
      v >>= 7;
    }
    u8(static_cast<std::uint8_t>(v));
  }
  void svar(std::int64_t v) {
    var((static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63));
  }
  void str(std::string_view s) {
    var(s.size());
    out_.append(s);
  }
  void boolean(bool b) { u8(b ? 1 : 0); }
  template <class T, class F>
  void opt(const std::optional<T>& o, F&& f) {
    boolean(o.has_value());
    if (o) f(*o);
  }
  void pay(const payload& p) {
    str(p.bytes ? std::string_view(*p.bytes) : std::string_view());
    var(p.messages);
    u8(static_cast<std::uint8_t>((p.json_invalid ? 1 : 0) | (p.json_empty_array ? 2 : 0)));
  }
  void exp(const expiry_config& e) {
    opt(e.ttl_seconds, [&](std::uint64_t v) { var(v); });
    opt(e.expires_at_ms, [&](std::int64_t v) { svar(v); });
    str(e.expires_at_text);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class reader {
 public:
  explicit reader(std::string_view in) : in_(in) {}
  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == in_.size(); }

  std::uint8_t u8() {
    if (pos_ >= in_.size()) {
      ok_ = false;
      return 0;
    }
    return static_cast<std::uint8_t>(in_[pos_++]);
  }
  std::uint64_t var() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64 && ok_; shift += 7) {
      std::uint8_t b = u8();
      v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    ok_ = false;
    return 0;
  }
  std::int64_t svar() {
    std::uint64_t z = var();
    return static_cast<std::int64_t>((z >> 1) ^ (~(z & 1) + 1));
  }
  std::string str() {
    std::uint64_t n = var();
    if (!ok_ || n > in_.size() - pos_) {
      ok_ = false;
      return {};
    }
    std::string s(in_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  bool boolean() {
    std::uint8_t b = u8();
    if (b > 1) ok_ = false;
    return b == 1;
  }
  template <class T, class F>
  std::optional<T> opt(F&& f) {
    if (!boolean()) return std::nullopt;
    return f();
  }
  payload pay() {
    payload p;
    std::string bytes = str();
    if (!bytes.empty()) p.bytes = make_chunk(std::move(bytes));
    p.messages = static_cast<std::uint32_t>(var());
    std::uint8_t flags = u8();
    if (flags > 3) ok_ = false;
    p.json_invalid = flags & 1;
    p.json_empty_array = flags & 2;
    return p;
  }
  expiry_config exp() {
    expiry_config e;
    e.ttl_seconds = opt<std::uint64_t>([&] { return var(); });
    e.expires_at_ms = opt<std::int64_t>([&] { return svar(); });
    e.expires_at_text = str();
    return e;
  }

 private:
  std::string_view in_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace

std::string encode(const command& c) {
  writer w;
  w.u8(static_cast<std::uint8_t>(c.index() + 1));
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, create_command>) {
          w.str(v.path);
          w.str(v.content_type);
          w.exp(v.expiry);
          w.boolean(v.closed);
          w.pay(v.initial);
          w.opt(v.fork, [&](const fork_spec& f) {
            w.str(f.source);
            w.opt(f.offset, [&](stream_offset o) { w.var(o.value()); });
            w.var(f.sub_offset);
            w.var(f.resolved.point.value());
            w.pay(f.resolved.prefix);
            w.str(f.resolved.source_content_type);
            w.exp(f.resolved.source_expiry);
            w.boolean(f.resolved.retained);
          });
          w.svar(v.now_ms);
        } else if constexpr (std::is_same_v<T, append_command>) {
          w.str(v.path);
          w.opt(v.content_type, [&](const std::string& s) { w.str(s); });
          w.pay(v.body);
          w.opt(v.stream_seq, [&](const std::string& s) { w.str(s); });
          w.opt(v.producer, [&](const producer_ref& p) {
            w.str(p.id);
            w.var(p.epoch);
            w.var(p.seq);
          });
          w.boolean(v.close);
          w.svar(v.now_ms);
        } else if constexpr (std::is_same_v<T, fork_retain_command>) {
          w.str(v.source);
          w.opt(v.offset, [&](stream_offset o) { w.var(o.value()); });
          w.var(v.sub_offset);
          w.str(v.content_type);
          w.svar(v.now_ms);
        } else if constexpr (std::is_same_v<T, fork_release_command>) {
          w.str(v.source);
        } else {  // delete, touch, expire: path + time
          w.str(v.path);
          w.svar(v.now_ms);
        }
      },
      c);
  return w.take();
}

result<command> decode(std::string_view bytes) {
  reader r(bytes);
  std::uint8_t kind = r.u8();
  std::optional<command> out;
  auto offset = [&] { return stream_offset(r.var()); };
  switch (kind) {
    case 1: {
      create_command v;
      v.path = r.str();
      v.content_type = r.str();
      v.expiry = r.exp();
      v.closed = r.boolean();
      v.initial = r.pay();
      v.fork = r.opt<fork_spec>([&] {
        fork_spec f;
        f.source = r.str();
        f.offset = r.opt<stream_offset>(offset);
        f.sub_offset = r.var();
        f.resolved.point = offset();
        f.resolved.prefix = r.pay();
        f.resolved.source_content_type = r.str();
        f.resolved.source_expiry = r.exp();
        f.resolved.retained = r.boolean();
        return f;
      });
      v.now_ms = r.svar();
      out = std::move(v);
      break;
    }
    case 2: {
      append_command v;
      v.path = r.str();
      v.content_type = r.opt<std::string>([&] { return r.str(); });
      v.body = r.pay();
      v.stream_seq = r.opt<std::string>([&] { return r.str(); });
      v.producer = r.opt<producer_ref>([&] {
        producer_ref p;
        p.id = r.str();
        p.epoch = r.var();
        p.seq = r.var();
        return p;
      });
      v.close = r.boolean();
      v.now_ms = r.svar();
      out = std::move(v);
      break;
    }
    case 3:
    case 4:
    case 5: {
      std::string path = r.str();
      std::int64_t now = r.svar();
      if (kind == 3) out = delete_command{std::move(path), now};
      if (kind == 4) out = touch_command{std::move(path), now};
      if (kind == 5) out = expire_command{std::move(path), now};
      break;
    }
    case 6: {
      fork_retain_command v;
      v.source = r.str();
      v.offset = r.opt<stream_offset>(offset);
      v.sub_offset = r.var();
      v.content_type = r.str();
      v.now_ms = r.svar();
      out = std::move(v);
      break;
    }
    case 7:
      out = fork_release_command{r.str()};
      break;
    default:
      return make_error(codec_errc::bad_kind, "unknown command kind");
  }
  if (!r.ok()) return make_error(codec_errc::truncated, "truncated or malformed command");
  if (!r.at_end()) return make_error(codec_errc::bad_value, "trailing bytes after command");
  return std::move(*out);
}

}  // namespace weir::streams
