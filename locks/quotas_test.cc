#include "locks/quotas.h"

#include <doctest/doctest.h>

using namespace paintlock::locks;

TEST_CASE("quota: policies parse NAME:LIMIT:TIME_ZONE lists") {
  std::vector<std::string> problems;
  auto p = ParseQuotaPolicies(" downloads:5:UTC , exports:20:Europe/Paris,paid-only:0:Etc/GMT+5",
                              &problems);
  REQUIRE(p);
  CHECK(problems.empty());
  REQUIRE(p->size() == 3);
  CHECK((*p)[0].name == "downloads");
  CHECK((*p)[0].limit == 5);
  CHECK((*p)[0].time_zone == "UTC");
  CHECK((*p)[1].time_zone == "Europe/Paris");
  CHECK((*p)[2].limit == 0);
  CHECK(FormatQuotaPolicies(*p) == "downloads:5:UTC,exports:20:Europe/Paris,paid-only:0:Etc/GMT+5");
  CHECK(FormatQuotaPolicies(DefaultQuotaPolicies()) == "downloads:5:UTC");
}

TEST_CASE("quota: every bad quota item is named in its own problem line") {
  std::vector<std::string> problems;
  CHECK(
      !ParseQuotaPolicies("Downloads:5:UTC,exports:-1:UTC,x:5:+3,y:5,z:5:UTC,z:6:UTC,"
                          "big:99999999999:UTC,zone:5:EST5EDT,M3.2.0",
                          &problems));
  REQUIRE(problems.size() == 7);
  CHECK(problems[0].find("\"Downloads\" is not a quota name") != std::string::npos);
  CHECK(problems[1].find("exports: the limit must be a whole number") != std::string::npos);
  CHECK(problems[2].find("\"+3\" is not a time zone name") != std::string::npos);
  CHECK(problems[3].find("must be NAME:LIMIT:TIME_ZONE") != std::string::npos);
  CHECK(problems[4].find("configured twice") != std::string::npos);
  CHECK(problems[5].find("big: the limit") != std::string::npos);
  // EST5EDT is an IANA name; the POSIX rule after it is not an item.
  CHECK(problems[6].find("\"M3.2.0\" must be NAME:LIMIT:TIME_ZONE") != std::string::npos);
}

TEST_CASE("quota: an empty quota list is a problem, not a gateway without quotas") {
  std::vector<std::string> problems;
  CHECK(!ParseQuotaPolicies(" , ", &problems));
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].find("names no quota") != std::string::npos);
}

TEST_CASE("quota: named subjects are 1-128 printable ASCII characters") {
  CHECK(SubjectNameProblem("alice@example.com") == "");
  CHECK(SubjectNameProblem("user 42") == "");
  CHECK(SubjectNameProblem(std::string(128, 'a')) == "");
  CHECK(SubjectNameProblem("") != "");
  CHECK(SubjectNameProblem(std::string(129, 'a')) != "");
  CHECK(SubjectNameProblem("tab\there") != "");
  CHECK(SubjectNameProblem("new\nline") != "");
  CHECK(SubjectNameProblem("caf\xc3\xa9") != "");
  CHECK(SubjectNameProblem(" padded") != "");
  CHECK(SubjectNameProblem("padded ") != "");
  CHECK(SubjectNameProblem(std::string("nul\0byte", 8)) != "");
}

TEST_CASE("quota: visitors and named subjects never share a counter") {
  const std::string id(32, 'a');
  CHECK(VisitorSubject(id) != NamedSubject(id));
  CHECK(NamedSubject("visitor:" + id) != VisitorSubject(id));
}
