// paintlockctl catalog import: the catalogue file (admin/catalog_file.h) into
// paintings, through locks::Catalogue::Import (one transaction, idempotent).
#include <fstream>
#include <sstream>

#include "admin/catalog_file.h"
#include "admin/commands.h"
#include "locks/catalogue.h"

namespace paintlock::admin {

namespace {

constexpr const char* kImportUsage = R"(Usage: paintlockctl catalog import FILE [--force] [--json]

Adds or updates paintings from FILE in one transaction (all or nothing).
FILE is JSON ([{"id","title","price_minor","currency"}, ...] or {"paintings": [...]})
or CSV (by its .csv name) with a header row naming id,title,price_minor,currency.
Prices are in minor units (cents). Reports how many paintings were added,
updated and unchanged; importing the same file again changes nothing.

A price or currency change on a painting that is reserved or sold is refused
(nothing is written) unless --force is given: a buyer may be paying the old
price right now.

Examples:
  paintlockctl catalog import fixtures/catalog.json
  paintlockctl catalog import autumn.csv --json
)";

int Import(CommandContext& ctx) {
  const std::string& path = ctx.arg(0);
  std::ifstream in(path);
  if (!in) return ctx.Fail("cannot read " + path + ": check the path");
  std::stringstream text;
  text << in.rdbuf();
  std::vector<locks::CatalogueEntry> entries;
  std::vector<std::string> problems;
  if (!ParseCatalogFile(path, text.str(), &entries, &problems)) {
    for (const auto& p : problems) ctx.err() << "paintlockctl: " << p << "\n";
    return ctx.Fail(std::to_string(problems.size()) + " problem(s) in " + path +
                    "; nothing imported: fix the file and import it again");
  }
  locks::Database* db = ctx.Database();
  if (!db) return kExitFailed;
  locks::Catalogue catalogue(*db);
  auto report_or = catalogue.Import(entries, ctx.args().Has("force"));
  if (auto* f = std::get_if<locks::DbFailure>(&report_or)) return ctx.FailDatabase(*f, "import");
  const auto& report = std::get<locks::ImportReport>(report_or);
  if (!report.refused.empty()) {
    for (const auto& r : report.refused) {
      ctx.err() << "paintlockctl: refused price change: " << r << "\n";
    }
    return ctx.Fail("nothing imported: price changes on reserved or sold paintings need --force");
  }
  if (ctx.json()) {
    ctx.PrintJson({{"file", path},
                   {"added", report.added},
                   {"updated", report.updated},
                   {"unchanged", report.unchanged}});
  } else {
    ctx.out() << path << ": " << report.added << " added, " << report.updated << " updated, "
              << report.unchanged << " unchanged\n";
  }
  return kExitOk;
}

}  // namespace

void RegisterCatalogCommands(CommandRegistry& registry) {
  registry.Add({"catalog import",
                "add or update paintings from a JSON or CSV file",
                kImportUsage,
                {{"force", false}},
                1,
                1,
                "catalog import takes exactly one FILE",
                Import});
}

}  // namespace paintlock::admin
