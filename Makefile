# paintlock — the two commands a newcomer needs are `make run` and `make test`.
# Both install missing Debian/npm dependencies first (as root; otherwise they
# print the one command to run).

BUILD      ?= build
JOBS       ?= 2
CMAKE_TYPE ?= RelWithDebInfo
PG_DIR     := $(BUILD)/pg

.PHONY: all deps build run test unit bench asan tsan format clean help

all: build

help:
	@echo "make run     build and start PostgreSQL, the fake Stripe, the gateway and the demo shop"
	@echo "make test    build and run every test (unit, integration, JS) through ctest"
	@echo "make bench   gateway vs pgbench on the same SQL, side by side"
	@echo "make asan    tests under AddressSanitizer + UBSan (build-asan/)"
	@echo "make tsan    tests under ThreadSanitizer (build-tsan/)"
	@echo "make format  clang-format every C++ file"

deps:
	@fixtures/deps.sh --npm

$(BUILD)/Makefile: CMakeLists.txt
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(CMAKE_TYPE) $(CMAKE_EXTRA) >/dev/null

build: deps $(BUILD)/Makefile
	@cmake --build $(BUILD) -j $(JOBS)

run: build
	@fixtures/run-demo.sh $(BUILD)

# The tests start their own databases in a private cluster under $(BUILD)/pg.
test: build
	@BUILD=$(BUILD) fixtures/run-tests.sh

bench: build
	@bench/run.sh $(BUILD)

asan:
	@$(MAKE) --no-print-directory test BUILD=build-asan CMAKE_TYPE=Debug \
	  CMAKE_EXTRA=-DPAINTLOCK_SANITIZE=address,undefined
tsan:
	@$(MAKE) --no-print-directory test BUILD=build-tsan CMAKE_TYPE=Debug \
	  CMAKE_EXTRA=-DPAINTLOCK_SANITIZE=thread

format:
	@clang-format -i $$(git ls-files '*.cc' '*.h')

clean:
	rm -rf $(BUILD) build-asan build-tsan
