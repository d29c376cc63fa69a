// Every command group of paintlockctl adds itself to the registry here: a new
// group is a new file, its declaration below and one call in
// RegisterAllCommands. paintlockctl_main.cc does not change.
#pragma once

#include "admin/command.h"

namespace paintlock::admin {

void RegisterMigrateCommand(CommandRegistry& registry);    // migrate_command.cc
void RegisterCatalogCommands(CommandRegistry& registry);   // catalog_command.cc
void RegisterHoldsCommand(CommandRegistry& registry);      // holds_command.cc
void RegisterShowCommand(CommandRegistry& registry);       // show_command.cc
void RegisterReleaseCommand(CommandRegistry& registry);    // release_command.cc
void RegisterSoldCommands(CommandRegistry& registry);      // sold_command.cc
void RegisterSweepCommand(CommandRegistry& registry);      // sweep_command.cc
void RegisterEventsCommand(CommandRegistry& registry);     // events_command.cc
void RegisterReconcileCommand(CommandRegistry& registry);  // reconcile_command.cc
void RegisterQuotaCommands(CommandRegistry& registry);     // quota_command.cc
void RegisterLicensesCommand(CommandRegistry& registry);   // licenses_command.cc
void RegisterCreditsCommands(CommandRegistry& registry);   // credits_command.cc
void RegisterLeasesCommand(CommandRegistry& registry);     // leases_command.cc
void RegisterLineCommands(CommandRegistry& registry);      // line_command.cc
void RegisterContactsCommands(CommandRegistry& registry);  // contacts_command.cc

// All of the above, in the order `paintlockctl --help` lists them.
inline void RegisterAllCommands(CommandRegistry& registry) {
  RegisterHoldsCommand(registry);
  RegisterShowCommand(registry);
  RegisterReleaseCommand(registry);
  RegisterSoldCommands(registry);
  RegisterLineCommands(registry);
  RegisterReconcileCommand(registry);
  RegisterEventsCommand(registry);
  RegisterSweepCommand(registry);
  RegisterContactsCommands(registry);
  RegisterQuotaCommands(registry);
  RegisterLicensesCommand(registry);
  RegisterCreditsCommands(registry);
  RegisterLeasesCommand(registry);
  RegisterCatalogCommands(registry);
  RegisterMigrateCommand(registry);
}

}  // namespace paintlock::admin
