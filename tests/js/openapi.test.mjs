// docs/openapi.json against the real gateway: the document it serves at
// GET /v1/openapi.json is the repository's file and a valid OpenAPI 3.1
// document (@seriousme/openapi-schema-validator); every route README.md
// mentions is in it; and real answers of every documented operation — each
// success and each documented error status — validate against the schema
// the document gives for their path, method, status and media type (Ajv's
// JSON Schema 2020-12 with ajv-formats). An answer whose status or media
// type the document does not list fails, and so does a documented
// operation/status pair that no request here produced.
//
// One gateway with every optional route on (metrics behind the API key,
// quotas, licences, rate-limit buckets), the fake Stripe delivering webhooks
// to it, and a fresh database. Visitors are told apart by X-Forwarded-For
// (127.0.0.1 is a trusted proxy), so per-visitor limits are reached on
// purpose only.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { Validator } from '@seriousme/openapi-schema-validator';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import Stripe from 'stripe';

import {
  GATEWAY_API_KEY,
  STRIPE_WEBHOOK_SECRET,
  createDatabase,
  eventually,
  freePort,
  psql,
  sourceDir,
  startFakeStripe,
  startGateway,
} from './support.mjs';

const docPath = path.join(sourceDir, 'docs/openapi.json');
const docText = fs.readFileSync(docPath, 'utf8');
const doc = JSON.parse(docText);
const LICENSE_SECRET = 'openapi-test-licence-secret-0123456789abcdef';
const KEY = { Authorization: `Bearer ${GATEWAY_API_KEY}` };
const JSON_TYPE = { 'Content-Type': 'application/json' };
const stripeLib = new Stripe('sk_test_openapi');

// Routes README.md mentions that are not paintlock's: Patroni's health check
// (haproxy routes on it) and Stripe's own API, which paintlock calls.
const NOT_OURS = new Set([
  'GET /primary',
  'GET /v1/checkout/sessions',
  'POST /v1/checkout/sessions/{}/expire',
]);

// ---- The document as a validator ------------------------------------------

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(doc, 'openapi.json');
const validators = new Map();

function pointer(...parts) {
  return '#/' + parts.map((p) => String(p).replaceAll('~', '~0').replaceAll('/', '~1')).join('/');
}

function validatorFor(...parts) {
  const ref = 'openapi.json' + pointer(...parts);
  if (!validators.has(ref)) validators.set(ref, ajv.compile({ $ref: ref }));
  return validators.get(ref);
}

// Path templates, literal ones first: /v1/paintings/stream before /v1/paintings/{id}.
const templates = Object.keys(doc.paths)
  .map((template) => ({
    template,
    params: (template.match(/\{/g) ?? []).length,
    re: new RegExp('^' + template.replace(/[.]/g, '\\.').replace(/\{[^}]+\}/g, '[^/]+') + '$'),
  }))
  .sort((a, b) => a.params - b.params);

function templateOf(pathname) {
  return templates.find((t) => t.re.test(pathname))?.template;
}

const documentedPairs = new Set();
for (const [template, item] of Object.entries(doc.paths)) {
  for (const [method, operation] of Object.entries(item)) {
    for (const status of Object.keys(operation.responses)) {
      documentedPairs.add(`${method.toUpperCase()} ${template} ${status}`);
    }
  }
}
const exercised = new Set();

// Checks one real answer against the document and records its pair.
// Returns the parsed JSON body (or the text for other media types).
function checkAnswer(method, url, status, headers, text) {
  const pathname = new URL(url).pathname;
  const template = templateOf(pathname);
  const where = `${method} ${pathname} → ${status}`;
  assert.ok(template, `${where}: the path is not in docs/openapi.json`);
  const operation = doc.paths[template][method.toLowerCase()];
  assert.ok(operation, `${where}: ${method} ${template} is not in docs/openapi.json`);
  const response = operation.responses[String(status)];
  assert.ok(response, `${where}: status ${status} is not documented for ${method} ${template}; ` +
    `body: ${text.slice(0, 300)}`);
  exercised.add(`${method} ${template} ${status}`);
  assert.ok(headers.get('x-request-id'), `${where}: every answer carries X-Request-Id`);

  for (const [name, header] of Object.entries(response.headers ?? {})) {
    const value = headers.get(name);
    if (value === null) continue;
    const schema = header.$ref
      ? validatorFor(...header.$ref.slice(2).split('/'), 'schema')
      : validatorFor('paths', template, method.toLowerCase(), 'responses', String(status),
        'headers', name, 'schema');
    const typed = /^\d+$/.test(value) && name === 'Retry-After' ? Number(value) : value;
    assert.ok(schema(typed), `${where}: header ${name}: ${value}: ${ajv.errorsText(schema.errors)}`);
  }

  if (!response.content) return text;
  const media = (headers.get('content-type') ?? '').split(';')[0].trim();
  assert.ok(response.content[media],
    `${where}: media type "${media}" is not documented (${Object.keys(response.content)})`);
  if (media !== 'application/json') return text;
  let body;
  try {
    body = JSON.parse(text);
  } catch {
    assert.fail(`${where}: the body is not JSON: ${text.slice(0, 200)}`);
  }
  const validate = validatorFor('paths', template, method.toLowerCase(), 'responses',
    String(status), 'content', media, 'schema');
  assert.ok(validate(body), `${where}: ${ajv.errorsText(validate.errors)}\nbody: ${text.slice(0, 600)}`);
  return body;
}

// ---- The gateway ----------------------------------------------------------

let db;
let stripe;
let gateway;
let base;
let nextVisitor = 1;

/** A new client address, believed through X-Forwarded-For. */
function visitor() {
  const n = nextVisitor++;
  return { 'X-Forwarded-For': `198.51.${Math.floor(n / 250)}.${(n % 250) + 1}` };
}

/**
 * One request; its answer is checked against the document. `json` sends a
 * JSON body, `body` a raw one. Resolves to {status, headers, body}.
 */
async function call(method, pathname, { headers = {}, json, body } = {}) {
  const init = { method, headers: { ...headers }, redirect: 'manual' };
  if (json !== undefined) {
    init.body = JSON.stringify(json);
    init.headers['Content-Type'] ??= 'application/json';
  } else if (body !== undefined) {
    init.body = body;
  }
  const url = base + pathname;
  const response = await fetch(url, init);
  const text = await response.text();
  const parsed = checkAnswer(method, url, response.status, response.headers, text);
  return { status: response.status, headers: response.headers, body: parsed };
}

async function expect(status, method, pathname, options) {
  const answer = await call(method, pathname, options);
  assert.equal(answer.status, status,
    `${method} ${pathname}: expected ${status}, got ${answer.status}: ${JSON.stringify(answer.body)}`);
  return answer;
}

async function expectError(status, code, method, pathname, options) {
  const answer = await expect(status, method, pathname, options);
  assert.equal(answer.body.code, code, `${method} ${pathname}: ${JSON.stringify(answer.body)}`);
  return answer;
}

/** `event` as Stripe signs it: the request options for the webhook. */
function signed(event) {
  const payload = JSON.stringify(event);
  const signature = stripeLib.webhooks.generateTestHeaderString({ payload, secret: STRIPE_WEBHOOK_SECRET });
  return { headers: { ...JSON_TYPE, 'Stripe-Signature': signature }, body: payload };
}

const deliver = (event) => call('POST', '/v1/webhooks/stripe', signed(event));

function subscriptionEvent(id, type, subscription, status) {
  return {
    id, object: 'event', type, created: Math.floor(Date.now() / 1000), livemode: false,
    data: { object: {
      id: subscription, object: 'subscription', customer: `cus_${subscription.slice(4)}`, status,
      current_period_end: Math.floor(Date.now() / 1000) + 30 * 86400,
    } },
  };
}

function licenseKey(subscription) {
  return 'plk_' + crypto.createHmac('sha256', LICENSE_SECRET)
    .update(`paintlock-license:v1:${subscription}`).digest('hex');
}

before(async () => {
  db = await createDatabase();
  const port = await freePort();
  stripe = await startFakeStripe({
    webhookUrl: `http://127.0.0.1:${port}/v1/webhooks/stripe`,
    webhookSecret: STRIPE_WEBHOOK_SECRET,
  });
  gateway = await startGateway({
    port,
    databaseUrl: db.url,
    stripeUrl: stripe.url,
    env: {
      PAINTLOCK_METRICS: 'api-key',
      PAINTLOCK_QUOTAS: 'downloads:2:UTC',
      PAINTLOCK_LICENSE_SECRET: LICENSE_SECRET,
      PAINTLOCK_LICENSE_CACHE_SECONDS: '0',
      PAINTLOCK_RATE_LIMITS: 'api:3:0.001,checkout:3:0.001',
      PAINTLOCK_TRUSTED_PROXIES: '127.0.0.1',
      PAINTLOCK_MAX_STREAMS: '1',
      STRIPE_MAX_RETRIES: '0',
    },
  });
  base = gateway.url;
});

after(async () => {
  await gateway?.stop();
  await stripe?.stop();
  await db?.drop();
});

// ---- The document ---------------------------------------------------------

test('GET /v1/openapi.json serves the repository file, cacheable, and it is valid OpenAPI 3.1', async () => {
  const answer = await expect(200, 'GET', '/v1/openapi.json');
  assert.equal(answer.headers.get('content-type').split(';')[0], 'application/json');
  assert.deepEqual(answer.body, doc, 'the served document is docs/openapi.json');
  const served = await (await fetch(`${base}/v1/openapi.json`)).text();
  assert.equal(served, docText, 'byte for byte');
  const etag = answer.headers.get('etag');
  assert.match(etag, /^"[0-9a-f]{32}"$/);
  assert.match(answer.headers.get('cache-control'), /max-age=\d+/);
  await expect(304, 'GET', '/v1/openapi.json', { headers: { 'If-None-Match': etag } });

  const result = await new Validator().validate(structuredClone(doc));
  assert.deepEqual(result, { valid: true }, JSON.stringify(result.errors, null, 1));
  assert.equal(doc.openapi, '3.1.0');
});

test('every route README.md mentions is in the document', () => {
  const readme = fs.readFileSync(path.join(sourceDir, 'README.md'), 'utf8');
  const mentions = new Set();
  for (const m of readme.matchAll(/\b(GET|POST|DELETE|PUT|PATCH) (\/[A-Za-z0-9_/{}.:-]*[A-Za-z0-9_}])/g)) {
    mentions.add(`${m[1]} ${m[2].replace(/\{[^}]*\}/g, '{}')}`);
  }
  assert.ok(mentions.size >= 30, `README.md mentions ${mentions.size} routes`);
  const missing = [];
  for (const mention of mentions) {
    if (NOT_OURS.has(mention)) continue;
    const [method, route] = mention.split(' ');
    const template = templateOf(route.replaceAll('{}', 'x'));
    if (!template || !doc.paths[template][method.toLowerCase()]) missing.push(mention);
  }
  assert.deepEqual(missing, [], 'README routes missing from docs/openapi.json');
});

// ---- Public routes --------------------------------------------------------

test('health, the script and the catalogue', async () => {
  await expect(200, 'GET', '/healthz');
  assert.equal((await expect(200, 'GET', '/readyz')).body.database, 'available');
  const script = await expect(200, 'GET', '/paintlock.js');
  await expect(304, 'GET', '/paintlock.js', { headers: { 'If-None-Match': script.headers.get('etag') } });

  const all = await expect(200, 'GET', '/v1/paintings');
  assert.equal(all.body.data.length, 12);
  const page = await expect(200, 'GET', '/v1/paintings?limit=2');
  assert.equal(page.body.has_more, true);
  await expect(200, 'GET', `/v1/paintings?limit=2&starting_after=${page.body.data[1].id}`);
  await expectError(400, 'invalid_request', 'GET', '/v1/paintings?limit=0');
  await expectError(400, 'starting_after_not_found', 'GET', '/v1/paintings?starting_after=p999');
  await expect(200, 'GET', '/v1/paintings/p1');
  await expectError(404, 'painting_not_found', 'GET', '/v1/paintings/p999');
});

test('the availability stream: its events as documented, and a bad line token', async () => {
  const url = `${base}/v1/paintings/stream`;
  const controller = new AbortController();
  const response = await fetch(url, { signal: controller.signal });
  checkAnswer('GET', url, response.status, response.headers, '');
  assert.equal(response.status, 200);
  const events = doc.paths['/v1/paintings/stream'].get.responses['200']
    .content['text/event-stream']['x-paintlock-events'];
  const reader = response.body.getReader();
  let text = '';
  const seen = new Set();
  // The first events are every painting.
  while (seen.size < 12) {
    const { value, done } = await reader.read();
    assert.ok(!done, 'the stream ended before every painting was sent');
    text += Buffer.from(value).toString('utf8');
    const blocks = text.split('\n\n');
    text = blocks.pop();
    for (const block of blocks) {
      const fields = Object.fromEntries(block.split('\n').filter((l) => l && !l.startsWith(':'))
        .map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1).trimStart()]));
      if (!fields.event) continue;
      assert.ok(events[fields.event], `undocumented stream event "${fields.event}"`);
      const validate = validatorFor('paths', '/v1/paintings/stream', 'get', 'responses', '200',
        'content', 'text/event-stream', 'x-paintlock-events', fields.event);
      const data = JSON.parse(fields.data);
      assert.ok(validate(data), `event ${fields.event}: ${ajv.errorsText(validate.errors)}`);
      seen.add(data.id);
    }
  }
  // This gateway allows one stream (PAINTLOCK_MAX_STREAMS=1), and it is open.
  await expectError(503, 'too_many_streams', 'GET', '/v1/paintings/stream');
  await expectError(400, 'invalid_request', 'GET', '/v1/paintings/stream?line_token=nope');
  controller.abort();
});

test('checkout: JSON and form, every refusal, Stripe failures, the success page', async () => {
  const started = await expect(201, 'POST', '/v1/checkout', { headers: visitor(), json: { paintings: ['p1'] } });
  assert.ok(started.body.checkout_url.startsWith(stripe.url));
  const held = await expectError(409, 'painting_reserved', 'POST', '/v1/checkout',
    { headers: visitor(), json: { paintings: ['p1'] } });
  assert.equal(held.body.painting, 'p1');
  const page = await call('POST', '/v1/checkout', {
    headers: { ...visitor(), 'Content-Type': 'application/x-www-form-urlencoded' }, body: 'painting=p1',
  });
  assert.equal(page.status, 409);
  assert.match(page.headers.get('content-type'), /^text\/html/);
  const redirected = await expect(303, 'POST', '/v1/checkout', {
    headers: { ...visitor(), 'Content-Type': 'application/x-www-form-urlencoded' }, body: 'painting=p2',
  });
  assert.ok(redirected.headers.get('location').startsWith(stripe.url));

  await expectError(400, 'invalid_request', 'POST', '/v1/checkout', { headers: visitor(), json: { paintings: [] } });
  await expectError(404, 'painting_not_found', 'POST', '/v1/checkout', { headers: visitor(), json: { paintings: ['p999'] } });
  await expectError(415, 'unsupported_media_type', 'POST', '/v1/checkout',
    { headers: { ...visitor(), 'Content-Type': 'text/plain' }, body: 'p3' });
  await expectError(413, 'request_too_large', 'POST', '/v1/checkout',
    { headers: { ...visitor(), ...JSON_TYPE }, body: JSON.stringify({ paintings: ['p3'], pad: 'x'.repeat(70_000) }) });

  // One visitor over the checkout bucket (3): refused before anything is parsed.
  const crowd = visitor();
  for (let i = 0; i < 3; i++) {
    await expect(400, 'POST', '/v1/checkout', { headers: crowd, json: { paintings: [] } });
  }
  await expectError(429, 'rate_limited', 'POST', '/v1/checkout', { headers: crowd, json: { paintings: ['p3'] } });

  // Stripe refuses the session (400) or fails (500, no retries): nothing held.
  await stripe.control.faults({ fail_next: 1, status: 400, path_prefix: '/v1/checkout/sessions' });
  await expectError(502, 'stripe_error', 'POST', '/v1/checkout', { headers: visitor(), json: { paintings: ['p3'] } });
  await stripe.control.faults({ fail_next: 1, status: 500, path_prefix: '/v1/checkout/sessions' });
  await expectError(503, 'stripe_unavailable', 'POST', '/v1/checkout', { headers: visitor(), json: { paintings: ['p3'] } });
  await stripe.control.clearFaults();
  assert.equal((await expect(200, 'GET', '/v1/paintings/p3')).body.state, 'available');

  // Paid: the webhook sells it; the success page redirects; the paid
  // reservation cannot be released.
  const bought = await expect(201, 'POST', '/v1/checkout', { headers: visitor(), json: { paintings: ['p4'] } });
  const session = (await stripe.control.sessions())
    .find((s) => s.client_reference_id === bought.body.reservation_id);
  assert.ok(session, 'the fake Stripe has the session');
  await stripe.control.pay(session.id);
  await eventually(async () => (await call('GET', '/v1/paintings/p4')).body.state === 'sold');
  await expectError(409, 'painting_sold', 'POST', '/v1/checkout', { headers: visitor(), json: { paintings: ['p4'] } });
  await expect(303, 'GET', `/v1/checkout/success?session_id=${session.id}`);
  await expectError(400, 'invalid_request', 'GET', '/v1/checkout/success?session_id=nope');
  await expectError(404, 'session_not_found', 'GET', '/v1/checkout/success?session_id=cs_test_nosuchsession');
  const sold = await expect(200, 'GET', `/v1/reservations/${bought.body.reservation_id}`, { headers: KEY });
  assert.equal(sold.body.state, 'sold');
  assert.equal(sold.body.stripe_session_id, session.id);
  await expectError(409, 'reservation_paid', 'DELETE', `/v1/reservations/${bought.body.reservation_id}`, { headers: KEY });
});

test('waiting lines', async () => {
  const first = visitor();
  const joined = await expect(201, 'POST', '/v1/paintings/p1/line', { headers: first });
  const token = { 'Paintlock-Line-Token': joined.body.line_token };
  await expectError(409, 'already_in_line', 'POST', '/v1/paintings/p1/line', { headers: first });
  await expectError(409, 'painting_free', 'POST', '/v1/paintings/p5/line', { headers: visitor() });
  await expectError(404, 'painting_not_found', 'POST', '/v1/paintings/p999/line', { headers: visitor() });
  assert.equal((await expect(200, 'GET', '/v1/paintings/p1/line')).body.line_length, 1);
  assert.equal((await expect(200, 'GET', '/v1/paintings/p1/line', { headers: token })).body.state, 'waiting');
  await expectError(400, 'invalid_request', 'GET', '/v1/paintings/p1/line', { headers: { 'Paintlock-Line-Token': 'nope' } });
  const stranger = { 'Paintlock-Line-Token': 'plt_' + '0'.repeat(64) };
  await expectError(404, 'line_token_invalid', 'GET', '/v1/paintings/p1/line', { headers: stranger });
  await expectError(400, 'invalid_request', 'DELETE', '/v1/paintings/p1/line');
  await expectError(404, 'line_token_invalid', 'DELETE', '/v1/paintings/p1/line', { headers: stranger });
  assert.equal((await expect(200, 'DELETE', '/v1/paintings/p1/line', { headers: token })).body.was, 'waiting');
  await expectError(409, 'line_token_invalid', 'DELETE', '/v1/paintings/p1/line', { headers: token });
});

// ---- Server routes --------------------------------------------------------

test('reservations', async () => {
  const made = await expect(201, 'POST', '/v1/reservations', { headers: KEY, json: { paintings: ['p5'], buyer: 'order-1' } });
  const id = made.body.reservation_id;
  assert.equal(made.headers.get('location'), `/v1/reservations/${id}`);
  assert.equal((await expect(200, 'GET', `/v1/reservations/${id}`, { headers: KEY })).body.state, 'held');
  await expectError(409, 'painting_reserved', 'POST', '/v1/reservations', { headers: KEY, json: { paintings: ['p5'] } });
  await expectError(400, 'invalid_request', 'POST', '/v1/reservations', { headers: KEY, json: { paintings: [] } });
  await expectError(404, 'painting_not_found', 'POST', '/v1/reservations', { headers: KEY, json: { paintings: ['p999'] } });
  await expectError(415, 'unsupported_media_type', 'POST', '/v1/reservations',
    { headers: { ...KEY, 'Content-Type': 'text/plain' }, body: 'p5' });
  await expectError(401, 'unauthorized', 'POST', '/v1/reservations', { json: { paintings: ['p6'] } });
  await expectError(401, 'unauthorized', 'GET', `/v1/reservations/${id}`);
  await expectError(401, 'unauthorized', 'DELETE', `/v1/reservations/${id}`);
  assert.equal((await expect(200, 'DELETE', `/v1/reservations/${id}`, { headers: KEY })).body.state, 'released');
  await expectError(404, 'reservation_not_found', 'GET', '/v1/reservations/r_nosuch', { headers: KEY });
  await expectError(404, 'reservation_not_found', 'DELETE', '/v1/reservations/r_nosuch', { headers: KEY });
});

test('the Stripe webhook and the metrics', async () => {
  const ignored = await expect(200, 'POST', '/v1/webhooks/stripe', signed({
    id: 'evt_openapi_1', object: 'event', type: 'customer.created', created: Math.floor(Date.now() / 1000),
    livemode: false, data: { object: { id: 'cus_1', object: 'customer' } },
  }));
  assert.equal(ignored.body.handled, false);
  await expectError(400, 'invalid_signature', 'POST', '/v1/webhooks/stripe',
    { headers: { ...JSON_TYPE, 'Stripe-Signature': 't=1,v1=00' }, body: '{}' });

  const metrics = await expect(200, 'GET', '/metrics', { headers: KEY });
  assert.match(metrics.body, /paintlock_http_requests_total/);
  await expectError(401, 'unauthorized', 'GET', '/metrics');
});

test('quotas and licences', async () => {
  assert.equal((await deliver(subscriptionEvent('evt_sub_live', 'customer.subscription.created', 'sub_live', 'active'))).status, 200);
  assert.equal((await deliver(subscriptionEvent('evt_sub_dead', 'customer.subscription.deleted', 'sub_dead', 'canceled'))).status, 200);
  const live = { 'X-License-Key': licenseKey('sub_live') };
  const dead = { 'X-License-Key': licenseKey('sub_dead') };
  const forged = { 'X-License-Key': 'plk_' + 'f'.repeat(64) };

  const who = visitor();
  assert.equal((await expect(200, 'POST', '/v1/quotas/downloads/consume', { headers: who })).body.used, 1);
  await expect(200, 'POST', '/v1/quotas/downloads/consume', { headers: who });
  await expectError(429, 'quota_exceeded', 'POST', '/v1/quotas/downloads/consume', { headers: who });
  assert.equal((await expect(200, 'GET', '/v1/quotas/downloads', { headers: who })).body.remaining, 0);
  assert.equal((await expect(200, 'POST', '/v1/quotas/downloads/consume', { headers: { ...who, ...live } })).body.licensed, true);
  await expectError(403, 'license_inactive', 'POST', '/v1/quotas/downloads/consume', { headers: dead });
  await expectError(401, 'license_invalid', 'POST', '/v1/quotas/downloads/consume', { headers: forged });
  await expectError(401, 'unauthorized', 'POST', '/v1/quotas/downloads/consume', { json: { subject: 'user-1' } });
  await expect(200, 'POST', '/v1/quotas/downloads/consume', { headers: KEY, json: { subject: 'user-1' } });
  await expectError(400, 'invalid_request', 'POST', '/v1/quotas/downloads/consume', { json: { subjekt: 'user-1' } });
  await expectError(404, 'quota_not_found', 'POST', '/v1/quotas/nope/consume');
  await expectError(413, 'request_too_large', 'POST', '/v1/quotas/downloads/consume', { json: { subject: 'x'.repeat(2000) } });
  await expectError(415, 'unsupported_media_type', 'POST', '/v1/quotas/downloads/consume',
    { headers: { 'Content-Type': 'text/plain' }, body: 'user-1' });
  await expectError(431, 'header_too_large', 'POST', '/v1/quotas/downloads/consume',
    { headers: { 'X-License-Key': 'plk_' + 'a'.repeat(300) } });

  await expect(200, 'GET', '/v1/quotas/downloads?subject=user-1', { headers: KEY });
  assert.equal((await expect(200, 'GET', '/v1/quotas/downloads', { headers: live })).body.licensed, true);
  await expectError(400, 'invalid_request', 'GET', '/v1/quotas/downloads?subject=%20x', { headers: KEY });
  await expectError(401, 'unauthorized', 'GET', '/v1/quotas/downloads?subject=user-1');
  await expectError(404, 'quota_not_found', 'GET', '/v1/quotas/nope');

  assert.equal((await expect(200, 'GET', `/v1/licenses/${licenseKey('sub_live')}`)).body.valid, true);
  assert.equal((await expect(200, 'GET', `/v1/licenses/${licenseKey('sub_dead')}`)).body.valid, false);
  await expectError(404, 'license_not_found', 'GET', `/v1/licenses/plk_${'f'.repeat(64)}`);
  assert.equal((await expect(200, 'GET', '/v1/license', { headers: live })).body.status, 'active');
  await expectError(401, 'license_missing', 'GET', '/v1/license');
  await expectError(404, 'license_not_found', 'GET', '/v1/license', { headers: forged });
  await expectError(400, 'invalid_request', 'GET', '/v1/license',
    { headers: { ...live, Authorization: `License ${licenseKey('sub_dead')}` } });
});

test('credit holds', async () => {
  const topUp = (amount, key, extra = {}) => ({
    headers: { ...KEY, 'Idempotency-Key': key, ...extra }, json: { amount },
  });
  await expect(200, 'POST', '/v1/accounts/acct-1/credits', topUp(100, 'k1'));
  const replay = await expect(200, 'POST', '/v1/accounts/acct-1/credits', topUp(100, 'k1'));
  assert.equal(replay.headers.get('idempotent-replayed'), 'true');
  await expectError(422, 'idempotency_key_reused', 'POST', '/v1/accounts/acct-1/credits', topUp(5, 'k1'));
  await expectError(400, 'idempotency_key_required', 'POST', '/v1/accounts/acct-1/credits', { headers: KEY, json: { amount: 5 } });
  await expectError(415, 'unsupported_media_type', 'POST', '/v1/accounts/acct-1/credits',
    { headers: { ...KEY, 'Idempotency-Key': 'k2', 'Content-Type': 'text/plain' }, body: '5' });
  await expectError(401, 'unauthorized', 'POST', '/v1/accounts/acct-1/credits', { headers: { 'Idempotency-Key': 'k3' }, json: { amount: 5 } });

  assert.equal((await expect(200, 'GET', '/v1/accounts/acct-1', { headers: KEY })).body.balance, 100);
  await expectError(404, 'account_not_found', 'GET', '/v1/accounts/nosuch', { headers: KEY });
  await expectError(401, 'unauthorized', 'GET', '/v1/accounts/acct-1');

  const hold = (amount, headers = KEY) => ({ headers, json: { amount, ttl_seconds: 60 } });
  const one = await expect(201, 'POST', '/v1/accounts/acct-1/holds', hold(10));
  const two = await expect(201, 'POST', '/v1/accounts/acct-1/holds', hold(20));
  await expectError(409, 'insufficient_credits', 'POST', '/v1/accounts/acct-1/holds', hold(1000));
  await expectError(404, 'account_not_found', 'POST', '/v1/accounts/nosuch/holds', hold(1));
  await expectError(400, 'invalid_request', 'POST', '/v1/accounts/acct-1/holds', hold(-1));
  await expectError(415, 'unsupported_media_type', 'POST', '/v1/accounts/acct-1/holds',
    { headers: { ...KEY, 'Content-Type': 'text/plain' }, body: '1' });
  await expectError(401, 'unauthorized', 'POST', '/v1/accounts/acct-1/holds', hold(1, {}));

  const h1 = one.body.hold_id;
  const h2 = two.body.hold_id;
  assert.equal((await expect(200, 'GET', `/v1/holds/${h1}`, { headers: KEY })).body.state, 'held');
  await expectError(404, 'hold_not_found', 'GET', '/v1/holds/nosuch', { headers: KEY });
  await expectError(401, 'unauthorized', 'GET', `/v1/holds/${h1}`);
  await expect(200, 'POST', `/v1/holds/${h1}/commit`, { headers: KEY });
  await expect(200, 'POST', `/v1/holds/${h2}/release`, { headers: KEY });
  await expectError(409, 'hold_released', 'POST', `/v1/holds/${h2}/commit`, { headers: KEY });
  await expectError(409, 'hold_committed', 'POST', `/v1/holds/${h1}/release`, { headers: KEY });
  await expectError(404, 'hold_not_found', 'POST', '/v1/holds/nosuch/commit', { headers: KEY });
  await expectError(404, 'hold_not_found', 'POST', '/v1/holds/nosuch/release', { headers: KEY });
  await expectError(401, 'unauthorized', 'POST', `/v1/holds/${h1}/commit`);
  await expectError(401, 'unauthorized', 'POST', `/v1/holds/${h1}/release`);
});

test('rate limits', async () => {
  const take = (key, json) => call('POST', `/v1/ratelimits/${key}/take`, { headers: KEY, json });
  assert.equal((await take('api:u1', {})).body.remaining, 2);
  assert.equal((await take('api:u1', { cost: 3 })).status, 429);
  assert.equal((await take('api:u1', { cost: 10 })).status, 422);
  assert.equal((await take('nobucket:u1', {})).body.code, 'unknown_bucket');
  await expectError(401, 'unauthorized', 'POST', '/v1/ratelimits/api:u1/take', { json: {} });
});

test('leases', async () => {
  const granted = await expect(200, 'POST', '/v1/leases/job-1', { headers: KEY, json: { holder: 'w1', ttl_seconds: 60 } });
  const { token } = granted.body;
  await expectError(409, 'lease_held', 'POST', '/v1/leases/job-1', { headers: KEY, json: { holder: 'w2', ttl_seconds: 60 } });
  await expectError(400, 'invalid_request', 'POST', '/v1/leases/job-1', { headers: KEY, json: {} });
  await expectError(415, 'unsupported_media_type', 'POST', '/v1/leases/job-1',
    { headers: { ...KEY, 'Content-Type': 'text/plain' }, body: 'w1' });
  await expectError(401, 'unauthorized', 'POST', '/v1/leases/job-1', { json: { holder: 'w1', ttl_seconds: 60 } });

  assert.equal((await expect(200, 'GET', '/v1/leases/job-1', { headers: KEY })).body.live, true);
  await expectError(404, 'lease_not_found', 'GET', '/v1/leases/nosuch', { headers: KEY });
  await expectError(401, 'unauthorized', 'GET', '/v1/leases/job-1');

  const renew = (body, headers = KEY) => ({ headers, json: body });
  await expect(200, 'POST', '/v1/leases/job-1/renew', renew({ holder: 'w1', token, ttl_seconds: 90 }));
  await expectError(409, 'lease_lost', 'POST', '/v1/leases/job-1/renew', renew({ holder: 'w1', token: token + 1, ttl_seconds: 90 }));
  await expectError(404, 'lease_not_found', 'POST', '/v1/leases/nosuch/renew', renew({ holder: 'w1', token: 1, ttl_seconds: 90 }));
  await expectError(400, 'invalid_request', 'POST', '/v1/leases/job-1/renew', renew({ holder: 'w1' }));
  await expectError(415, 'unsupported_media_type', 'POST', '/v1/leases/job-1/renew',
    { headers: { ...KEY, 'Content-Type': 'text/plain' }, body: 'w1' });
  await expectError(401, 'unauthorized', 'POST', '/v1/leases/job-1/renew', renew({ holder: 'w1', token, ttl_seconds: 90 }, {}));

  await expectError(409, 'lease_lost', 'DELETE', `/v1/leases/job-1?holder=w1&token=${token + 1}`, { headers: KEY });
  await expectError(400, 'invalid_request', 'DELETE', '/v1/leases/job-1', { headers: KEY });
  await expectError(404, 'lease_not_found', 'DELETE', '/v1/leases/nosuch?holder=w1&token=1', { headers: KEY });
  await expectError(401, 'unauthorized', 'DELETE', `/v1/leases/job-1?holder=w1&token=${token}`);
  const released = await expect(200, 'DELETE', `/v1/leases/job-1?holder=w1&token=${token}`, { headers: KEY });
  assert.equal(released.body.released, true);
  const again = await expect(200, 'DELETE', `/v1/leases/job-1?holder=w1&token=${token}`, { headers: KEY });
  assert.equal(again.headers.get('idempotent-replayed'), 'true');
});

/**
 * One acting POST with an Idempotency-Key, every way the key can answer: the
 * first answer (`status`), its replay, another request with the key (`other`:
 * {pathname, json}) 422, the key's claim still running 409 (the row set back
 * to in progress, as a twin on another gateway would hold it), and a bad key 400.
 */
async function idempotent(status, pathname, json, other) {
  const key = `openapi-${crypto.randomUUID()}`;
  const withKey = (body, k = key) => ({ headers: { ...KEY, 'Idempotency-Key': k }, json: body });
  const first = await expect(status, 'POST', pathname, withKey(json));
  assert.equal(first.headers.get('idempotent-replayed'), null, `${pathname}: the first answer acts`);
  const again = await expect(status, 'POST', pathname, withKey(json));
  assert.equal(again.headers.get('idempotent-replayed'), 'true', `${pathname}: replayed`);
  assert.deepEqual(again.body, first.body, `${pathname}: the replay is the first answer`);
  await expectError(422, 'idempotency_key_reused', 'POST', other.pathname ?? pathname,
    withKey(other.json ?? json));
  await psql(db.url, `UPDATE idempotency_keys SET state = 'in_progress', status = NULL, body = NULL,
    location = NULL, finished_at = NULL, locked_until = now() + interval '1 hour' WHERE key = '${key}'`);
  const busy = await expectError(409, 'idempotency_key_in_use', 'POST', pathname, withKey(json));
  assert.ok(Number(busy.headers.get('retry-after')) >= 1, `${pathname}: Retry-After`);
  await expectError(400, 'invalid_request', 'POST', pathname, withKey(json, 'k'.repeat(256)));
  return first.body;
}

test('Idempotency-Key on every acting server POST', async () => {
  await idempotent(201, '/v1/reservations', { paintings: ['p6'], buyer: 'order-i' },
    { json: { paintings: ['p7'], buyer: 'order-i' } });
  const hold = await idempotent(201, '/v1/accounts/acct-1/holds', { amount: 1, ttl_seconds: 60 },
    { json: { amount: 2, ttl_seconds: 60 } });
  await idempotent(200, `/v1/holds/${hold.hold_id}/commit`, undefined,
    { pathname: '/v1/holds/h_other/commit' });
  const second = await expect(201, 'POST', '/v1/accounts/acct-1/holds',
    { headers: KEY, json: { amount: 1, ttl_seconds: 60 } });
  await idempotent(200, `/v1/holds/${second.body.hold_id}/release`, undefined,
    { pathname: '/v1/holds/h_other/release' });
  await idempotent(200, '/v1/ratelimits/api:idem/take', {}, { json: { cost: 2 } });
  const lease = await idempotent(200, '/v1/leases/job-idem', { holder: 'w1', ttl_seconds: 60 },
    { json: { holder: 'w2', ttl_seconds: 60 } });
  await idempotent(200, '/v1/leases/job-idem/renew',
    { holder: 'w1', token: lease.token, ttl_seconds: 90 },
    { json: { holder: 'w1', token: lease.token, ttl_seconds: 30 } });
  await idempotent(200, '/v1/quotas/downloads/consume', { subject: 'user-idem' },
    { json: { subject: 'user-other' } });
});

// Last: what the tests above produced covers the document.
test('every documented operation and status was exercised', () => {
  const never = [...documentedPairs].filter((pair) => !exercised.has(pair));
  assert.deepEqual(never, [], 'documented but never produced by a real request');
  assert.ok(exercised.size >= 100, `${exercised.size} operation/status pairs exercised`);
});
