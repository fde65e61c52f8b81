// partition: forks at offsets whose records a replica may not have (docs/cold-tier.md, "Forks"): inside
// bytes held only in the bucket, where no node keeps the records, and inside bytes of a stream whose
// commands apply in another log than the retain's. Where a record begins there is read by the node that
// proposes the retain (from an object's record table, or from its own records) and the retain carries it,
// so that every replica decides alike (state_machine::fork_retain).
#include <utility>

#include "base/log.h"
#include "replica/partition.h"

namespace weir::replica {

void partition::prepare_retain(streams::fork_retain_command c, retain_done done) {
  if (!c.offset) return done(std::move(c));
  const streams::stream_offset point = *c.offset;
  std::shared_ptr<const streams::memory_log> log = sm_.log_of(c.source);
  streams::read_result head = sm_.head(c.source, now_ms());
  if (!log || head.code != streams::errc::ok || !head.meta || point >= log->tail()) return done(std::move(c));
  // The stream whose own bytes hold the point, as fork_retain finds it.
  std::uint64_t limit = log->tail().value();
  const streams::memory_log* holder = log->holder_of(point.value(), limit);
  std::string stream = holder->name();
  const bool json = head.meta->json;
  // Whether the retain must say where a record begins: a sub-offset cuts one, and a JSON point must be
  // one unless that is known already (`start_known`).
  auto asks = [&](bool start_known) { return c.sub_offset > 0 || (json && !start_known); };
  // The record from this node's own records while it keeps them (no bucket read): the same record an
  // object's record table lists.
  auto from_records = [&] {
    std::optional<streams::record> r = log->record_at(point);
    if (r) c.point_record = streams::carried_record{streams::stream_offset(r->end), r->messages};
    return r.has_value();
  };
  if (sm_.log_of(stream).get() != holder || !commit_->same_log(c.source, stream)) {
    // Its commands apply in another log: the record the retain carries decides, from this node's records
    // while it keeps them, else from the bucket. Only a sub-offset or a JSON point other than the
    // holder's own start (a fork point) asks whether a record begins there.
    c.record_decides = true;
    if (!asks(point == holder->base()) || from_records()) return done(std::move(c));
    const std::string name = stream;
    return locate_bytes(name, point,
                        [this, c = std::move(c), stream = std::move(stream),
                         done = std::move(done)](std::optional<object_location> where) mutable {
                          // In neither: no record begins there.
                          if (!where) return done(std::move(c));
                          read_point_record(std::move(c), *where, std::move(stream), std::move(done));
                        });
  }
  auto end = cold_index_.cold_end(stream);
  if (!end || point >= *end) return done(std::move(c));  // not in bytes in objects: the records decide
  auto where = locate_objects(stream, point);
  if (!where) return done(std::move(c));
  // A JSON point at an extent's start is a record's start by the index alone; a byte stream's point
  // needs no record unless a sub-offset cuts it.
  if (!asks(where->extent.first == point) || from_records()) return done(std::move(c));
  read_point_record(std::move(c), *where, std::move(stream), std::move(done));
}

void partition::read_point_record(streams::fork_retain_command c, const object_location& where,
                                  std::string stream, retain_done done) {
  if (!lookup_record_) return done(std::move(c));  // no record tables to read: the index alone decides
  const streams::stream_offset point = *c.offset;
  lookup_record_(where.object.key, where.object.size, stream, point,
                 [stream, point, c = std::move(c), done = std::move(done)](
                     tier::store_result<std::optional<tier::object_record>> found) mutable {
                   if (!found) {
                     // An object of format version 1 has no record table: the retain refuses.
                     if (found.err().code == "NoRecordTable") return done(std::move(c));
                     log::warn("weir serve: fork of {} at {}: the record table could not be read: {}", stream,
                               point.value(), found.err().describe());
                     return done(found.err().to_error());
                   }
                   if (*found) c.point_record = streams::carried_record{(*found)->end, (*found)->messages};
                   done(std::move(c));
                 });
}

void partition::locate_bytes(const std::string& stream, streams::stream_offset from, located_fn done) {
  // Another partition's stream (a fork's source elsewhere): its owner's index says where the bytes are.
  if (foreign(stream)) return locate_foreign_(stream, from, std::move(done));
  done(locate_objects(stream, from));
}

void partition::read_bucket_bytes(std::string stream, streams::stream_offset from, std::uint64_t length,
                                  bytes_done done) {
  const std::string name = stream;
  locate_bytes(name, from,
               [this, stream = std::move(stream), from, length,
                done = std::move(done)](std::optional<object_location> where) mutable {
                 read_bucket_located(std::move(stream), from, length, {}, std::move(where), std::move(done));
               });
}

void partition::read_bucket_located(std::string stream, streams::stream_offset from, std::uint64_t length,
                                    std::string got, std::optional<object_location> where, bytes_done done) {
  const streams::stream_offset at(from.value() + got.size());
  if (!where || !fetch_object_) {
    const std::string why = (fetch_object_ ? "no object holds bytes " : "no cold tier here to read bytes ") +
                            std::to_string(at.value()) + " of " + stream;
    return ex_->post(
        [why, done = std::move(done)]() mutable { done(make_error(storage::errc::io_error, why)); });
  }
  const tier::cold_extent& e = where->extent;
  const std::uint64_t n = std::min(length - got.size(), e.end.value() - at.value());
  const std::uint64_t position = e.data_position + (at.value() - e.first.value());
  ++objects_in_flight_;
  ++bucket_reads_;
  fetch_object_(where->object.key, where->object.size, position, n,
                [this, stream = std::move(stream), from, length, got = std::move(got), n,
                 done = std::move(done)](tier::store_result<tier::object_bytes> bytes) mutable {
                  --objects_in_flight_;
                  if (!bytes || bytes->size() != n) {
                    ++bucket_read_failures_;
                    return done(make_error(storage::errc::io_error,
                                           !bytes ? bytes.err().describe()
                                                  : "the bucket returned " + std::to_string(bytes->size()) +
                                                        " bytes of " + std::to_string(n)));
                  }
                  got.append(reinterpret_cast<const char*>(bytes->data()), bytes->size());
                  if (got.size() == length) return done(std::move(got));
                  // The bytes go on in the stream's next extent (a byte stream's record cut across objects).
                  const streams::stream_offset next(from.value() + got.size());
                  const std::string name = stream;
                  locate_bytes(name, next,
                               [this, stream = std::move(stream), from, length, got = std::move(got),
                                done = std::move(done)](std::optional<object_location> w) mutable {
                                 read_bucket_located(std::move(stream), from, length, std::move(got),
                                                     std::move(w), std::move(done));
                               });
                });
}

}  // namespace weir::replica
