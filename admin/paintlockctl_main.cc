// paintlockctl: the admin CLI. Exit codes: 0 success, 1 failure, 2 bad usage.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "admin/catalog_file.h"
#include "gateway/config.h"
#include "gateway/log.h"
#include "locks/catalogue.h"
#include "locks/database.h"
#include "locks/migrator.h"

using namespace paintlock;

namespace {

struct Args {
  std::vector<std::string> positional;
  bool json = false;
  bool force = false;
  bool help = false;
  std::vector<std::string> unknown;
};

Args ParseArgs(int argc, char** argv, int from) {
  Args a;
  for (int i = from; i < argc; ++i) {
    std::string s = argv[i];
    if (s == "--json") a.json = true;
    else if (s == "--force") a.force = true;
    else if (s == "--help" || s == "-h") a.help = true;
    else if (s.rfind("--", 0) == 0) a.unknown.push_back(s);
    else a.positional.push_back(s);
  }
  return a;
}

constexpr const char* kUsage = R"(Usage: paintlockctl COMMAND [OPTIONS]

Administers a paintlock database. Connects with DATABASE_URL.

Commands:
  migrate                      apply the schema migrations (safe to run twice, or twice at once)
  catalog import FILE          add or update paintings from FILE (.json or .csv)

Options:
  --json                       print machine-readable JSON instead of a table
  --help                       help for a command: paintlockctl COMMAND --help

Exit codes: 0 success, 1 failure, 2 bad usage.
)";

constexpr const char* kMigrateUsage = R"(Usage: paintlockctl migrate [--json]

Applies every migration in sql/migrations (compiled into this binary) that the
database has not applied yet, each in its own transaction, and records it in
schema_migrations. Safe to run twice, and from two processes at once.

Example:
  DATABASE_URL=postgresql:///paintlock paintlockctl migrate
)";

constexpr const char* kImportUsage = R"(Usage: paintlockctl catalog import FILE [--force] [--json]

Adds or updates paintings from FILE in one transaction (all or nothing).
FILE is JSON ([{"id","title","price_minor","currency"}, ...] or {"paintings": [...]})
or CSV with a header row id,title,price_minor,currency. Prices are in minor
units (cents). Reports how many paintings were added, updated and unchanged.

A price or currency change on a painting that is reserved or sold is refused
(nothing is written) unless --force is given.

Example:
  paintlockctl catalog import fixtures/catalog.json
)";

int Usage(const std::string& problem) {
  std::fprintf(stderr, "paintlockctl: %s (see paintlockctl --help)\n", problem.c_str());
  return 2;
}

int Failure(const std::string& problem) {
  std::fprintf(stderr, "paintlockctl: %s\n", problem.c_str());
  return 1;
}

bool DatabaseUrl(std::string* url) {
  auto v = gateway::ProcessEnv("DATABASE_URL");
  if (!v) return false;
  *url = *v;
  return true;
}

int Migrate(const Args& args) {
  if (args.help) return std::cout << kMigrateUsage, 0;
  if (!args.positional.empty() || !args.unknown.empty()) return Usage("migrate takes no arguments");
  std::string url, error;
  if (!DatabaseUrl(&url)) return Failure("DATABASE_URL is not set: export the database's libpq URI");
  std::vector<locks::MigrationStatus> statuses;
  const bool ok = locks::ApplyMigrations(url, &statuses, &error, [&](const locks::MigrationStatus& s) {
    if (!args.json) {
      std::printf("  %04d %-40s %s\n", s.version, s.name.c_str(),
                  s.applied_now ? "applied" : "already applied");
      std::fflush(stdout);
    }
  });
  if (!ok) return Failure(error);
  int applied_now = 0;
  for (const auto& s : statuses) applied_now += s.applied_now ? 1 : 0;
  if (args.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& s : statuses) {
      out.push_back({{"version", s.version}, {"name", s.name}, {"applied_now", s.applied_now}});
    }
    std::cout << nlohmann::json{{"migrations", out}, {"applied_now", applied_now},
                                {"schema_version", locks::LatestSchemaVersion()}}
                     .dump(2)
              << "\n";
  } else {
    std::printf("schema at version %d (%d applied now)\n", locks::LatestSchemaVersion(), applied_now);
  }
  return 0;
}

int CatalogImport(const Args& args) {
  if (args.help) return std::cout << kImportUsage, 0;
  if (args.positional.size() != 1 || !args.unknown.empty()) {
    return Usage("catalog import takes exactly one FILE");
  }
  const std::string path = args.positional[0];
  std::ifstream in(path);
  if (!in) return Failure("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  std::vector<locks::CatalogueEntry> entries;
  std::vector<std::string> problems;
  if (!admin::ParseCatalogFile(path, text.str(), &entries, &problems)) {
    for (const auto& p : problems) std::fprintf(stderr, "paintlockctl: %s\n", p.c_str());
    return Failure(std::to_string(problems.size()) + " problem(s) in " + path + "; nothing imported");
  }
  std::string url, error;
  if (!DatabaseUrl(&url)) return Failure("DATABASE_URL is not set: export the database's libpq URI");
  locks::DatabaseOptions options;
  options.url = url;
  options.pool_size = 1;
  options.application_name = "paintlockctl";
  auto db = locks::Database::Open(options, &error);
  if (!db) return Failure(error + " (has `paintlockctl migrate` run?)");
  locks::Catalogue catalogue(*db);
  auto report_or = catalogue.Import(entries, args.force);
  if (auto* f = std::get_if<locks::DbFailure>(&report_or)) return Failure("import failed: " + f->detail);
  const auto& report = std::get<locks::ImportReport>(report_or);
  if (!report.refused.empty()) {
    for (const auto& r : report.refused) {
      std::fprintf(stderr, "paintlockctl: refused price change: %s\n", r.c_str());
    }
    return Failure("nothing imported: price changes on reserved or sold paintings need --force");
  }
  if (args.json) {
    std::cout << nlohmann::json{{"file", path}, {"added", report.added}, {"updated", report.updated},
                                {"unchanged", report.unchanged}}
                     .dump(2)
              << "\n";
  } else {
    std::printf("%s: %d added, %d updated, %d unchanged\n", path.c_str(), report.added,
                report.updated, report.unchanged);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  gateway::SetLogComponent("paintlockctl");
  gateway::SetLogLevel(gateway::LogLevel::kOff);  // the CLI speaks in tables and error lines, not logs
  if (argc < 2) return Usage("name a command");
  const std::string command = argv[1];
  if (command == "--help" || command == "-h" || command == "help") return std::cout << kUsage, 0;
  if (command == "migrate") return Migrate(ParseArgs(argc, argv, 2));
  if (command == "catalog") {
    if (argc >= 3 && std::strcmp(argv[2], "import") == 0) return CatalogImport(ParseArgs(argc, argv, 3));
    if (argc >= 3 && (std::strcmp(argv[2], "--help") == 0)) return std::cout << kImportUsage, 0;
    return Usage("catalog takes a subcommand: import");
  }
  return Usage("unknown command \"" + command + "\"");
}
