// Reading a catalogue file for `paintlockctl catalog import`: JSON (a list of
// paintings, or {"paintings": [...]}) or CSV with a header row naming
// id,title,price_minor,currency (any order; quoted fields allowed). Optional
// in both: image_url (https) and description, which Stripe Checkout shows.
#pragma once

#include <string>
#include <vector>

#include "locks/catalogue.h"

namespace paintlock::admin {

// Parses `text`; the format is CSV when `path` ends in .csv, else JSON.
// Returns false with one line per problem in *problems (entry and field named).
bool ParseCatalogFile(const std::string& path, const std::string& text,
                      std::vector<locks::CatalogueEntry>* entries,
                      std::vector<std::string>* problems);

}  // namespace paintlock::admin
