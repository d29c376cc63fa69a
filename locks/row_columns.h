// One row's columns as text, whichever way the statement ran: how a store's
// blocking call (libpqxx) and its asynchronous twin (locks/async_pool.h)
// share the reading of the row into an outcome.
#pragma once

#include <exception>
#include <functional>
#include <pqxx/pqxx>
#include <string>

#include "base/log.h"
#include "locks/async_pool.h"

namespace paintlock::locks {

// The named column of the row, as text; "" for NULL (and, for an async reply,
// for a column it does not have).
using Column = std::function<std::string(const char*)>;

// Both borrow their argument: use the Column while it lives.
inline Column ColumnsOf(const pqxx::row& row) {
  return [&row](const char* name) -> std::string {
    return row[name].is_null() ? "" : row[name].c_str();
  };
}
inline Column ColumnsOf(const AsyncReply& reply) {
  return [&reply](const char* name) { return reply.Value(0, name); };
}
// Row `i` of a result of several rows. The pqxx one keeps its row alive.
inline Column ColumnsOf(const pqxx::result& result, int i) {
  return [row = result[i]](const char* name) -> std::string {
    return row[name].is_null() ? "" : row[name].c_str();
  };
}
inline Column ColumnsOf(const AsyncReply& reply, int i) {
  return [&reply, i](const char* name) { return reply.Value(i, name); };
}

// What `read()` makes of an asynchronous reply's rows, or, when they cannot
// be read (std::stoll on a NULL the statement promised never to return), the
// statement's internal failure, logged. A blocking call's throw is answered
// 500 by the HTTP server's exception handler; a continuation on the edge's
// reactor thread has no such handler above it, and a throw there would end
// the gateway, every open request with it.
template <class Outcome, class Read>
Outcome ReadOrFail(const char* what, const Read& read) {
  try {
    return read();
  } catch (const std::exception& e) {
    base::LogError("database_reply_unreadable", {{"operation", what}, {"error", e.what()}});
    return DbFailure{DbFailureKind::kInternal, e.what()};
  }
}

// An asynchronous statement's reply as the outcome `decide` reads from its
// one row, or as its failure (AsyncReply::Failure, naming `what`; ReadOrFail).
template <class Outcome, class Decide>
Outcome FromReply(const AsyncReply& reply, const char* what, const Decide& decide) {
  if (!reply.ok() || reply.rows() != 1) return reply.Failure(what);
  return ReadOrFail<Outcome>(what, [&] { return decide(ColumnsOf(reply)); });
}

}  // namespace paintlock::locks
