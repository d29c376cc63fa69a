// Helpers for the Node tests: start the fake Stripe binary on a free port,
// drive its /_test/ controls, and receive its webhooks.
//
// The binary is ${PAINTLOCK_BUILD_DIR}/fake-stripe (CMake sets the variable;
// the default is the repository's build/ folder). Every helper binds port 0,
// so tests can run in parallel.
import { spawn } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

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
