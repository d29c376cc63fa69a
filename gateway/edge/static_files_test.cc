#include "gateway/edge/static_files.h"

#include <doctest/doctest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

using paintlock::gateway::edge::ResolveStaticFile;

namespace {

// A storefront directory, a directory outside it, and links between them.
struct Tree {
  Tree() {
    char dir_template[] = "/tmp/paintlock-static-XXXXXX";
    base = mkdtemp(dir_template);
    shop = base + "/shop";
    mkdir(shop.c_str(), 0700);
    mkdir((shop + "/css").c_str(), 0700);
    mkdir((shop + "/.git").c_str(), 0700);
    mkdir((base + "/shop-private").c_str(), 0700);
    std::ofstream(shop + "/index.html") << "i";
    std::ofstream(shop + "/css/a.css") << "a";
    std::ofstream(shop + "/.env") << "secret";
    std::ofstream(shop + "/.git/config") << "secret";
    std::ofstream(base + "/shop-private/key") << "secret";
    (void)!symlink((base + "/shop-private/key").c_str(), (shop + "/out").c_str());
    // A prefix of the directory's name is not the directory.
    (void)!symlink("../shop-private", (shop + "/sibling").c_str());
    (void)!symlink("css/a.css", (shop + "/in.css").c_str());
    (void)!symlink(".env", (shop + "/env").c_str());
  }
  ~Tree() { (void)!std::system(("rm -rf '" + base + "'").c_str()); }
  std::string base, shop;
};

}  // namespace

TEST_CASE("static files: regular files inside the directory, symlinks that stay inside") {
  Tree t;
  CHECK(ResolveStaticFile(t.shop, "/shop/", "/").value_or("") == t.shop + "/index.html");
  CHECK(ResolveStaticFile(t.shop, "/shop/css/a.css", "/css/a.css").value_or("") ==
        t.shop + "/css/a.css");
  CHECK(ResolveStaticFile(t.shop, "/shop/in.css", "/in.css").value_or("") == t.shop + "/css/a.css");
}

TEST_CASE("static files: dotfiles, escapes, directories, missing files and NUL are refused") {
  Tree t;
  const std::pair<const char*, std::string> refused[] = {
      {"/shop/.env", "/.env"},
      {"/shop/.git/config", "/.git/config"},
      {"/shop/%2egit/config", "/.git/config"},
      {"/shop/../shop-private/key", "/../shop-private/key"},
      {"/shop/out", "/out"},
      {"/shop/sibling/key", "/sibling/key"},
      {"/shop/env", "/env"},
      {"/shop/css", "/css"},
      {"/shop/missing", "/missing"},
      {"/shop/index.html%00.png", std::string("/index.html") + '\0' + ".png"},
      {"/shop/index.html%00", "/index.html"},
      {"/shop/x", "x"},
  };
  for (const auto& entry : refused) {
    const char* target = entry.first;  // a name, not a binding: CAPTURE takes its address
    CAPTURE(target);
    CHECK(!ResolveStaticFile(t.shop, target, entry.second));
  }
}
