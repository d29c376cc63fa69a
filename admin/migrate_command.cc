// paintlockctl migrate: applies sql/migrations (compiled in) through
// locks::ApplyMigrations, which is safe to run twice, and twice at once.
#include <cstdio>

#include "admin/commands.h"
#include "admin/table.h"
#include "locks/migrator.h"

namespace paintlock::admin {

namespace {

constexpr const char* kMigrateUsage = R"(Usage: paintlockctl migrate [--json]

Applies every migration in sql/migrations (compiled into this binary) that the
database has not applied yet, each in its own transaction, and records it in
schema_migrations. Safe to run twice, and from two processes at once. Run it
before starting a new gateway version; migrations are forward-only.

Example:
  DATABASE_URL=postgresql:///paintlock paintlockctl migrate
)";

int Migrate(CommandContext& ctx) {
  std::string error;
  auto url = ctx.env().DatabaseUrl(&error);
  if (!url) return ctx.Fail(error);
  std::vector<locks::MigrationStatus> statuses;
  const bool ok =
      locks::ApplyMigrations(*url, &statuses, &error, [&](const locks::MigrationStatus& s) {
        // Progress as each one is decided: a long migration shows where it is.
        if (!ctx.json()) {
          char line[160];
          std::snprintf(line, sizeof line, "  %04d %-40s %s\n", s.version, s.name.c_str(),
                        s.applied_now ? "applied" : "already applied");
          ctx.out() << line << std::flush;
        }
      });
  if (!ok) return ctx.Fail(error);
  int applied_now = 0;
  for (const auto& s : statuses) applied_now += s.applied_now ? 1 : 0;
  if (ctx.json()) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& s : statuses) {
      list.push_back({{"version", s.version}, {"name", s.name}, {"applied_now", s.applied_now}});
    }
    ctx.PrintJson({{"migrations", list},
                   {"applied_now", applied_now},
                   {"schema_version", locks::LatestSchemaVersion()}});
  } else {
    ctx.out() << "schema at version " << locks::LatestSchemaVersion() << " (" << applied_now
              << " applied now)\n";
  }
  return kExitOk;
}

}  // namespace

void RegisterMigrateCommand(CommandRegistry& registry) {
  registry.Add({"migrate",
                "apply the schema migrations (safe to run twice, or twice at once)",
                kMigrateUsage,
                {},
                0,
                0,
                "migrate takes no arguments",
                Migrate});
}

}  // namespace paintlock::admin
