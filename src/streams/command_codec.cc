#include "streams/command_codec.h"

#include <cstdint>
#include <type_traits>

#include "streams/wire.h"

namespace weir::streams {

const payload* command_data(const command& c) {
  if (auto* a = std::get_if<append_command>(&c)) return &a->body;
  if (auto* cr = std::get_if<create_command>(&c)) return &cr->initial;
  return nullptr;
}

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

std::string encode(const command& c, std::uint32_t* data_offset) {
  std::string out;
  encode_into(c, out, data_offset);
  return out;
}

void encode_into(const command& c, std::string& out, std::uint32_t* data_offset) {
  wire::writer w(std::move(out));
  // One allocation at most: room for the payload (the bulk of an append) plus the small fields.
  const payload* data = command_data(c);
  w.reserve((data ? data->size() : 0) + command_path(c).size() + 128);
  // Where a non-empty payload's bytes start in the encoding (the hot tier reads them back from there).
  auto mark = [&](const payload& p, std::size_t at) {
    if (data_offset && !p.empty()) *data_offset = static_cast<std::uint32_t>(at);
  };
  // A delete with a hold has a kind of its own (8), so that every other delete keeps the old encoding.
  const auto* del = std::get_if<delete_command>(&c);
  const bool held_delete = del && del->hold_ms > 0;
  // Likewise a fork's create with an origin (cluster mode) is kind 9: kind 1 plus the origin.
  const auto* cr = std::get_if<create_command>(&c);
  const bool with_origin = cr && cr->fork && cr->fork->resolved.origin;
  // And a retain naming its fork (10), a release naming its origin (11), a tombstone (12).
  const auto* retain = std::get_if<fork_retain_command>(&c);
  const bool with_fork = retain && !retain->fork.empty();
  // A retain carrying a record found in the bucket is kind 13: kind 10 (its fork may be empty) plus it;
  // one whose record decides (fork_retain_command::record_decides) is kind 14: kind 10, then the record
  // as an optional.
  const bool record_decides = retain && retain->record_decides;
  const bool with_point_record = retain && retain->point_record && !record_decides;
  const auto* release = std::get_if<fork_release_command>(&c);
  const bool by_origin = release && release->origin;
  w.u8(held_delete                                         ? std::uint8_t{8}
       : record_decides                                    ? std::uint8_t{14}
       : with_origin                                       ? std::uint8_t{9}
       : with_point_record                                 ? std::uint8_t{13}
       : with_fork                                         ? std::uint8_t{10}
       : by_origin                                         ? std::uint8_t{11}
       : std::holds_alternative<fork_tombstone_command>(c) ? std::uint8_t{12}
                                                           : static_cast<std::uint8_t>(c.index() + 1));
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, create_command>) {
          w.str(v.path);
          w.str(v.content_type);
          w.exp(v.expiry);
          w.boolean(v.closed);
          mark(v.initial, w.pay(v.initial));
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
          if (with_origin) {
            w.var(v.fork->resolved.origin->group);
            w.var(v.fork->resolved.origin->index);
          }
        } else if constexpr (std::is_same_v<T, append_command>) {
          w.str(v.path);
          w.opt(v.content_type, [&](const std::string& s) { w.str(s); });
          mark(v.body, w.pay(v.body));
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
          if (with_fork || with_point_record || record_decides) w.str(v.fork);
          auto put_record = [&](const carried_record& b) {
            w.var(b.end.value());
            w.var(b.messages);
          };
          if (with_point_record) put_record(*v.point_record);
          if (record_decides) w.opt(v.point_record, put_record);
        } else if constexpr (std::is_same_v<T, fork_release_command>) {
          w.str(v.source);
          if (by_origin) {
            w.var(v.origin->group);
            w.var(v.origin->index);
          }
        } else if constexpr (std::is_same_v<T, fork_tombstone_command>) {
          w.str(v.path);
          w.var(v.origin.group);
          w.var(v.origin.index);
          w.var(v.group);
          w.svar(v.now_ms);
        } else {  // delete, touch, expire: path + time (+ the hold of kind 8)
          w.str(v.path);
          w.svar(v.now_ms);
          if constexpr (std::is_same_v<T, delete_command>) {
            if (held_delete) w.svar(v.hold_ms);
          }
        }
      },
      c);
  out = w.take();
}

result<command> decode(std::string_view bytes, std::uint32_t* data_offset) {
  wire::reader r(bytes);
  std::uint8_t kind = r.u8();
  std::optional<command> out;
  auto offset = [&] { return stream_offset(r.var()); };
  auto u32 = [&] {
    const std::uint64_t v = r.var();
    if (v > 0xffffffffu) r.fail();
    return static_cast<std::uint32_t>(v);
  };
  switch (kind) {
    case 1:
    case 9: {
      create_command v;
      v.path = r.str();
      v.content_type = r.str();
      v.expiry = r.exp();
      v.closed = r.boolean();
      v.initial = r.pay(data_offset);
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
      if (kind == 9) {
        if (r.ok() && !v.fork) return make_error(codec_errc::bad_value, "fork origin without a fork");
        fork_origin o;
        o.group = u32();
        o.index = r.var();
        if (v.fork) v.fork->resolved.origin = o;
      }
      out = std::move(v);
      break;
    }
    case 2: {
      append_command v;
      v.path = r.str();
      v.content_type = r.opt<std::string>([&] { return r.str(); });
      v.body = r.pay(data_offset);
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
    case 6:
    case 10:
    case 13:
    case 14: {
      fork_retain_command v;
      v.source = r.str();
      v.offset = r.opt<stream_offset>(offset);
      v.sub_offset = r.var();
      v.content_type = r.str();
      v.now_ms = r.svar();
      if (kind == 10) {
        v.fork = r.str();
        if (r.ok() && v.fork.empty()) return make_error(codec_errc::bad_value, "retain naming an empty fork");
      }
      auto carried = [&] {
        carried_record b;
        b.end = offset();
        b.messages = u32();
        return b;
      };
      if (kind == 13) {
        v.fork = r.str();
        v.point_record = carried();
      }
      if (kind == 14) {
        v.fork = r.str();
        v.record_decides = true;
        v.point_record = r.opt<carried_record>(carried);
      }
      out = std::move(v);
      break;
    }
    case 7:
    case 11: {
      fork_release_command v;
      v.source = r.str();
      if (kind == 11) {
        fork_origin o;
        o.group = u32();
        o.index = r.var();
        v.origin = o;
      }
      out = std::move(v);
      break;
    }
    case 12: {
      fork_tombstone_command v;
      v.path = r.str();
      v.origin.group = u32();
      v.origin.index = r.var();
      v.group = u32();
      v.now_ms = r.svar();
      out = std::move(v);
      break;
    }
    case 8: {
      delete_command v;
      v.path = r.str();
      v.now_ms = r.svar();
      v.hold_ms = r.svar();
      if (r.ok() && v.hold_ms <= 0) return make_error(codec_errc::bad_value, "held delete without a hold");
      out = std::move(v);
      break;
    }
    default:
      return make_error(codec_errc::bad_kind, "unknown command kind");
  }
  if (!r.ok()) return make_error(codec_errc::truncated, "truncated or malformed command");
  if (!r.at_end()) return make_error(codec_errc::bad_value, "trailing bytes after command");
  return std::move(*out);
}

}  // namespace weir::streams
