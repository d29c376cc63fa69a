#include "chaos/checker.h"

#include <algorithm>
#include <map>
#include <pqxx/pqxx>
#include <set>
#include <sstream>
#include <stdexcept>

#include "locks/database.h"

namespace paintlock::chaos {

namespace {

using nlohmann::json;

// Times a transaction reads as now() are its start: a reservation waiting on
// a row lock (lock_timeout 1 s) may carry a created_at before the release it
// waited for. Interval ends taken from a release are trusted to this margin;
// ends taken from held_until are exact (the grant compares them with now()).
constexpr double kReleaseSlackSeconds = 1.5;
constexpr double kExactSlackSeconds = 0.001;

// A client that disconnects leaves; its request does not. The gateway may
// still start that request's reserve this long after the request began: a
// worker waits up to the pool's acquire timeout (the default, which the rig
// keeps) for a connection; through PgBouncer the statement can then wait in
// PgBouncer's queue for a server while the cluster fails over
// (query_wait_timeout, which the rig gives PgBouncer from the shape); and a take-over
// asks Stripe first, within the gateway's Stripe deadline. Seen in a failover
// campaign through PgBouncer: a reservation created 5 s after its client left.
double DisconnectedWorkSeconds(const CampaignShape& shape) {
  const double acquire = locks::DatabaseOptions{}.acquire_timeout.count() / 1000.0;
  const double stripe_deadline = shape.stripe_deadline_ms() / 1000.0;
  return acquire + (shape.pgbouncer ? shape.pgbouncer_query_wait_seconds : 0) + stripe_deadline;
}

struct Interval {
  double start = 0, end = 0, slack = kExactSlackSeconds;
};

struct ReservationRow {
  std::string id, state, session, buyer;
  double created = 0, held_until = 0, updated = 0;
  double sold_at = -1, released_at = -1;  // -1: never
  std::set<std::string> paintings;
};

double Num(const pqxx::field& f, double fallback = -1) {
  return f.is_null() ? fallback : f.as<double>();
}
// A string member of a Stripe object; "" when absent or null.
std::string Str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string Text(const pqxx::field& f) { return f.is_null() ? "" : f.as<std::string>(); }

std::string Fmt(double unix_seconds) {
  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(3);
  o << unix_seconds;
  return o.str();
}

// When a reservation held its paintings: from its creation until its hold
// lapsed or it was released, and from its sale on (a late payment accepted
// sells after the hold lapsed, or after an operator's release: `release
// --force` leaves the Stripe session open, and its payment may land later).
std::vector<Interval> LiveIntervals(const ReservationRow& r) {
  std::vector<Interval> out;
  const double forever = 1e12;
  const bool released_before_sale = r.released_at >= 0 && r.released_at < r.sold_at;
  if (r.state == "sold" && (r.sold_at < 0 || r.sold_at <= r.held_until) && !released_before_sale) {
    out.push_back({r.created, forever, kExactSlackSeconds});
    return out;
  }
  Interval held{r.created, r.held_until, kExactSlackSeconds};
  double released = r.released_at;
  if (released < 0 && r.state == "released") released = r.updated;
  if (released >= 0 && released < held.end) {
    held.end = released;
    held.slack = kReleaseSlackSeconds;
  }
  out.push_back(held);
  if (r.state == "sold") out.push_back({r.sold_at, forever, kReleaseSlackSeconds});
  return out;
}

bool IsCheckoutLike(StepKind k) { return k == StepKind::kCheckout || k == StepKind::kDisconnect; }

// An answer that says nothing either way about its write: none (a timeout, a reset), or
// a 503 saying the outcome is unknown (the database was lost part-way; a hold may remain).
bool OutcomeUnknown(const Answer& a) {
  return a.status == 0 || (a.status == 503 && a.code == "outcome_unknown");
}

std::set<std::string> Set(const std::vector<std::string>& v) { return {v.begin(), v.end()}; }

class Checker {
 public:
  explicit Checker(const CheckInput& in) : in_(in) {}

  std::vector<InvariantResult> Run() {
    InvariantResult one{"1. no painting granted to two live reservations, none sold twice", 0, {}};
    InvariantResult two{
        "2. every paid Stripe session is exactly one sale or one audited refund", 0, {}};
    InvariantResult three{
        "3. no painting held beyond its hold (but a settling delayed payment)", 0, {}};
    InvariantResult four{
        "4. every 2xx a client got is in the database; no false \"nothing happened\"", 0, {}};
    InvariantResult five{"5. credit balance = top-ups - committed holds", 0, {}};
    InvariantResult six{"6. quotas never over their limit, every yes counted", 0, {}};
    InvariantResult seven{"7. lease fencing tokens strictly increase", 0, {}};
    try {
      pqxx::connection c(in_.database_url);
      pqxx::nontransaction n(c);
      Load(n);
      SqlInvariants(n, one);
      NoOverlap(one);
      PaidSessions(n, two);
      NoStaleHolds(n, three);
      AnswersAreTrue(n, four);
      Credits(n, five);
      Quotas(n, six);
      Leases(n, seven);
    } catch (const std::exception& e) {
      one.violations.push_back(
          {std::string("the checker could not read the database: ") + e.what(), {}});
    }
    return {one, two, three, four, five, six, seven};
  }

 private:
  void Load(pqxx::nontransaction& n) {
    for (const auto& row : n.exec(
             "SELECT r.id::text, r.state, r.stripe_session_id, r.buyer_ref, "
             "extract(epoch FROM r.created_at)::float8, extract(epoch FROM r.held_until)::float8, "
             "extract(epoch FROM r.updated_at)::float8, extract(epoch FROM r.sold_at)::float8, "
             "(SELECT extract(epoch FROM min(a.at))::float8 FROM audit_log a "
             "  WHERE a.reservation_id = r.id AND a.action = 'release') "
             "FROM reservations r")) {
      ReservationRow r;
      r.id = Text(row[0]);
      r.state = Text(row[1]);
      r.session = Text(row[2]);
      r.buyer = Text(row[3]);
      r.created = Num(row[4]);
      r.held_until = Num(row[5]);
      r.updated = Num(row[6]);
      r.sold_at = Num(row[7]);
      r.released_at = Num(row[8]);
      reservations_[r.id] = r;
    }
    for (const auto& row :
         n.exec("SELECT reservation_id::text, painting_id FROM reservation_items")) {
      auto it = reservations_.find(Text(row[0]));
      if (it != reservations_.end()) it->second.paintings.insert(Text(row[1]));
    }
  }

  void SqlInvariants(pqxx::nontransaction& n, InvariantResult& out) {
    out.checked += in_.sampled_runs + 1;
    for (const std::string& v : in_.sampled) {
      out.violations.push_back({"invariants.sql while running: " + v, {LastWord(v)}});
    }
    for (const auto& row : n.exec(in_.invariants_sql)) {
      out.violations.push_back({"invariants.sql at the end: " + Text(row[0]) + ": " + Text(row[1]),
                                {LastWord(Text(row[1]))}});
    }
  }

  static std::string LastWord(const std::string& s) {
    const auto sp = s.find_last_of(' ');
    return sp == std::string::npos ? s : s.substr(sp + 1);
  }

  void NoOverlap(InvariantResult& out) {
    std::map<std::string, std::vector<const ReservationRow*>> by_painting;
    for (const auto& [id, r] : reservations_) {
      for (const auto& p : r.paintings) by_painting[p].push_back(&r);
    }
    for (const auto& [painting, rows] : by_painting) {
      ++out.checked;
      int sold = 0;
      for (size_t i = 0; i < rows.size(); ++i) {
        if (rows[i]->state == "sold") ++sold;
        for (size_t j = i + 1; j < rows.size(); ++j) {
          for (const Interval& a : LiveIntervals(*rows[i])) {
            for (const Interval& b : LiveIntervals(*rows[j])) {
              const double overlap = std::min(a.end, b.end) - std::max(a.start, b.start);
              if (overlap > std::max(a.slack, b.slack)) {
                out.violations.push_back({painting + " was held by " + rows[i]->id + " (" +
                                              rows[i]->state + ") and " + rows[j]->id + " (" +
                                              rows[j]->state + ") at once for " + Fmt(overlap) +
                                              " s",
                                          {painting, rows[i]->id, rows[j]->id}});
              }
            }
          }
        }
      }
      if (sold > 1) {
        std::vector<std::string> tags = {painting};
        for (const auto* r : rows) {
          if (r->state == "sold") tags.push_back(r->id);
        }
        out.violations.push_back({painting + " sold " + std::to_string(sold) + " times", tags});
      }
    }
  }

  void PaidSessions(pqxx::nontransaction& n, InvariantResult& out) {
    std::map<std::string, int> refunds_by_pi;
    for (const json& r : in_.stripe_refunds) refunds_by_pi[Str(r, "payment_intent")]++;
    std::set<std::string> refunded_pis_explained;
    for (const json& s : in_.stripe_sessions) {
      if (Str(s, "payment_status") != "paid") continue;
      ++out.checked;
      const std::string id = Str(s, "id");
      const std::string pi = Str(s, "payment_intent");
      std::string rid = Str(s, "client_reference_id");
      std::vector<std::string> tags = {id, rid};
      const auto matching = n.exec(
          "SELECT id::text, state FROM reservations WHERE "
          "stripe_session_id = " +
          n.quote(id));
      auto it = reservations_.find(rid);
      if (it == reservations_.end() || matching.size() != 1 || Text(matching[0][0]) != rid) {
        out.violations.push_back({"paid session " + id + " has " + std::to_string(matching.size()) +
                                      " reservations (its own, " + rid + ", " +
                                      (it == reservations_.end() ? "missing" : "present") + ")",
                                  tags});
        continue;
      }
      for (const auto& p : it->second.paintings) tags.push_back(p);
      const std::string& state = it->second.state;
      const auto counted = refunds_by_pi.find(pi);  // find: [] would add a count of 0
      const int refunds = counted == refunds_by_pi.end() ? 0 : counted->second;
      if (state == "sold") {
        if (refunds != 0) {
          out.violations.push_back({"session " + id + " is sold and also refunded " +
                                        std::to_string(refunds) + " times at Stripe",
                                    tags});
        }
      } else if (state == "refunded") {
        refunded_pis_explained.insert(pi);
        const std::string audited =
            Text(n.exec("SELECT count(*) FROM audit_log WHERE action = "
                        "'refund' AND reservation_id = " +
                        n.quote(rid))[0][0]);
        if (refunds != 1 || audited == "0") {
          out.violations.push_back({"session " + id + " is refunded " + std::to_string(refunds) +
                                        " times at Stripe, audited " + audited + " times",
                                    tags});
        }
      } else {
        out.violations.push_back(
            {"paid session " + id + " ended as reservation state '" + state + "'", tags});
      }
    }
    for (const auto& [pi, count] : refunds_by_pi) {
      if (!refunded_pis_explained.count(pi)) {
        out.violations.push_back({"a refund of " + pi + " (" + std::to_string(count) +
                                      ") belongs to no refunded reservation",
                                  {pi}});
      }
    }
  }

  void NoStaleHolds(pqxx::nontransaction& n, InvariantResult& out) {
    out.checked += static_cast<int>(reservations_.size());
    for (const auto& row :
         n.exec("SELECT l.painting_id, r.id::text, r.state, l.held_until - now() "
                "FROM painting_locks l JOIN reservations r ON r.id = l.holder "
                "WHERE l.held_until > now() AND r.state NOT IN ('awaiting_payment', 'sold')")) {
      out.violations.push_back({Text(row[0]) + " is still held by " + Text(row[1]) + " (" +
                                    Text(row[2]) + ") for " + Text(row[3]),
                                {Text(row[0]), Text(row[1])}});
    }
    for (const auto& row : n.exec("SELECT id::text, held_until - now() FROM reservations "
                                  "WHERE state = 'held' AND held_until > now()")) {
      out.violations.push_back({"reservation " + Text(row[0]) + " holds for " + Text(row[1]) +
                                    " more after every hold could have lapsed",
                                {Text(row[0])}});
    }
  }

  const ReservationRow* Reservation(const std::string& id) const {
    auto it = reservations_.find(id);
    return it == reservations_.end() ? nullptr : &it->second;
  }

  void AnswersAreTrue(pqxx::nontransaction& n, InvariantResult& out) {
    std::map<std::string, std::string> hold_state;
    std::map<std::string, std::pair<std::string, long long>> hold_row;
    for (const auto& row : n.exec("SELECT id::text, state, account_id, amount FROM credit_holds")) {
      hold_state[Text(row[0])] = Text(row[1]);
      hold_row[Text(row[0])] = {Text(row[2]), row[3].as<long long>()};
    }
    std::map<std::pair<std::string, std::string>, long long> topups;
    for (const auto& row :
         n.exec("SELECT account_id, idempotency_key, amount FROM credit_topups")) {
      topups[{Text(row[0]), Text(row[1])}] = row[2].as<long long>();
    }
    std::map<std::string, json> sessions;
    for (const json& s : in_.stripe_sessions) sessions[Str(s, "id")] = s;
    std::map<std::string, std::set<std::string>> hold_answers;  // hold → {"commit","release"}

    for (const Answer& a : in_.answers) {
      if (a.skipped || IsFault(a.step.kind)) continue;
      const StepKind k = a.step.kind;
      auto bad = [&](const std::string& what) {
        out.violations.push_back({"#" + std::to_string(a.step.index) + " " + StepName(k) +
                                      " was told " + a.Outcome() + " but " + what,
                                  a.tags});
      };
      if (k == StepKind::kCheckout && a.status == 201) {
        ++out.checked;
        const ReservationRow* r = Reservation(a.reservation_id);
        if (!r) {
          bad("reservation " + a.reservation_id + " is not in the database");
        } else if (r->paintings != Set(a.step.paintings)) {
          bad("reservation " + a.reservation_id + " holds other paintings");
        } else if (!a.session_id.empty() && r->session != a.session_id) {
          bad("reservation " + a.reservation_id + " names session '" + r->session + "'");
        }
      } else if (k == StepKind::kReserve && !OutcomeUnknown(a)) {
        ++out.checked;
        std::vector<const ReservationRow*> mine;
        for (const auto& [id, r] : reservations_) {
          if (r.buyer == a.step.key) mine.push_back(&r);
        }
        if (a.status == 201) {
          if (mine.size() != 1 || mine[0]->id != a.reservation_id) {
            bad(std::to_string(mine.size()) + " reservations carry its buyer tag");
          }
        } else {
          for (const auto* r : mine) {
            if (r->state != "released") bad("reservation " + r->id + " is " + r->state);
          }
        }
      } else if (k == StepKind::kDelete && a.status == 200) {
        ++out.checked;
        const ReservationRow* r = Reservation(a.reservation_id);
        if (!r || r->state == "held" || r->state == "awaiting_payment") {
          bad("reservation " + a.reservation_id + " is " + (r ? r->state : "missing"));
        }
      } else if (k == StepKind::kDelete && a.status == 409 && a.code == "reservation_paid") {
        ++out.checked;
        auto s = sessions.find(a.session_id);
        if (s == sessions.end() || Str(s->second, "status") != "complete") {
          bad("its Stripe session " + a.session_id + " was never completed");
        }
      } else if (k == StepKind::kForceRelease && a.status == 0) {
        ++out.checked;
        const ReservationRow* r = Reservation(a.reservation_id);
        if (!r || r->state == "held") {
          bad("reservation " + a.reservation_id + " is " + (r ? r->state : "missing"));
        }
      } else if (k == StepKind::kSuccessPage && a.status == 409) {
        // The success page's 409 is "your payment has been refunded".
        ++out.checked;
        const ReservationRow* r = Reservation(a.reservation_id);
        if (!r || (r->state != "refunded" && r->state != "refund_pending")) {
          bad("reservation " + a.reservation_id + " is " + (r ? r->state : "missing"));
        }
      } else if (k == StepKind::kTopUp && (a.status == 200 || a.status == 422)) {
        ++out.checked;
        auto t = topups.find({a.step.key, a.step.holder});
        if (t == topups.end()) {
          bad("no top-up " + a.step.holder + " exists");
        } else if ((a.status == 200) != (t->second == a.step.amount)) {
          bad("the top-up " + a.step.holder + " is of " + std::to_string(t->second));
        }
      } else if (k == StepKind::kCreditHold && a.status == 201) {
        ++out.checked;
        auto h = hold_row.find(a.hold_id);
        if (h == hold_row.end() || h->second.first != a.step.key ||
            h->second.second != a.step.amount) {
          bad("hold " + a.hold_id + " is not in the database as answered");
        }
      } else if ((k == StepKind::kCreditCommit || k == StepKind::kCreditRelease) && a.status != 0) {
        ++out.checked;
        const std::string want = k == StepKind::kCreditCommit ? "committed" : "released";
        const std::string state = hold_state.count(a.hold_id) ? hold_state[a.hold_id] : "missing";
        if (a.status == 200) {
          hold_answers[a.hold_id].insert(want);
          if (state != want) bad("hold " + a.hold_id + " is " + state);
        } else if (a.code == "hold_released" && state != "released") {
          bad("hold " + a.hold_id + " is " + state);
        } else if (a.code == "hold_committed" && state != "committed") {
          bad("hold " + a.hold_id + " is " + state);
        }
      }
    }
    for (const auto& [hold, said] : hold_answers) {
      if (said.size() > 1) {
        out.violations.push_back(
            {"hold " + hold + " was answered both committed and released", {hold}});
      }
    }
    CheckoutErrorsAreTrue(out);
  }

  // A checkout answered with an error said "nothing was reserved for you".
  // The gateway picks reservation ids itself, so a reservation is matched to
  // the checkouts of the same cart that were in flight when it was created
  // (a disconnected one for as long as the gateway may still act on it):
  // if every one of them was answered with an error, it must have been undone.
  void CheckoutErrorsAreTrue(InvariantResult& out) {
    const double disconnected_work = DisconnectedWorkSeconds(in_.shape);
    for (const auto& [id, r] : reservations_) {
      if (!r.buyer.empty()) continue;
      ++out.checked;
      std::vector<const Answer*> candidates;
      for (const Answer& a : in_.answers) {
        if (a.skipped || !IsCheckoutLike(a.step.kind) || Set(a.step.paintings) != r.paintings) {
          continue;
        }
        const double ended = a.step.kind == StepKind::kDisconnect
                                 ? std::max(a.ended_unix, a.started_unix + disconnected_work)
                                 : a.ended_unix;
        if (r.created >= a.started_unix - 0.05 && r.created <= ended + 0.05) {
          candidates.push_back(&a);
        }
      }
      if (candidates.empty()) continue;
      bool all_errors = true;
      for (const Answer* a : candidates) {
        if (OutcomeUnknown(*a) || a->status == 201 || a->step.kind == StepKind::kDisconnect) {
          all_errors = false;
        }
      }
      if (all_errors && r.state != "released") {
        std::vector<std::string> tags = {id};
        std::string who;
        for (const Answer* a : candidates) {
          who += " #" + std::to_string(a->step.index) + " (" + a->Outcome() + ")";
        }
        for (const auto& p : r.paintings) tags.push_back(p);
        out.violations.push_back({"reservation " + id + " is " + r.state +
                                      " though every checkout that could have "
                                      "made it was told it failed:" +
                                      who,
                                  tags});
      }
    }
  }

  void Credits(pqxx::nontransaction& n, InvariantResult& out) {
    for (const auto& row : n.exec(
             "SELECT a.id, a.balance, "
             "  coalesce((SELECT sum(amount) FROM credit_topups t WHERE t.account_id = a.id), 0), "
             "  coalesce((SELECT sum(amount) FROM credit_holds h WHERE h.account_id = a.id "
             "            AND h.state = 'committed'), 0) "
             "FROM credit_accounts a")) {
      ++out.checked;
      const long long balance = row[1].as<long long>(), topped = row[2].as<long long>(),
                      committed = row[3].as<long long>();
      if (balance != topped - committed || balance < 0) {
        out.violations.push_back({Text(row[0]) + ": balance " + std::to_string(balance) +
                                      ", top-ups " + std::to_string(topped) + ", committed " +
                                      std::to_string(committed),
                                  {Text(row[0])}});
      }
    }
  }

  void Quotas(pqxx::nontransaction& n, InvariantResult& out) {
    std::map<std::string, int> yes, unknown;
    for (const Answer& a : in_.answers) {
      if (a.step.kind != StepKind::kQuotaConsume || a.skipped) continue;
      if (a.status == 200 && a.body.is_object() && a.body.value("allowed", false))
        yes[a.step.key]++;
      // No answer, or a 503 saying the decision was sent and its answer lost
      // (a failover): it may have been counted.
      if (OutcomeUnknown(a)) unknown[a.step.key]++;
    }
    std::map<std::string, int> used;
    for (const auto& row : n.exec("SELECT subject, used FROM quota_usage WHERE quota = "
                                  "'downloads' AND day = (now() AT TIME ZONE 'UTC')::date")) {
      used[Text(row[0])] = row[1].as<int>();
    }
    for (int i = 0; i < in_.shape.quota_subjects; ++i) {
      const std::string subject = "subj-" + std::to_string(i);
      ++out.checked;
      const int u = used["subject:" + subject];
      if (u > in_.shape.quota_limit || u < yes[subject] || u > yes[subject] + unknown[subject]) {
        out.violations.push_back({subject + ": used " + std::to_string(u) + " of " +
                                      std::to_string(in_.shape.quota_limit) + ", " +
                                      std::to_string(yes[subject]) + " yes answers, " +
                                      std::to_string(unknown[subject]) + " unanswered",
                                  {subject}});
      }
    }
  }

  void Leases(pqxx::nontransaction& n, InvariantResult& out) {
    std::map<std::string, std::vector<const Answer*>> grants;
    for (const Answer& a : in_.answers) {
      if (a.step.kind == StepKind::kLeaseAcquire && a.status == 200) {
        grants[a.step.key].push_back(&a);
      }
    }
    std::map<std::string, long long> final_token;
    for (const auto& row : n.exec("SELECT name, token FROM leases")) {
      final_token[Text(row[0])] = row[1].as<long long>();
    }
    for (const auto& [name, list] : grants) {
      for (size_t i = 0; i < list.size(); ++i) {
        ++out.checked;
        const Answer& a = *list[i];
        if (a.token > final_token[name]) {
          out.violations.push_back({name + ": granted token " + std::to_string(a.token) +
                                        " above the stored " + std::to_string(final_token[name]),
                                    {name}});
        }
        for (size_t j = 0; j < list.size(); ++j) {
          const Answer& b = *list[j];
          const bool before = a.ended_ms < b.started_ms;
          if ((i < j && a.token == b.token) || (before && a.token >= b.token)) {
            out.violations.push_back(
                {name + ": grant #" + std::to_string(a.step.index) + " got token " +
                     std::to_string(a.token) + ", grant #" + std::to_string(b.step.index) +
                     (before ? " (later) " : " ") + "got " + std::to_string(b.token),
                 {name}});
          }
        }
      }
    }
  }

  const CheckInput& in_;
  std::map<std::string, ReservationRow> reservations_;
};

}  // namespace

json StripeRecords(const std::string& path, int status, json body) {
  if (status != 200 || !body.is_array()) {
    throw std::runtime_error("GET " + path + " did not answer 200 with a list (" +
                             (status ? "status " + std::to_string(status) : "no answer") +
                             "): nothing can be checked against the fake Stripe");
  }
  return body;
}

std::vector<InvariantResult> CheckEverything(const CheckInput& in) { return Checker(in).Run(); }

}  // namespace paintlock::chaos
