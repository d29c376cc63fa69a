#include "admin/catalog_file.h"

#include <nlohmann/json.hpp>
#include <set>

namespace paintlock::admin {

namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// One CSV record per line; fields may be quoted with "" escaping.
std::vector<std::vector<std::string>> ParseCsv(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string field;
  bool quoted = false, any = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field.push_back('"');
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field.push_back(c);
      }
    } else if (c == '"') {
      quoted = true;
      any = true;
    } else if (c == ',') {
      row.push_back(field);
      field.clear();
      any = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      if (any || !field.empty()) {
        row.push_back(field);
        rows.push_back(row);
      }
      row.clear();
      field.clear();
      any = false;
    } else {
      field.push_back(c);
      any = true;
    }
  }
  if (any || !field.empty()) {
    row.push_back(field);
    rows.push_back(row);
  }
  return rows;
}

bool ParseMinor(const std::string& s, std::int64_t* out) {
  if (s.empty() || s.size() > 15) return false;
  std::int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

}  // namespace

bool ParseCatalogFile(const std::string& path, const std::string& text,
                      std::vector<locks::CatalogueEntry>* entries,
                      std::vector<std::string>* problems) {
  std::vector<locks::CatalogueEntry> parsed;
  if (EndsWith(path, ".csv")) {
    auto rows = ParseCsv(text);
    if (rows.empty()) {
      problems->push_back(path + ": empty file");
      return false;
    }
    int col_id = -1, col_title = -1, col_price = -1, col_currency = -1, col_image = -1,
        col_description = -1;
    for (size_t i = 0; i < rows[0].size(); ++i) {
      const std::string& h = rows[0][i];
      if (h == "id") col_id = static_cast<int>(i);
      if (h == "title") col_title = static_cast<int>(i);
      if (h == "price_minor") col_price = static_cast<int>(i);
      if (h == "currency") col_currency = static_cast<int>(i);
      if (h == "image_url") col_image = static_cast<int>(i);
      if (h == "description") col_description = static_cast<int>(i);
    }
    if (col_id < 0 || col_title < 0 || col_price < 0 || col_currency < 0) {
      problems->push_back(path + ": the header row must name id,title,price_minor,currency");
      return false;
    }
    for (size_t r = 1; r < rows.size(); ++r) {
      const auto& row = rows[r];
      const int need = std::max({col_id, col_title, col_price, col_currency});
      if (static_cast<int>(row.size()) <= need) {
        problems->push_back(path + ": line " + std::to_string(r + 1) + " has too few fields");
        continue;
      }
      locks::CatalogueEntry e{row[col_id], row[col_title], 0, row[col_currency]};
      auto optional = [&](int col) {
        return col >= 0 && col < static_cast<int>(row.size()) ? row[col] : std::string();
      };
      e.image_url = optional(col_image);
      e.description = optional(col_description);
      if (!ParseMinor(row[col_price], &e.price_minor)) {
        problems->push_back(path + ": line " + std::to_string(r + 1) +
                            ": price_minor must be a whole number of minor units");
        continue;
      }
      parsed.push_back(e);
    }
  } else {
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_object() && j.contains("paintings")) j = j["paintings"];
    if (j.is_discarded() || !j.is_array()) {
      problems->push_back(path + ": expected a JSON list of paintings or {\"paintings\": [...]}");
      return false;
    }
    for (size_t i = 0; i < j.size(); ++i) {
      const auto& p = j[i];
      const std::string where = path + ": entry " + std::to_string(i + 1);
      if (!p.is_object() || !p.value("id", nlohmann::json()).is_string() ||
          !p.value("title", nlohmann::json()).is_string() ||
          !p.value("price_minor", nlohmann::json()).is_number_integer() ||
          !p.value("currency", nlohmann::json()).is_string() ||
          !p.value("image_url", nlohmann::json("")).is_string() ||
          !p.value("description", nlohmann::json("")).is_string()) {
        problems->push_back(
            where +
            ": needs id (string), title (string), price_minor (integer), "
            "currency (string), and optionally image_url and description (strings)");
        continue;
      }
      parsed.push_back({p["id"].get<std::string>(), p["title"].get<std::string>(),
                        p["price_minor"].get<std::int64_t>(), p["currency"].get<std::string>(),
                        p.value("image_url", std::string()),
                        p.value("description", std::string())});
    }
  }
  std::set<std::string> seen;
  for (const auto& e : parsed) {
    std::string why = locks::ValidateEntry(e);
    if (!why.empty()) problems->push_back(path + ": " + why);
    if (!seen.insert(e.id).second) problems->push_back(path + ": " + e.id + " appears twice");
  }
  if (!problems->empty()) return false;
  *entries = std::move(parsed);
  return true;
}

}  // namespace paintlock::admin
