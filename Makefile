# paintlock — the two commands a newcomer needs are `make run` and `make test`.
# Both install missing Debian/npm dependencies first (as root; otherwise they
# print the one command to run).

BUILD      ?= build
JOBS       ?= 2
CMAKE_TYPE ?= RelWithDebInfo
PG_DIR     := $(BUILD)/pg

.PHONY: all deps test-deps package build run test unit bench chaos asan asan-build tsan tsan-build fuzz format format-check clean help

all: build

help:
	@echo "make run     build and start PostgreSQL, the fake Stripe, the gateway and the demo shop"
	@echo "make test    build and run every test (unit, integration, JS) through ctest"
	@echo "make bench   gateway vs pgbench on the same SQL, side by side"
	@echo "make chaos   seeded fault campaign with an invariant ledger (SEED=n MINUTES=m)"
	@echo "make asan    tests under AddressSanitizer + UBSan (build-asan/)"
	@echo "make tsan    tests under ThreadSanitizer (build-tsan/)"
	@echo "make fuzz    each libFuzzer target for FUZZ_SECONDS (default 60; build-asan/)"
	@echo "make format  clang-format every C++ file"
	@echo "make format-check  fail if a C++ file is not clang-formatted (CI runs it)"
	@echo "make package  the Debian package (build/paintlock_VERSION_ARCH.deb)"
	@echo "Every script (fixtures/, bench/, fuzz/, deploy/, .ci/run) prints its usage with --help."

# What building and `make run` need; test-deps adds the test, sanitizer, packaging
# and HA tools (Chromium, nginx, clang, Node.js and npm ci, Patroni, PgBouncer, …).
deps:
	@fixtures/deps.sh

# The Debian package: $(BUILD)/paintlock_VERSION_ARCH.deb (cmake/package.cmake).
package: test-deps build
	@cd $(BUILD) && cpack -G DEB >/dev/null && ls -1 $$PWD/paintlock_*.deb

test-deps:
	@fixtures/deps.sh --npm --ha

$(BUILD)/Makefile: CMakeLists.txt
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(CMAKE_TYPE) $(CMAKE_EXTRA) >/dev/null

build: deps $(BUILD)/Makefile
	@cmake --build $(BUILD) -j $(JOBS)

run: build
	@fixtures/run-demo.sh $(BUILD)

# The tests start their own databases in a private cluster under $(BUILD)/pg.
test: test-deps build
	@BUILD=$(BUILD) fixtures/run-tests.sh

bench: build
	@bench/run.sh $(BUILD)

# The seeded fault campaign (chaos/): two gateways, PostgreSQL and the fake
# Stripe under faults the seed chooses, then the invariant checker. SEED empty:
# a random seed, printed with the ledger (build/chaos/ledger-SEED.md).
# HA=1: against a Patroni cluster whose primary is killed (fixtures/deps.sh --ha first);
# PGBOUNCER=1: the same with the gateways' pools through PgBouncer.
SEED      ?=
MINUTES   ?= 2
HA        ?=
PGBOUNCER ?=
chaos: build
	@$(BUILD)/paintlock-chaos --seed "$(SEED)" --minutes $(MINUTES) --out $(BUILD)/chaos \
	  $(if $(HA),--ha) $(if $(PGBOUNCER),--pgbouncer)

# Sanitizer builds: -O1 keeps the suite fast enough for CI, and -g1 (line
# tables only) keeps the reports' file:line while compiling much faster than
# full debug info; "Sanitize" is a build type with no flags of its own, and,
# unlike Release, leaves assertions on. The ASan+UBSan build uses clang so that the same
# build also carries the libFuzzer targets (fuzz/). Any sanitizer report, from
# any process a test starts, fails the run (fixtures/sanitized-tests.sh).
# SAN_CTEST_ARGS passes ctest arguments (e.g. -E to leave a test out).
SAN_FLAGS  := -DCMAKE_CXX_FLAGS='-O1 -g1'
ASAN_EXTRA := -DCMAKE_CXX_COMPILER=clang++ $(SAN_FLAGS) -DPAINTLOCK_SANITIZE=address,undefined \
              -DPAINTLOCK_FUZZ=ON
TSAN_EXTRA := $(SAN_FLAGS) -DPAINTLOCK_SANITIZE=thread
SAN_CTEST_ARGS ?=
FUZZ_SECONDS ?= 60
FUZZ_JOBS    ?= $(JOBS)

asan-build: test-deps
	@$(MAKE) --no-print-directory build BUILD=build-asan CMAKE_TYPE=Sanitize CMAKE_EXTRA="$(ASAN_EXTRA)"
asan: asan-build
	@fixtures/sanitized-tests.sh address build-asan $(SAN_CTEST_ARGS)
tsan-build: test-deps
	@$(MAKE) --no-print-directory build BUILD=build-tsan CMAKE_TYPE=Sanitize CMAKE_EXTRA="$(TSAN_EXTRA)"
tsan: tsan-build
	@fixtures/sanitized-tests.sh thread build-tsan $(SAN_CTEST_ARGS)

# Each libFuzzer target for FUZZ_SECONDS, FUZZ_JOBS at a time (fuzz/run.sh).
fuzz: asan-build
	@fuzz/run.sh build-asan $(FUZZ_SECONDS) $(FUZZ_JOBS)

# Tracked files and new ones not yet added (but not ignored ones): a new file
# is formatted and checked before its first commit, not first by CI.
CXX_SOURCES = $$(git ls-files --cached --others --exclude-standard '*.cc' '*.h')
format:
	@clang-format -i $(CXX_SOURCES)
format-check:
	@clang-format --dry-run -Werror $(CXX_SOURCES)

clean:
	rm -rf $(BUILD) build-asan build-tsan
