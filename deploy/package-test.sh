#!/usr/bin/env bash
# CI's package check: builds the Debian package, installs it with dpkg -i,
# runs both binaries' --version, checks the systemd units with
# `systemd-analyze verify`, and removes the package again. Modifies the
# machine (a package and a system user): CI runs it on its throw-away machine;
# elsewhere run it only where that is fine. Root only.
#
#   deploy/package-test.sh [BUILD]    (default: build)
set -euo pipefail
source "$(dirname "$0")/../fixtures/help.sh" "$@"
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build}
cd "$here"
[[ $(id -u) -eq 0 ]] || { echo "package-test: needs root (dpkg -i)" >&2; exit 2; }

deb=$(make -s package BUILD="$build" | tail -1)
echo "package-test: built $deb" >&2
dpkg-deb --info "$deb" | sed -n 's/^ \(Package\|Version\|Depends\):/  \1:/p' >&2
trap 'dpkg -P paintlock >/dev/null 2>&1 || true' EXIT
dpkg -i "$deb" >/dev/null

# The package's version is the CMake project version the binaries report.
version=$(dpkg-deb -f "$deb" Version)
fail=0
for bin in paintlock paintlockctl; do
  got=$(/usr/bin/$bin --version)
  echo "package-test: /usr/bin/$bin --version: $got" >&2
  [[ "$got" == *"$version"* ]] || { echo "package-test: $bin does not say $version" >&2; fail=1; }
done
getent passwd paintlock >/dev/null || { echo "package-test: no paintlock user" >&2; fail=1; }
mode=$(stat -c '%a %U:%G' /etc/paintlock/paintlock.env)
[[ "$mode" == "640 root:paintlock" ]] ||
  { echo "package-test: /etc/paintlock/paintlock.env is $mode, not 640 root:paintlock" >&2; fail=1; }
# The alert rules ship as an example a seller copies into Prometheus's rule_files.
rules=/usr/share/doc/paintlock/examples/prometheus
if ! (cd "$rules" && promtool check rules paintlock-alerts.yml >/dev/null &&
  promtool test rules paintlock-alerts.test.yml >/dev/null); then
  echo "package-test: $rules/paintlock-alerts.yml is missing or fails promtool" >&2
  fail=1
fi
# verify checks every unit's syntax, its ExecStart binaries and the timer's service.
if ! systemd-analyze verify /lib/systemd/system/paintlock.service \
  /lib/systemd/system/paintlock-reconcile.service /lib/systemd/system/paintlock-reconcile.timer; then
  echo "package-test: systemd-analyze verify found problems" >&2
  fail=1
fi
((fail == 0)) && echo "package-test: installed, --version $version, units verified, alert rules pass promtool" >&2
exit $fail
