#include "admin/catalog_file.h"

#include <doctest/doctest.h>

using namespace paintlock::admin;

TEST_CASE("catalogue files in JSON and CSV") {
  std::vector<paintlock::locks::CatalogueEntry> entries;
  std::vector<std::string> problems;
  REQUIRE(ParseCatalogFile(
      "c.json", R"({"paintings":[{"id":"p1","title":"A","price_minor":100,"currency":"eur"}]})",
      &entries, &problems));
  CHECK(entries.size() == 1);
  REQUIRE(ParseCatalogFile(
      "c.csv", "currency,id,title,price_minor\neur,p1,\"Harbour, at \"\"Dawn\"\"\",4200\r\n",
      &entries, &problems));
  REQUIRE(entries.size() == 1);
  CHECK(entries[0].title == "Harbour, at \"Dawn\"");
  CHECK(entries[0].price_minor == 4200);
}

TEST_CASE("bad catalogue entries are named, and nothing is returned") {
  std::vector<paintlock::locks::CatalogueEntry> entries;
  std::vector<std::string> problems;
  CHECK(!ParseCatalogFile("c.json",
                          R"([{"id":"p1","title":"A","price_minor":-5,"currency":"eur"},
                              {"id":"p1","title":"B","price_minor":5,"currency":"EURO"},
                              {"id":"p2"}])",
                          &entries, &problems));
  CHECK(problems.size() == 4);
  CHECK(entries.empty());
  problems.clear();
  CHECK(!ParseCatalogFile("c.csv", "id,title\np1,A\n", &entries, &problems));
  CHECK(problems[0].find("header") != std::string::npos);
}
