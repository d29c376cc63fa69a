// The gateway's webhook endpoint against signatures made by the official
// `stripe` library (stripe.webhooks.generateTestHeaderString): accepted when
// right, refused with nothing changed when a byte, the secret or the time is
// wrong, and both secrets accepted while a secret is rolled.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import Stripe from 'stripe';

const here = path.dirname(fileURLToPath(import.meta.url));
const buildDir = path.resolve(process.env.PAINTLOCK_BUILD_DIR ?? path.join(here, '../../build'));
const sourceDir = path.resolve(here, '../..');
const adminUrl = process.env.PAINTLOCK_TEST_ADMIN_URL;
const OLD_SECRET = 'whsec_js_old_secret';
const NEW_SECRET = 'whsec_js_new_secret';
const stripe = new Stripe('sk_test_js');

function psql(url, sql) {
  return execFileSync('psql', [url, '-Atqc', sql], { encoding: 'utf8' }).trim();
}

async function freePort() {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

let dbName;
let dbUrl;
let gateway;
let base;

before(async () => {
  assert.ok(adminUrl, 'PAINTLOCK_TEST_ADMIN_URL is not set: run with `make test`');
  dbName = `t_js_${process.pid}`;
  psql(adminUrl, `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  psql(adminUrl, `CREATE DATABASE ${dbName}`);
  dbUrl = adminUrl.replace('/postgres?', `/${dbName}?`);
  const env = { ...process.env, DATABASE_URL: dbUrl };
  execFileSync(path.join(buildDir, 'paintlockctl'), ['migrate'], { env });
  execFileSync(path.join(buildDir, 'paintlockctl'),
    ['catalog', 'import', path.join(sourceDir, 'fixtures/catalog.json')], { env });

  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  gateway = spawn(path.join(buildDir, 'paintlock'), [], {
    stdio: 'ignore',
    env: {
      ...env,
      PAINTLOCK_LISTEN: `127.0.0.1:${port}`,
      STRIPE_SECRET_KEY: 'sk_test_js',
      STRIPE_API_BASE: `http://127.0.0.1:${await freePort()}`,  // never called here
      STRIPE_WEBHOOK_SECRET: `${OLD_SECRET},${NEW_SECRET}`,
    },
  });
  for (let i = 0; i < 200; i++) {
    try {
      if ((await fetch(`${base}/readyz`)).ok) return;
    } catch { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the gateway did not become ready');
});

after(() => {
  gateway?.kill('SIGTERM');
  if (dbName) psql(adminUrl, `DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
});

function event(id) {
  return JSON.stringify({
    id, object: 'event', type: 'checkout.session.completed', api_version: '2026-10-28.endive',
    created: Math.floor(Date.now() / 1000), livemode: false, pending_webhooks: 1, request: null,
    data: { object: { id: `cs_test_${id}`, object: 'checkout.session', status: 'complete',
      payment_status: 'paid', payment_intent: `pi_${id}`, metadata: {} } },
  }, null, 2);
}

async function post(payload, header) {
  const headers = { 'Content-Type': 'application/json; charset=utf-8' };
  if (header !== undefined) headers['Stripe-Signature'] = header;
  const res = await fetch(`${base}/v1/webhooks/stripe`, { method: 'POST', headers, body: payload });
  return { status: res.status, body: await res.json() };
}

const recorded = (id) => psql(dbUrl, `SELECT count(*) FROM stripe_events WHERE id = '${id}'`);

test('a webhook signed by the official library is accepted and recorded once', async () => {
  const payload = event('evt_js_ok');
  const header = stripe.webhooks.generateTestHeaderString({ payload, secret: NEW_SECRET });
  const first = await post(payload, header);
  assert.equal(first.status, 200);
  assert.equal(first.body.handled, true);
  assert.equal(first.body.outcome, 'unknown_session');  // no reservation has this session
  const again = await post(payload, header);
  assert.equal(again.status, 200);
  assert.equal(again.body.outcome, 'duplicate');
  assert.equal(recorded('evt_js_ok'), '1');
});

test('both secrets work while a secret is rolled, alone or as two v1 signatures', async () => {
  const payload = event('evt_js_roll');
  const timestamp = Math.floor(Date.now() / 1000);
  const oldHeader = stripe.webhooks.generateTestHeaderString({ payload, secret: OLD_SECRET, timestamp });
  assert.equal((await post(payload, oldHeader)).status, 200);
  const payload2 = event('evt_js_roll2');
  const a = stripe.webhooks.generateTestHeaderString({ payload: payload2, secret: 'whsec_unknown', timestamp });
  const b = stripe.webhooks.generateTestHeaderString({ payload: payload2, secret: NEW_SECRET, timestamp });
  const both = `${a},v1=${b.split('v1=')[1]}`;
  assert.equal((await post(payload2, both)).status, 200);
});

test('a changed byte, a wrong secret, an old timestamp or no header are refused and change nothing', async () => {
  const payload = event('evt_js_bad');
  const good = stripe.webhooks.generateTestHeaderString({ payload, secret: NEW_SECRET });
  const changed = payload.replace('"paid"', '"PAID"');
  const cases = [
    ['a changed byte', changed, good],
    ['a wrong secret', payload, stripe.webhooks.generateTestHeaderString({ payload, secret: 'whsec_wrong' })],
    ['an old timestamp', payload, stripe.webhooks.generateTestHeaderString({
      payload, secret: NEW_SECRET, timestamp: Math.floor(Date.now() / 1000) - 301 })],
    ['no header', payload, undefined],
    ['an empty header', payload, ''],
  ];
  for (const [what, body, header] of cases) {
    const res = await post(body, header);
    assert.equal(res.status, 400, what);
    assert.equal(res.body.code, 'invalid_signature', what);
  }
  assert.equal(recorded('evt_js_bad'), '0');
});
