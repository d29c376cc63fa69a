// The demo shop in a real browser (headless Debian Chromium via
// playwright-core): two buyers press "Buy" on the same painting; exactly one
// reaches the (fake) Stripe page, the other is told when it will be free
// again; the first pays; both pages show "sold" without a reload; a third
// painting stays available throughout.
//
// The shop is served by a static server on its own origin, as a shop that
// embeds paintlock would be: the pages load /paintlock.js from the gateway's
// origin, which lists the shop in PAINTLOCK_ALLOWED_ORIGINS, so CORS, the
// preflighted JSON checkout and the cross-origin event stream are all real.
// Screenshots go to $PAINTLOCK_BUILD_DIR/screenshots/. Every wait is for a
// selector, a URL, a request or a database state; no sleeps.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

import {
  holdPaintingLock,
  launchChromium,
  openBuyers,
  psql,
  screenshotDir,
  startDemoShop,
  waitForLockWaiters,
} from './support.mjs';

const TIMEOUT = 30_000; // generous: ctest runs two tests at once on two cores
const CONTESTED = 'p7'; // Night Tram
const BYSTANDER = 'p3'; // Orchard in November

const button = (page, id) => page.locator(`button[data-paintlock-painting="${id}"]`);
const inState = (id, state) => `button[data-paintlock-painting="${id}"][data-paintlock-state="${state}"]`;

async function shoot(page, name) {
  fs.mkdirSync(screenshotDir, { recursive: true });
  await page.screenshot({ path: path.join(screenshotDir, `storefront-${name}.png`), fullPage: true });
}

// "2026-12-02T14:05:09Z" → "14:06": what paintlock.js shows in en-GB, UTC
// (rounded up to the minute, so a buyer never comes back too early).
function clockOf(iso) {
  const at = new Date(Math.ceil(Date.parse(iso) / 60_000) * 60_000);
  return at.toISOString().slice(11, 16);
}

test('two buyers, one painting: one pays, the other is told when it is free; both see it sold', {
  timeout: 240_000,
}, async (t) => {
  const { db, stripe, shop, gatewayUrl } = await startDemoShop(t, {
    // Both checkouts wait behind the test's row lock until it lets go:
    // they must not give up first.
    PAINTLOCK_DB_LOCK_TIMEOUT_MS: '30000',
    PAINTLOCK_DB_STATEMENT_TIMEOUT_MS: '40000',
  });

  const browser = await launchChromium();
  t.after(() => browser.close());
  const pages = await openBuyers(t, browser, ['a', 'b'], TIMEOUT);
  const buyers = Object.entries(pages).map(([name, page]) => ({ name, page }));

  // Both open the gallery and see live states: everything available.
  for (const { page } of buyers) {
    await page.goto(`${shop.url}/`);
    await page.waitForSelector(inState(CONTESTED, 'available'));
    await page.waitForSelector(inState(BYSTANDER, 'available'));
    await page.waitForSelector(`${inState('p12', 'available')}`);
    assert.equal(await page.locator('.card').count(), 12);
    // Proof that nothing reloads later, and every state the bystander takes.
    await page.evaluate((id) => {
      window.notReloaded = true;
      window.bystanderStates = [];
      const el = document.querySelector(`button[data-paintlock-painting="${id}"]`);
      new MutationObserver(() => window.bystanderStates.push(el.getAttribute('data-paintlock-state')))
        .observe(el, { attributes: true, attributeFilter: ['data-paintlock-state'] });
    }, BYSTANDER);
  }
  await shoot(buyers[0].page, '1-gallery');

  // Both press "Buy" on the same painting. The test holds the painting's lock
  // row first, so both requests are in flight before either is decided.
  const blocker = await holdPaintingLock(db.url, CONTESTED);
  const answers = buyers.map(({ page }) => page.waitForResponse(
    (r) => r.url() === `${gatewayUrl}/v1/checkout` && r.request().method() === 'POST'));
  await Promise.all(buyers.map(({ page }) => button(page, CONTESTED).click()));
  for (const { page } of buyers) await page.waitForSelector(inState(CONTESTED, 'pending'));
  await waitForLockWaiters(db.url, 2);
  await blocker.release();

  const responses = await Promise.all(answers);
  const statuses = responses.map((r) => r.status()).sort();
  assert.deepEqual(statuses, [201, 409], 'exactly one checkout wins');
  const winner = buyers[responses.findIndex((r) => r.status() === 201)];
  const loser = buyers[responses.findIndex((r) => r.status() === 409)];
  const conflict = await responses.find((r) => r.status() === 409).json();
  assert.equal(conflict.code, 'painting_reserved');
  assert.equal(conflict.painting, CONTESTED);

  // The winner is on the Stripe page; the loser is still in the shop.
  await winner.page.waitForURL((url) => url.href.startsWith(`${stripe.url}/pay/cs_`));
  await winner.page.getByRole('button', { name: 'Pay' }).waitFor();
  await shoot(winner.page, '2-winner-on-stripe');
  assert.equal((await stripe.control.sessions()).length, 1, 'one Stripe session, one buyer on it');
  assert.ok(loser.page.url().startsWith(shop.url), 'the loser never left the shop');

  // The loser is told when it will be free again, to the minute, counting down.
  const heldUntil = await psql(db.url,
    `SELECT paintlock_rfc3339(held_until) FROM painting_locks WHERE painting_id = '${CONTESTED}'`);
  assert.equal(conflict.free_at, heldUntil);
  const status = loser.page.locator(`#status-${CONTESTED}`);
  await loser.page.waitForSelector(inState(CONTESTED, 'reserved'));
  await status.getByText(`Being bought right now — free again at ${clockOf(heldUntil)}`).waitFor();
  assert.equal(await status.locator('time').getAttribute('datetime'), heldUntil);
  assert.equal(await button(loser.page, CONTESTED).isDisabled(), true);
  const countdown = await status.locator('.paintlock-countdown').textContent();
  assert.match(countdown, /^ \(\d+:\d\d\)$/);
  await loser.page.waitForFunction(
    ([selector, before]) => document.querySelector(selector).textContent !== before,
    [`#status-${CONTESTED} .paintlock-countdown`, countdown]);
  await shoot(loser.page, '3-loser-told-when-free');

  // The winner pays and lands on the shop's thank-you page.
  await winner.page.getByRole('button', { name: 'Pay' }).click();
  await winner.page.waitForURL((url) => url.href.startsWith(`${shop.url}/success.html?session_id=cs_`));
  await winner.page.waitForSelector(`#bought .card[data-painting="${CONTESTED}"][data-state="sold"]`);
  await winner.page.getByText('Night Tram is yours.').waitFor();
  await shoot(winner.page, '4-winner-thank-you');

  // The loser's page shows it sold, live.
  await loser.page.waitForSelector(inState(CONTESTED, 'sold'));
  assert.equal((await button(loser.page, CONTESTED).textContent()).trim(), 'Sold');
  await loser.page.waitForSelector(`.card[data-painting="${CONTESTED}"][data-state="sold"]`);
  assert.equal(await loser.page.evaluate(() => window.notReloaded), true, 'no reload');
  await shoot(loser.page, '5-loser-sees-sold');

  // The bystander painting stayed available on the page that stayed, and
  // in the database.
  assert.deepEqual(await loser.page.evaluate(() => window.bystanderStates), []);
  assert.equal(await loser.page.getAttribute(`button[data-paintlock-painting="${BYSTANDER}"]`,
    'data-paintlock-state'), 'available');
  assert.equal(await button(loser.page, BYSTANDER).isEnabled(), true);
  const bystander = await (await fetch(`${gatewayUrl}/v1/paintings/${BYSTANDER}`)).json();
  assert.equal(bystander.state, 'available');
  const sold = await (await fetch(`${gatewayUrl}/v1/paintings/${CONTESTED}`)).json();
  assert.equal(sold.state, 'sold');
});
