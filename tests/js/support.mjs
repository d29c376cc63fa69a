// Helpers for the Node tests: start the fake Stripe binary on a free port,
// drive its /_test/ controls, and receive its webhooks.
//
// The binary is ${PAINTLOCK_BUILD_DIR}/fake-stripe (CMake sets the variable;
// the default is the repository's build/ folder). Every helper binds port 0,
// so tests can run in parallel.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const here = path.dirname(fileURLToPath(import.meta.url));

export const buildDir = process.env.PAINTLOCK_BUILD_DIR
  ? path.resolve(process.env.PAINTLOCK_BUILD_DIR)
  : path.resolve(here, '../../build');

export const fakeStripeBinary = path.join(buildDir, 'fake-stripe');

const START_TIMEOUT_MS = 10_000;
const STOP_TIMEOUT_MS = 5_000;

/**
 * Starts fake-stripe and waits for its `listening` log line.
 * Options: webhookUrl, webhookSecret, apiKey, publicUrl, webhookRetries, args (extra argv).
 * Returns {port, url, logs, control, stop()}; stop() sends SIGTERM and resolves
 * to the exit code (SIGKILL after 5 s, resolving to null).
 */
export async function startFakeStripe(options = {}) {
  // --exit-with-parent: if this runner dies before stop(), the fake goes too.
  const args = ['--listen', '127.0.0.1:0', '--exit-with-parent'];
  if (options.webhookUrl) args.push('--webhook-url', options.webhookUrl);
  if (options.webhookSecret) args.push('--webhook-secret', options.webhookSecret);
  if (options.apiKey) args.push('--api-key', options.apiKey);
  if (options.publicUrl) args.push('--public-url', options.publicUrl);
  if (options.webhookRetries !== undefined) {
    args.push('--webhook-retries', String(options.webhookRetries));
  }
  args.push(...(options.args ?? []));

  const child = spawn(fakeStripeBinary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const logs = []; // every stdout line, parsed when it is JSON
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise((resolve) => {
    child.on('exit', (code, signal) => resolve({ code, signal }));
  });

  const listening = new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`fake-stripe did not log "listening" within ${START_TIMEOUT_MS} ms`));
    }, START_TIMEOUT_MS);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`cannot run ${fakeStripeBinary}: ${err.message}`));
    });
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`fake-stripe exited early (code ${code}, signal ${signal}): ${stderr}`));
    });
    readline.createInterface({ input: child.stdout }).on('line', (line) => {
      let entry;
      try {
        entry = JSON.parse(line);
      } catch {
        logs.push(line);
        return;
      }
      logs.push(entry);
      if (entry.event === 'listening') {
        clearTimeout(timer);
        resolve(entry);
      }
    });
  });

  let line;
  try {
    line = await listening;
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  const url = `http://127.0.0.1:${line.port}`;
  return {
    port: line.port,
    url,
    logs,
    control: testControls(url),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
      const { code } = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** The fake's /_test/ API (see fixtures/fake_stripe/server.h). */
export function testControls(baseUrl) {
  async function call(method, pathname, body) {
    const response = await fetch(baseUrl + pathname, {
      method,
      headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = await response.json();
    if (!response.ok) {
      const err = new Error(`${method} ${pathname} → ${response.status}: ${JSON.stringify(json)}`);
      err.status = response.status;
      err.body = json;
      throw err;
    }
    return json;
  }
  return {
    pay: (id, paymentStatus = 'paid', extra = {}) =>
      call('POST', `/_test/sessions/${id}/pay`, { payment_status: paymentStatus, ...extra }),
    asyncPayment: (id, outcome) =>
      call('POST', `/_test/sessions/${id}/async_payment`, { outcome }),
    expire: (id) => call('POST', `/_test/sessions/${id}/expire`),
    refund: (id, body = {}) => call('POST', `/_test/sessions/${id}/refund`, body),
    dispute: (id, body = {}) => call('POST', `/_test/sessions/${id}/dispute`, body),
    closeDispute: (id, status) => call('POST', `/_test/disputes/${id}/close`, { status }),
    faults: (rule) => call('POST', '/_test/faults', rule),
    clearFaults: () => call('POST', '/_test/faults/clear'),
    webhooks: (settings) => call('POST', '/_test/webhooks', settings),
    events: () => call('GET', '/_test/events'),
    deliver: (eventId) => call('POST', `/_test/events/${eventId}/deliver`),
    sessions: () => call('GET', '/_test/sessions'),
    requests: () => call('GET', '/_test/requests'),
    refunds: () => call('GET', '/_test/refunds'),
    reset: () => call('POST', '/_test/reset'),
  };
}

/**
 * A webhook endpoint on a free port that records every request: {method, url,
 * headers, rawBody (Buffer), body (string)}. `status` is the HTTP status to
 * answer, or a function (request, index) → status.
 */
export async function startWebhookReceiver({ status = 200 } = {}) {
  const received = [];
  const listeners = new Set();
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks);
      const entry = {
        method: req.method,
        url: req.url,
        headers: req.headers,
        rawBody,
        body: rawBody.toString('utf8'),
      };
      received.push(entry);
      const code = typeof status === 'function' ? status(entry, received.length - 1) : status;
      res.writeHead(code, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ received: code >= 200 && code < 300 }));
      for (const listener of [...listeners]) listener();
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();

  return {
    url: `http://127.0.0.1:${port}/v1/webhooks/stripe`,
    received,
    /** Resolves with the first `count` requests matching `predicate`. */
    async waitFor(predicate, { count = 1, timeoutMs = 5_000 } = {}) {
      const matching = () => received.filter((r) => predicate(r));
      if (matching().length >= count) return matching();
      return new Promise((resolve, reject) => {
        const listener = () => {
          if (matching().length >= count) {
            clearTimeout(timer);
            listeners.delete(listener);
            resolve(matching());
          }
        };
        const timer = setTimeout(() => {
          listeners.delete(listener);
          reject(new Error(`webhook receiver: ${matching().length}/${count} matching requests ` +
                           `after ${timeoutMs} ms (${received.length} received)`));
        }, timeoutMs);
        listeners.add(listener);
      });
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** The parsed event of a received webhook request. */
export function eventOf(request) {
  return JSON.parse(request.body);
}

/** Polls `probe` (async) until it returns a truthy value. */
export async function eventually(probe, { timeoutMs = 5_000, intervalMs = 20 } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

// ---- Issue 5: a database, a gateway, a static storefront and Chromium -------
//
// For end-to-end and browser tests. The database comes from the private
// cluster `make test` starts (PAINTLOCK_TEST_ADMIN_URL); binaries from
// PAINTLOCK_BUILD_DIR; every process logs to $PAINTLOCK_BUILD_DIR/test-logs.

const run = promisify(execFile);

export const sourceDir = path.resolve(here, '../..');
export const storefrontDir = path.join(sourceDir, 'fixtures/storefront');
export const catalogFile = path.join(sourceDir, 'fixtures/catalog.json');
export const testLogDir = path.join(buildDir, 'test-logs');
export const screenshotDir = path.join(buildDir, 'screenshots');

export const GATEWAY_API_KEY = 'js-test-api-key-0123456789';
export const STRIPE_TEST_KEY = 'sk_test_paintlock_js';
export const STRIPE_WEBHOOK_SECRET = 'whsec_paintlock_js_storefront';

function adminUrl() {
  const url = process.env.PAINTLOCK_TEST_ADMIN_URL;
  if (!url) throw new Error('PAINTLOCK_TEST_ADMIN_URL is not set: run the tests with `make test`');
  return url;
}

// "postgresql:///postgres?host=…" → the same URL for database `name`.
function withDatabase(admin, name) {
  const m = /^(postgres(?:ql)?:\/\/[^/]*\/)([^?]*)(.*)$/.exec(admin);
  return m ? m[1] + name + m[3] : `${admin} dbname=${name}`;
}

/** Runs one SQL statement with psql; resolves to its unaligned output, trimmed. */
export async function psql(url, sql, { appName } = {}) {
  const env = { ...process.env, ...(appName ? { PGAPPNAME: appName } : {}) };
  const { stdout } = await run('psql', ['-X', '-Atq', '-v', 'ON_ERROR_STOP=1', url, '-c', sql], { env });
  return stdout.trim();
}

/**
 * A fresh database migrated with `paintlockctl migrate` and holding the sample
 * catalogue (fixtures/catalog.json). Returns {name, url, drop()}.
 */
export async function createDatabase() {
  const admin = adminUrl();
  const name = `t_js_${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
  await psql(admin, `CREATE DATABASE ${name}`);
  const url = withDatabase(admin, name);
  const ctl = path.join(buildDir, 'paintlockctl');
  const env = { ...process.env, DATABASE_URL: url };
  await run(ctl, ['migrate'], { env });
  await run(ctl, ['catalog', 'import', catalogFile], { env });
  return {
    name,
    url,
    async drop() {
      await psql(admin, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {});
    },
  };
}

/** A loopback port nobody listens on right now. */
export async function freePort() {
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Starts ${PAINTLOCK_BUILD_DIR}/paintlock on `port` (default: a free one)
 * against `databaseUrl` and the Stripe at `stripeUrl`, with the settings the
 * C++ harness uses (tests/support/harness.cc, Gateway) plus `env`. Resolves
 * once it logs "listening": {port, url, logPath, stop()}.
 */
export async function startGateway({ databaseUrl, stripeUrl, port, env = {} }) {
  if (port !== undefined) return startGatewayOn({ databaseUrl, stripeUrl, port, env });
  // A free port can be taken by a test running alongside before the gateway
  // binds it: then the gateway exits at once saying so, and another is tried.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startGatewayOn({ databaseUrl, stripeUrl, port: await freePort(), env });
    } catch (e) {
      if (attempt >= 3 || !(e instanceof PortTaken)) throw e;
    }
  }
}

class PortTaken extends Error {}

async function startGatewayOn({ databaseUrl, stripeUrl, port, env }) {
  fs.mkdirSync(testLogDir, { recursive: true });
  const logPath = path.join(testLogDir, `gateway-js-${process.pid}-${port}.log`);
  const log = fs.createWriteStream(logPath);
  const child = spawn(path.join(buildDir, 'paintlock'), [], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      PAINTLOCK_LISTEN: `127.0.0.1:${port}`,
      STRIPE_SECRET_KEY: STRIPE_TEST_KEY,
      STRIPE_API_BASE: stripeUrl,
      STRIPE_WEBHOOK_SECRET,
      PAINTLOCK_API_KEY: GATEWAY_API_KEY,
      PAINTLOCK_HTTP_THREADS: '32',
      PAINTLOCK_DB_POOL: '8',
      STRIPE_TIMEOUT_MS: '2000',
      // Outcomes, not latency: a commit stalled on a busy CI disk must not turn
      // requests queued on its row into 503s (the harness says more).
      PAINTLOCK_DB_LOCK_TIMEOUT_MS: '20000',
      PAINTLOCK_DB_STATEMENT_TIMEOUT_MS: '30000',
      ...env,
    },
  });
  child.stderr.pipe(log, { end: false });
  // What it says on stderr before listening (a start-up error), bounded.
  let startupErrors = '';
  child.stderr.on('data', (d) => {
    if (startupErrors.length < 64 * 1024) startupErrors += d;
  });
  const closed = new Promise((resolve) => child.on('close', resolve));
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const listening = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`paintlock did not listen within 20 s; log: ${logPath}`)), 20_000);
    exited.then(({ code }) => {
      clearTimeout(timer);
      const text = `paintlock exited early (code ${code}); log: ${logPath}`;
      closed.then(() => {
        const taken = startupErrors.includes(`cannot listen on 127.0.0.1:${port}`);
        reject(taken ? new PortTaken(text) : new Error(text));
      });
    });
    readline.createInterface({ input: child.stdout }).on('line', (line) => {
      log.write(line + '\n');
      if (line.includes('"event":"listening"')) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  try {
    await listening;
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    logPath,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
        await exited;
        clearTimeout(timer);
      }
      log.end();
      return child.exitCode;
    },
  };
}

const CONTENT_TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

/**
 * Serves the files of `dir` on a free loopback port: another origin than the
 * gateway's, as a shop embedding paintlock would be. `rewriteHtml(text)`
 * changes every HTML file on the way out. Resolves to {url, close()}.
 */
export async function startStaticServer(dir, { rewriteHtml = (text) => text } = {}) {
  const server = http.createServer((req, res) => {
    let pathname = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    if (pathname.endsWith('/')) pathname += 'index.html';
    const file = path.join(dir, path.normalize(pathname));
    if (!file.startsWith(dir + path.sep) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
      res.writeHead(404, { 'Content-Type': 'text/plain' });
      res.end('not found');
      return;
    }
    const ext = path.extname(file);
    let body = fs.readFileSync(file);
    if (ext === '.html') body = Buffer.from(rewriteHtml(body.toString('utf8')));
    res.writeHead(200, { 'Content-Type': CONTENT_TYPES[ext] ?? 'application/octet-stream', 'Cache-Control': 'no-store' });
    res.end(body);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * Debian's Chromium (fixtures/deps.sh installs it), headless, driven by
 * playwright-core, which never downloads a browser. launch() gives every run
 * a fresh temporary user-data dir and deletes it on close(); each
 * browser.newContext() is an independent, incognito-like buyer.
 */
export async function launchChromium() {
  const { chromium } = await import('playwright-core');
  const executablePath = process.env.PAINTLOCK_CHROMIUM ?? '/usr/bin/chromium';
  if (!fs.existsSync(executablePath)) {
    throw new Error(`${executablePath} is missing: run fixtures/deps.sh (it installs Debian's chromium)`);
  }
  return chromium.launch({
    executablePath,
    headless: true,
    args: ['--no-sandbox', '--headless', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/**
 * Holds painting `id`'s lock row in an open transaction (psql on stdin), so
 * checkouts for it queue behind us: a test can have several in flight before
 * any is decided. release() rolls back and lets them race.
 */
export async function holdPaintingLock(databaseUrl, id) {
  const appName = `paintlock-js-blocker-${process.pid}`;
  const child = spawn('psql', ['-X', '-q', '-v', 'ON_ERROR_STOP=1', databaseUrl], {
    stdio: ['pipe', 'ignore', 'inherit'],
    env: { ...process.env, PGAPPNAME: appName },
  });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  child.stdin.write(`BEGIN;\nSELECT 1 FROM painting_locks WHERE painting_id = '${id}' FOR UPDATE;\n`);
  await eventually(async () => (await psql(databaseUrl,
    `SELECT count(*) FROM pg_stat_activity WHERE application_name = '${appName}' ` +
    `AND state = 'idle in transaction'`)) === '1', { timeoutMs: 20_000, intervalMs: 50 });
  return {
    async release() {
      child.stdin.end('ROLLBACK;\n');
      await exited;
    },
  };
}

/** Resolves once `count` gateway sessions wait for a row lock. */
export async function waitForLockWaiters(databaseUrl, count) {
  await eventually(async () => Number(await psql(databaseUrl,
    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() " +
    "AND application_name = 'paintlock' AND wait_event_type = 'Lock'")) >= count,
  { timeoutMs: 30_000, intervalMs: 50 });
}

/**
 * The demo shop as a shop that embeds paintlock runs it, for browser tests: a
 * fresh database, the shop's pages on their own origin (their script tag
 * pointed at the gateway), the fake Stripe delivering webhooks to a gateway
 * that allows the shop's origin, with `env` added. Everything is stopped when
 * test `t` ends. Resolves to {db, shop, stripe, gateway, gatewayUrl}.
 */
export async function startDemoShop(t, env = {}) {
  const db = await createDatabase();
  t.after(() => db.drop());
  const gatewayPort = await freePort();
  const gatewayUrl = `http://127.0.0.1:${gatewayPort}`;
  const shop = await startStaticServer(storefrontDir, {
    // What a shop does to embed paintlock: point the script tag at the gateway.
    rewriteHtml: (html) => html.replaceAll('src="/paintlock.js"', `src="${gatewayUrl}/paintlock.js"`),
  });
  t.after(() => shop.close());
  const stripe = await startFakeStripe({
    webhookUrl: `${gatewayUrl}/v1/webhooks/stripe`,
    webhookSecret: STRIPE_WEBHOOK_SECRET,
  });
  t.after(() => stripe.stop());
  const gateway = await startGateway({
    port: gatewayPort,
    databaseUrl: db.url,
    stripeUrl: stripe.url,
    env: {
      PAINTLOCK_ALLOWED_ORIGINS: shop.url,
      PAINTLOCK_SUCCESS_URL: `${shop.url}/success.html?session_id={CHECKOUT_SESSION_ID}`,
      PAINTLOCK_CANCEL_URL: `${shop.url}/cancel.html`,
      ...env,
    },
  });
  t.after(() => gateway.stop());
  return { db, shop, stripe, gateway, gatewayUrl };
}

/**
 * One page per name, each in its own browser context (an independent buyer:
 * en-GB, UTC, 1280x900), failing test `t` at its end if any page had a
 * script error. Resolves to {name: page}.
 */
export async function openBuyers(t, browser, names, timeoutMs) {
  const pages = {};
  for (const name of names) {
    const context = await browser.newContext({
      locale: 'en-GB', timezoneId: 'UTC', viewport: { width: 1280, height: 900 },
    });
    const page = await context.newPage();
    page.setDefaultTimeout(timeoutMs);
    const errors = [];
    page.on('pageerror', (err) => errors.push(err.message));
    t.after(() => assert.deepEqual(errors, [], `${name}: no script errors on the page`));
    pages[name] = page;
  }
  return pages;
}
