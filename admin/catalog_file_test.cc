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
TEST_CASE("catalogue files carry an optional https picture and a bounded description") {
  std::vector<paintlock::locks::CatalogueEntry> entries;
  std::vector<std::string> problems;
  REQUIRE(ParseCatalogFile("c.json",
                           R"([{"id":"p1","title":"A","price_minor":100,"currency":"eur",
           "image_url":"https://img.example/a.jpg","description":"Oil"}])",
                           &entries, &problems));
  CHECK(entries[0].image_url == "https://img.example/a.jpg");
  CHECK(entries[0].description == "Oil");
  REQUIRE(ParseCatalogFile(
      "c.csv", "id,title,price_minor,currency,description\np1,A,100,eur,\"Ink, paper\"\n", &entries,
      &problems));
  CHECK(entries[0].image_url.empty());
  CHECK(entries[0].description == "Ink, paper");
  CHECK(!ParseCatalogFile("c.json",
                          R"([{"id":"p1","title":"A","price_minor":1,"currency":"eur",
                               "image_url":"http://img.example/a.jpg"},
                              {"id":"p2","title":"B","price_minor":1,"currency":"eur",
                               "description":")" +
                              std::string(1001, 'x') + R"("},
                              {"id":"p3","title":"C","price_minor":1,"currency":"eur",
                               "image_url":7}])",
                          &entries, &problems));
  CHECK(problems.size() == 3);
}
