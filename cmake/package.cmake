# `cmake --install` and the Debian package (`make package`, CPack).
#
# Installs the two binaries (the migrations are compiled into them), the systemd
# units, an example settings file in /etc/paintlock/ (a conffile: an upgrade
# never overwrites the seller's), the nginx site and the docs. The package's
# postinst creates the `paintlock` system user; nothing is started or enabled:
# the seller fills in /etc/paintlock/paintlock.env first (README "Operating").
include(GNUInstallDirs)

install(TARGETS paintlock paintlockctl RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# Units go to /lib/systemd/system whatever the prefix: that is where systemd
# looks for a package's units on Debian.
set(PAINTLOCK_UNIT_DIR "/lib/systemd/system" CACHE PATH "Where the systemd units are installed")
install(FILES deploy/systemd/paintlock.service deploy/systemd/paintlock-reconcile.service
              deploy/systemd/paintlock-reconcile.timer
        DESTINATION ${PAINTLOCK_UNIT_DIR})
install(FILES deploy/paintlock.env DESTINATION /etc/paintlock
        PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ)
install(FILES README.md LICENSE CHANGELOG.md docs/ARCHITECTURE.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES deploy/nginx/paintlock.conf DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples/nginx)
install(FILES deploy/prometheus/paintlock-alerts.yml deploy/prometheus/paintlock-alerts.test.yml
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples/prometheus)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME paintlock)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "paintlock maintainers <paintlock@example.com>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "checkout gateway for one-of-a-kind goods: PostgreSQL reservations, Stripe Checkout")
set(CPACK_PACKAGE_DESCRIPTION
    "paintlock takes an all-or-nothing reservation on every item of a cart in a PostgreSQL\n"
    "lock table, then creates a Stripe Checkout Session; webhooks sell or release.")
set(CPACK_RESOURCE_FILE_LICENSE ${CMAKE_SOURCE_DIR}/LICENSE)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # libpqxx, libssl, spdlog… from the binaries' links
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "postgresql (>= 15), nginx-light")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_SOURCE_DIR}/deploy/debian/postinst ${CMAKE_SOURCE_DIR}/deploy/debian/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
