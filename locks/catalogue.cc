#include "locks/catalogue.h"

#include <regex>

#include "locks/availability_publisher.h"
#include "locks/painting_id.h"
#include "locks/reservations.h"
#include "locks/statements.h"

namespace paintlock::locks {

std::string ValidateEntry(const CatalogueEntry& e) {
  static const std::regex currency_re("^[a-z]{3}$");
  if (!IsPaintingId(e.id)) {
    return "id \"" + e.id + "\" must be 1-64 letters, digits, '_', '.' or '-'";
  }
  if (e.title.empty() || e.title.size() > 300) return e.id + ": title must be 1-300 characters";
  if (e.price_minor <= 0 || e.price_minor >= 100000000000LL) {
    return e.id + ": price_minor must be a positive whole number of minor units";
  }
  if (!std::regex_match(e.currency, currency_re)) {
    return e.id + ": currency must be a three-letter lowercase ISO code such as \"eur\"";
  }
  static const std::regex image_re(R"(^https://[^\s]+$)");
  if (!e.image_url.empty() &&
      (e.image_url.size() > 2048 || !std::regex_match(e.image_url, image_re))) {
    return e.id + ": image_url must be an https:// URL of at most 2048 characters";
  }
  if (e.description.size() > 1000) {
    return e.id + ": description must be at most 1000 bytes of UTF-8";
  }
  return "";
}

namespace {

PaintingView ViewOf(const pqxx::row& row) {
  PaintingView v;
  v.entry.id = row["id"].as<std::string>();
  v.entry.title = row["title"].as<std::string>();
  v.entry.price_minor = row["price_minor"].as<std::int64_t>();
  v.entry.currency = row["currency"].as<std::string>();
  v.entry.image_url = row["image_url"].as<std::string>("");
  v.entry.description = row["description"].as<std::string>("");
  v.state = row["state"].as<std::string>();
  v.free_at = row["free_at"].as<std::string>("");
  v.retry_after_seconds = row["retry_after"].as<int>(0);
  return v;
}

}  // namespace

DbResult<std::vector<PaintingView>> Catalogue::List() {
  return db_.RunIdempotent("paintings_list", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    std::vector<PaintingView> out;
    for (const auto& row : Exec(n, "paintings_list")) out.push_back(ViewOf(row));
    return out;
  });
}

DbResult<CataloguePage> Catalogue::Page(int limit,
                                        const std::optional<std::string>& starting_after) {
  return db_.RunIdempotent("paintings_page", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    CataloguePage page;
    for (const auto& row : Exec(n, "paintings_page", starting_after, limit)) {
      page.cursor_known = row["cursor_known"].as<bool>();
      if (row["id"].is_null()) continue;
      if (static_cast<int>(page.paintings.size()) == limit) {
        page.has_more = true;
        break;
      }
      page.paintings.push_back(ViewOf(row));
    }
    return page;
  });
}

DbResult<std::optional<PaintingView>> Catalogue::Get(const std::string& id) {
  return db_.RunIdempotent("painting_get", [&](pqxx::connection& c) -> std::optional<PaintingView> {
    pqxx::nontransaction n(c);
    pqxx::result r = Exec(n, "painting_get", id);
    if (r.empty()) return std::nullopt;
    return ViewOf(r[0]);
  });
}

DbResult<std::vector<CatalogueEntry>> Catalogue::ForCart(const std::vector<std::string>& ids) {
  const std::string cart = TextArrayLiteral(ids);
  return db_.RunIdempotent("catalog_for_cart", [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);
    std::vector<CatalogueEntry> out;
    for (const auto& row : Exec(n, "catalog_for_cart", cart)) {
      out.push_back({row["id"].as<std::string>(), row["title"].as<std::string>(),
                     row["price_minor"].as<std::int64_t>(), row["currency"].as<std::string>(),
                     row["image_url"].as<std::string>(""), row["description"].as<std::string>("")});
    }
    return out;
  });
}

DbResult<ImportReport> Catalogue::Import(const std::vector<CatalogueEntry>& entries, bool force) {
  std::vector<std::string> changed;
  auto imported = db_.Run("catalog_import", [&](pqxx::connection& c) {
    ImportReport report;
    changed.clear();
    pqxx::work w(c);
    for (const CatalogueEntry& e : entries) {
      pqxx::result have = Exec(w, "catalog_import_current", e.id);
      if (have.empty()) {
        Exec(w, "catalog_import_add", e.id, e.title, e.price_minor, e.currency,
             NullIfEmpty(e.image_url), NullIfEmpty(e.description));
        changed.push_back(e.id);
        ++report.added;
        continue;
      }
      const auto& row = have[0];
      const bool price_changed = row["price_minor"].as<std::int64_t>() != e.price_minor ||
                                 row["currency"].as<std::string>() != e.currency;
      const bool shown_changed = row["title"].as<std::string>() != e.title ||
                                 row["image_url"].as<std::string>("") != e.image_url ||
                                 row["description"].as<std::string>("") != e.description;
      if (!price_changed && !shown_changed) {
        ++report.unchanged;
        continue;
      }
      // Nobody can be paying for an available or a withdrawn painting.
      const std::string state = row["state"].as<std::string>();
      if (price_changed && !force && state != "available" && state != "withdrawn") {
        report.refused.push_back(e.id + " is " + state);
        continue;
      }
      Exec(w, "catalog_import_update", e.id, e.title, e.price_minor, e.currency,
           NullIfEmpty(e.image_url), NullIfEmpty(e.description));
      changed.push_back(e.id);
      ++report.updated;
    }
    if (report.refused.empty()) {
      w.commit();
    } else {
      report.added = report.updated = report.unchanged = 0;  // rolled back: nothing changed
      changed.clear();
    }
    return report;
  });
  if (std::holds_alternative<ImportReport>(imported)) db_.availability().PaintingsChanged(changed);
  return imported;
}

}  // namespace paintlock::locks

namespace paintlock::locks {

DbResult<WithdrawalChange> Catalogue::SetWithdrawn(const std::string& painting, bool withdrawn,
                                                   const std::string& reason,
                                                   const std::string& actor) {
  const char* statement = withdrawn ? "catalog_withdraw" : "catalog_restore";
  auto changed = db_.Run(statement, [&](pqxx::connection& c) {
    pqxx::nontransaction n(c);  // one statement: its own transaction
    pqxx::row row = Exec1(n, statement, painting, reason, actor);
    WithdrawalChange change;
    change.outcome = row["outcome"].as<std::string>();
    if (withdrawn) {
      static_cast<HeldBy&>(change) = ReadHeldBy(row);
    }
    return change;
  });
  if (auto* change = std::get_if<WithdrawalChange>(&changed);
      change && (change->outcome == "withdrawn" || change->outcome == "restored")) {
    db_.availability().PaintingsChanged({painting});
  }
  return changed;
}

}  // namespace paintlock::locks
