#!/usr/bin/env bash
# ctest: `make run` with a real Stripe key and no webhook secret must stop at
# once (exit 1), before starting anything, with one line that says what to do.
#   tests/run_demo_refusal.sh BUILD_DIR
set -uo pipefail
source "$(dirname "$0")/../fixtures/help.sh" "$@"
here=$(cd "$(dirname "$0")/.." && pwd)
out=$(env -u STRIPE_WEBHOOK_SECRET -u DATABASE_URL STRIPE_SECRET_KEY=sk_test_not_a_real_key \
  PAINTLOCK_PORT=1 timeout 20 "$here/fixtures/run-demo.sh" "$1" 2>&1)
rc=$?
lines=$(printf '%s\n' "$out" | wc -l)
printf '%s\n' "$out"
expected='run: STRIPE_SECRET_KEY is set but STRIPE_WEBHOOK_SECRET is not: run `stripe listen --forward-to 127.0.0.1:1/v1/webhooks/stripe`'
if [[ $rc -ne 1 || $lines -ne 1 || "$out" != "$expected"* ]]; then
  echo "FAIL: exit $rc, $lines line(s); expected exit 1 and one line starting: $expected" >&2
  exit 1
fi
