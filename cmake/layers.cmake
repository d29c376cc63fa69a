# The floors of paintlock and what each may include (docs/ARCHITECTURE.md,
# "Layers"). Arrows run downwards only:
#
#   admin/, gateway/  →  checkout/  →  webhooks/  →  locks/, stripe/  →  base/
#
# Run as a script (cmake -DSOURCE_DIR=… -P cmake/layers.cmake) by the build
# before anything compiles, so an upward include fails the build with the file,
# the line and the rule it breaks. fixtures/fake_stripe (test-only) may use
# base/ and webhooks/ (it signs webhooks in the verifier's format); tests/,
# bench/ and fuzz/ may use anything.
set(PAINTLOCK_LAYERS base locks stripe webhooks checkout gateway admin fixtures/fake_stripe)
set(PAINTLOCK_ALLOWED_base "")
set(PAINTLOCK_ALLOWED_locks base)
set(PAINTLOCK_ALLOWED_stripe base)
set(PAINTLOCK_ALLOWED_webhooks base locks stripe)
set(PAINTLOCK_ALLOWED_checkout base locks stripe webhooks)
set(PAINTLOCK_ALLOWED_gateway base locks stripe webhooks checkout)
set(PAINTLOCK_ALLOWED_admin base locks stripe webhooks checkout)
set(PAINTLOCK_ALLOWED_fixtures/fake_stripe base webhooks)  # signs webhooks with the verifier's format
# Folders whose headers may be included from anywhere above base (none today).
set(PAINTLOCK_PROJECT_FOLDERS base locks stripe webhooks checkout gateway admin fixtures tests bench fuzz)

cmake_policy(SET CMP0057 NEW)  # IN_LIST in script mode
if(CMAKE_SCRIPT_MODE_FILE)
  set(violations "")
  foreach(layer ${PAINTLOCK_LAYERS})
    file(GLOB_RECURSE sources ${SOURCE_DIR}/${layer}/*.h ${SOURCE_DIR}/${layer}/*.cc)
    foreach(source ${sources})
      file(STRINGS ${source} includes REGEX "^[ \t]*#[ \t]*include[ \t]+\"[^\"]+\"")
      foreach(line ${includes})
        string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]+\"([^\"]+)\".*" "\\1" header "${line}")
        string(REGEX MATCH "^[^/]+" folder "${header}")
        if(header MATCHES "^fixtures/fake_stripe/")
          set(folder fixtures/fake_stripe)
        endif()
        if(NOT header MATCHES "/" OR NOT folder IN_LIST PAINTLOCK_PROJECT_FOLDERS)
          continue()  # a system or third-party header
        endif()
        if(folder STREQUAL layer OR folder IN_LIST PAINTLOCK_ALLOWED_${layer})
          continue()
        endif()
        file(RELATIVE_PATH rel ${SOURCE_DIR} ${source})
        string(APPEND violations "  ${rel} includes \"${header}\": ${layer}/ may include only "
                                 "${layer}/ ${PAINTLOCK_ALLOWED_${layer}}\n")
      endforeach()
    endforeach()
  endforeach()
  if(violations)
    message(FATAL_ERROR "Layer check failed: a floor includes one above it "
                        "(docs/ARCHITECTURE.md, Layers):\n${violations}")
  endif()
endif()
