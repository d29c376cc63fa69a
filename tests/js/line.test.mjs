// The waiting line in a real browser (headless Debian Chromium via
// playwright-core), on the demo shop: buyer A is on the Stripe page with a
// painting; buyer B, in a second window, finds it reserved, joins its line
// and sees "number 1"; buyer C joins behind B and sees "number 2"; when A's
// hold lapses B's page says "Your turn — buy within …" with the button back,
// C's still says "number 2"; B buys and pays; C is told the line is closed.
//
// As in storefront.test.mjs the shop is served from its own origin, so CORS
// (the line's POST, GET with a custom header, DELETE) is real. All three
// windows come from 127.0.0.1, one visitor to the gateway, so the per-visitor
// limit is raised. A's hold is made to lapse by moving its held_until into
// the past (nothing but the clock's verdict changes) and telling the
// gateways' listeners to re-read the painting, as a lapse re-read would.
// Every wait is for a selector, a URL or a database state; no sleeps.
// Screenshots: $PAINTLOCK_BUILD_DIR/screenshots/line-*.png.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import {
  eventually,
  launchChromium,
  openBuyers,
  psql,
  screenshotDir,
  startDemoShop,
} from './support.mjs';

const TIMEOUT = 30_000;
const PAINTING = 'p7'; // Night Tram

const button = (page) => page.locator(`button[data-paintlock-painting="${PAINTING}"]`);
const status = (page) => page.locator(`#status-${PAINTING}`);

async function shoot(page, name) {
  fs.mkdirSync(screenshotDir, { recursive: true });
  await page.screenshot({ path: path.join(screenshotDir, `line-${name}.png`), fullPage: true });
}

test('a second window joins the line, watches its place, and buys when its turn comes', {
  timeout: 240_000,
}, async (t) => {
  const { db, stripe, shop } = await startDemoShop(t, {
    PAINTLOCK_LINE_PER_VISITOR: '3',
    PAINTLOCK_LINE_CLAIM_SECONDS: '120',
  });
  const browser = await launchChromium();
  t.after(() => browser.close());
  const windows = await openBuyers(t, browser, ['a', 'b', 'c'], TIMEOUT);
  const { a, b, c } = windows;

  // A buys and sits on the Stripe page without paying.
  await a.goto(`${shop.url}/`);
  await a.waitForSelector(`button[data-paintlock-painting="${PAINTING}"][data-paintlock-state="available"]`);
  await button(a).click();
  await a.waitForURL((url) => url.href.startsWith(`${stripe.url}/pay/cs_`));

  // B finds it reserved and joins the line.
  await b.goto(`${shop.url}/`);
  await b.waitForSelector(`button[data-paintlock-painting="${PAINTING}"][data-paintlock-state="reserved"]`);
  await status(b).getByRole('button', { name: 'Join the line' }).click();
  await status(b).getByText('You are number 1 in line').waitFor();
  assert.equal(await button(b).isDisabled(), true);
  assert.equal(await button(b).getAttribute('data-paintlock-line'), 'waiting');
  await shoot(b, '1-second-window-joins');

  // C joins behind B; B's page learns the line grew, C's says number 2.
  await c.goto(`${shop.url}/`);
  await c.waitForSelector(`button[data-paintlock-painting="${PAINTING}"][data-paintlock-state="reserved"]`);
  await status(c).getByRole('button', { name: 'Join the line' }).click();
  await status(c).getByText('You are number 2 in line').waitFor();
  await shoot(c, '2-third-window-is-number-2');
  assert.equal(await psql(db.url, `SELECT count(*) FROM line_entries WHERE state = 'waiting'`), '2');

  // A's hold lapses.
  await psql(db.url, `UPDATE painting_locks SET held_until = now() - interval '1 second' ` +
                     `WHERE painting_id = '${PAINTING}'`);
  await psql(db.url, `SELECT pg_notify('paintlock_availability', '${PAINTING}')`);

  // B's turn: the button is back, with a countdown of its window.
  await b.waitForSelector(`button[data-paintlock-painting="${PAINTING}"][data-paintlock-line="your_turn"]`);
  await status(b).getByText('Your turn — buy within').waitFor();
  const left = await status(b).locator('.paintlock-countdown').textContent();
  assert.match(left, /^[12]:\d\d$/);
  assert.equal(await button(b).isEnabled(), true);
  assert.equal((await button(b).textContent()).trim(), 'Buy now');
  await status(c).getByText('You are number 2 in line').waitFor();
  assert.equal(await button(c).isDisabled(), true);
  await shoot(b, '3-your-turn');

  // B buys: A's session is expired at Stripe first, B is on the Stripe page.
  await button(b).click();
  await b.waitForURL((url) => url.href.startsWith(`${stripe.url}/pay/cs_`));
  await eventually(async () => (await psql(db.url,
    `SELECT state FROM line_entries ORDER BY id LIMIT 1`)) === 'claimed', { timeoutMs: TIMEOUT });
  await b.getByRole('button', { name: 'Pay' }).click();
  await b.waitForURL((url) => url.href.startsWith(`${shop.url}/success.html?session_id=cs_`));
  await b.getByText('Night Tram is yours.').waitFor();
  await shoot(b, '4-bought-on-its-turn');

  // C is told, live, that the line closed with the sale.
  await c.waitForSelector(`button[data-paintlock-painting="${PAINTING}"][data-paintlock-state="sold"]`);
  await status(c).getByText('The line is closed: the painting was sold.').waitFor();
  await shoot(c, '5-line-closed');
  assert.equal(await psql(db.url,
    `SELECT string_agg(state, ',' ORDER BY id) FROM line_entries`), 'claimed,closed');
});
