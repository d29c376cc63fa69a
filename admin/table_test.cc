#include "admin/table.h"

#include <doctest/doctest.h>

#include <sstream>

using namespace paintlock::admin;

TEST_CASE("admin: tables align columns by characters, not bytes") {
  Table t({"ID", "TITLE", "PRICE"});
  t.AddRow({"p1", "Harbour at Dawn", "42000"});
  t.AddRow({"p10", "Café à l'aube", ""});
  std::ostringstream out;
  t.Print(out, "  ");
  CHECK(out.str() ==
        "  ID   TITLE            PRICE\n"
        "  p1   Harbour at Dawn  42000\n"
        "  p10  Café à l'aube    -\n");
  CHECK(t.rows() == 2);
  CHECK(DisplayWidth("Café") == 4);
  CHECK(DisplayWidth("") == 0);
}

TEST_CASE("admin: a table with no rows prints its header, and fields align their values") {
  Table t({"A", "B"});
  std::ostringstream out;
  t.Print(out);
  CHECK(out.str() == "A  B\n");

  std::ostringstream fields;
  PrintFields(fields, {{"painting", "p1"}, {"sold at", ""}, {"lock", "free"}});
  CHECK(fields.str() ==
        "  painting  p1\n"
        "  sold at   -\n"
        "  lock      free\n");
}
