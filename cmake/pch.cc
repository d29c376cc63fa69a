// Nothing to compile: paintlock_pch (CMakeLists.txt) exists to build the
// precompiled third-party headers that every other target reuses.
