// The official `stripe` library (v23) against the fake Stripe: if the real
// client accepts the fake's answers, errors and webhook signatures, tests that
// use the fake exercise paintlock's Stripe code the way production does.
//
// Every test starts its own fake (and webhook receiver) on free ports and
// stops it, asserting that fake-stripe exits cleanly on SIGTERM.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import Stripe from 'stripe';

import { eventOf, eventually, startFakeStripe, startWebhookReceiver } from './support.mjs';

const API_KEY = 'sk_test_paintlock_js_0123456789';
const WEBHOOK_SECRET = 'whsec_paintlock_js_test_secret';

async function withFake(t, options = {}) {
  const fake = await startFakeStripe({ apiKey: API_KEY, ...options });
  t.after(async () => {
    assert.equal(await fake.stop(), 0, 'fake-stripe exits with 0 on SIGTERM');
  });
  return fake;
}

async function withReceiver(t, options) {
  const receiver = await startWebhookReceiver(options);
  t.after(() => receiver.close());
  return receiver;
}

function clientFor(fake, key = API_KEY, extra = {}) {
  return new Stripe(key, {
    host: '127.0.0.1',
    port: fake.port,
    protocol: 'http',
    maxNetworkRetries: 0,
    telemetry: false,
    ...extra,
  });
}

const nowSeconds = () => Math.floor(Date.now() / 1000);

function sessionParams(overrides = {}) {
  return {
    mode: 'payment',
    line_items: [
      {
        quantity: 1,
        price_data: { currency: 'eur', unit_amount: 125000, product_data: { name: 'Sunflowers' } },
      },
      {
        quantity: 1,
        price_data: { currency: 'eur', unit_amount: 4550, product_data: { name: 'Harbour & Sky' } },
      },
    ],
    success_url: 'http://shop.test/success?session_id={CHECKOUT_SESSION_ID}',
    cancel_url: 'http://shop.test/cancel',
    expires_at: nowSeconds() + 35 * 60,
    client_reference_id: 'res_0001',
    metadata: { reservation_id: 'res_0001', paintings: 'p1,p2' },
    ...overrides,
  };
}

async function rejectionOf(promise) {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  assert.fail('expected the call to be rejected');
}

test('creates a Checkout Session with the fields STRIPE.md lists', async (t) => {
  const fake = await withFake(t);
  const stripe = clientFor(fake);
  const params = sessionParams();
  const before = nowSeconds();

  const session = await stripe.checkout.sessions.create(params);

  assert.match(session.id, /^cs_test_[A-Za-z0-9]+$/);
  assert.equal(session.object, 'checkout.session');
  assert.equal(session.status, 'open');
  assert.equal(session.payment_status, 'unpaid');
  assert.equal(session.url, `${fake.url}/pay/${session.id}`);
  assert.equal(session.expires_at, params.expires_at);
  assert.ok(session.created >= before && session.created <= nowSeconds() + 1);
  assert.equal(session.amount_total, 125000 + 4550);
  assert.equal(session.currency, 'eur');
  assert.deepEqual(session.metadata, params.metadata);
  assert.equal(session.client_reference_id, 'res_0001');
  assert.equal(session.payment_intent, null);
  assert.equal(session.livemode, false);
  assert.equal(session.mode, 'payment');
  assert.equal(session.success_url, params.success_url);
  assert.equal(session.cancel_url, params.cancel_url);
  assert.match(session.lastResponse.requestId, /^req_/);

  const defaulted = await stripe.checkout.sessions.create(
    sessionParams({ expires_at: undefined, cancel_url: undefined, client_reference_id: undefined }),
  );
  assert.ok(Math.abs(defaulted.expires_at - (defaulted.created + 24 * 3600)) <= 1,
            'expires_at defaults to 24 hours after creation');
  assert.equal(defaulted.cancel_url, null);
  assert.equal(defaulted.client_reference_id, null);
});

test('retrieves a session, with its line items when expanded', async (t) => {
  const fake = await withFake(t);
  const stripe = clientFor(fake);
  const created = await stripe.checkout.sessions.create(sessionParams());

  const plain = await stripe.checkout.sessions.retrieve(created.id);
  assert.equal(plain.id, created.id);
  assert.equal(plain.line_items, undefined);

  const expanded = await stripe.checkout.sessions.retrieve(created.id, { expand: ['line_items'] });
  assert.equal(expanded.line_items.object, 'list');
  assert.deepEqual(
    expanded.line_items.data.map((item) => [item.description, item.quantity, item.amount_total,
                                            item.price.unit_amount, item.currency]),
    [['Sunflowers', 1, 125000, 125000, 'eur'], ['Harbour & Sky', 1, 4550, 4550, 'eur']],
  );

  const missing = await rejectionOf(stripe.checkout.sessions.retrieve('cs_test_nope'));
  assert.ok(missing instanceof Stripe.errors.StripeInvalidRequestError);
  assert.equal(missing.statusCode, 404);
  assert.equal(missing.code, 'resource_missing');
});

test('replays an idempotent create; another payload under the same key is an idempotency error',
     async (t) => {
  const fake = await withFake(t);
  const stripe = clientFor(fake);
  const params = sessionParams();

  const first = await stripe.checkout.sessions.create(params, { idempotencyKey: 'res_0001' });
  const again = await stripe.checkout.sessions.create(params, { idempotencyKey: 'res_0001' });
  assert.equal(again.id, first.id);
  assert.equal(again.lastResponse.headers['idempotent-replayed'], 'true');
  assert.equal(again.lastResponse.headers['idempotency-key'], 'res_0001');
  assert.equal((await fake.control.sessions()).length, 1, 'the replay made no second session');

  const changed = sessionParams({ expires_at: params.expires_at + 60 });
  const err = await rejectionOf(
    stripe.checkout.sessions.create(changed, { idempotencyKey: 'res_0001' }));
  assert.ok(err instanceof Stripe.errors.StripeIdempotencyError, `got ${err.type}`);
  assert.equal(err.rawType, 'idempotency_error');
  assert.equal(err.statusCode, 400);
  assert.equal((await fake.control.sessions()).length, 1);
});

test('a twin request still running under the same key gets 409, then the stored answer',
     async (t) => {
  const fake = await withFake(t);
  const stripe = clientFor(fake);
  const params = sessionParams();
  await fake.control.faults({ delay_next: 1, delay_ms: 1500 });

  const slow = stripe.checkout.sessions.create(params, { idempotencyKey: 'res_twin' });
  await eventually(async () =>
    (await fake.control.requests()).some((r) => r.idempotency_key === 'res_twin' &&
                                                 r.status === null));
  const twin = await rejectionOf(
    stripe.checkout.sessions.create(params, { idempotencyKey: 'res_twin' }));
  assert.equal(twin.statusCode, 409);
  assert.equal(twin.rawType, 'idempotency_error');
  assert.equal(twin.code, 'idempotency_key_in_use');

  const first = await slow;
  const retried = await stripe.checkout.sessions.create(params, { idempotencyKey: 'res_twin' });
  assert.equal(retried.id, first.id);
  assert.equal((await fake.control.sessions()).length, 1);
});

test('validation errors are StripeInvalidRequestError naming the param', async (t) => {
  const fake = await withFake(t);
  const stripe = clientFor(fake);
  const invalid = async (params, options) => {
    const err = await rejectionOf(stripe.checkout.sessions.create(params, options));
    assert.ok(err instanceof Stripe.errors.StripeInvalidRequestError, `got ${err.type}`);
    assert.equal(err.statusCode, 400);
    return err;
  };

  const tooSoon = await invalid(sessionParams({ expires_at: nowSeconds() + 10 * 60 }));
  assert.equal(tooSoon.param, 'expires_at');
  assert.equal(tooSoon.message,
               'The `expires_at` timestamp must be at least 30 minutes from Checkout Session ' +
               'creation.');

  const tooLate = await invalid(sessionParams({ expires_at: nowSeconds() + 25 * 3600 }));
  assert.equal(tooLate.param, 'expires_at');
  assert.match(tooLate.message, /less than 24 hours/);

  const noName = sessionParams();
  delete noName.line_items[0].price_data.product_data.name;
  noName.line_items[0].price_data.product_data.description = 'unnamed';
  const missing = await invalid(noName);
  assert.equal(missing.param, 'line_items[0][price_data][product_data][name]');
  assert.equal(missing.code, 'parameter_missing');

  const badAmount = sessionParams();
  badAmount.line_items[1].price_data.unit_amount = '12.50';
  const notInteger = await invalid(badAmount);
  assert.equal(notInteger.param, 'line_items[1][price_data][unit_amount]');
  assert.equal(notInteger.code, 'parameter_invalid_integer');

  const mixed = sessionParams();
  mixed.line_items[1].price_data.currency = 'usd';
  assert.equal((await invalid(mixed)).param, 'line_items[1][price_data][currency]');

  const longKey = 'k'.repeat(41);
  assert.equal((await invalid(sessionParams({ metadata: { [longKey]: 'v' } }))).param,
               `metadata[${longKey}]`);
  assert.equal((await invalid(sessionParams({ client_reference_id: 'r'.repeat(201) }))).param,
               'client_reference_id');

  const unknown = await invalid(sessionParams({ customer_email: 'a@b.test' }));
  assert.equal(unknown.code, 'parameter_unknown');
  assert.equal(unknown.param, 'customer_email');

  // 101 items: also a form body far above httplib's 8 KiB limit for parsed forms.
  const item = sessionParams().line_items[0];
  const tooMany = await invalid(sessionParams({ line_items: Array(101).fill(item) }));
  assert.equal(tooMany.param, 'line_items');
  const hundred = await stripe.checkout.sessions.create(
    sessionParams({ line_items: Array(100).fill(item) }));
  assert.equal(hundred.amount_total, 100 * 125000);
});

test('a request that failed validation leaves its idempotency key free', async (t) => {
  const fake = await withFake(t);
  const stripe = clientFor(fake);
  await rejectionOf(stripe.checkout.sessions.create(
    sessionParams({ expires_at: nowSeconds() + 60 }), { idempotencyKey: 'res_fixme' }));
  const session = await stripe.checkout.sessions.create(
    sessionParams(), { idempotencyKey: 'res_fixme' });
  assert.equal(session.status, 'open');
});

test('expires an open session and fires checkout.session.expired', async (t) => {
  const fake = await withFake(t);
  const stripe = clientFor(fake);
  const created = await stripe.checkout.sessions.create(sessionParams());

  const expired = await stripe.checkout.sessions.expire(created.id, {},
                                                        { idempotencyKey: 'expire-1' });
  assert.equal(expired.status, 'expired');
  assert.equal(expired.url, null);
  assert.equal((await stripe.checkout.sessions.retrieve(created.id)).status, 'expired');

  const events = await fake.control.events();
  assert.deepEqual(events.map((e) => e.type), ['checkout.session.expired']);
  assert.equal(events[0].data.object.id, created.id);
  assert.equal(events[0].request.id, expired.lastResponse.requestId);
  assert.equal(events[0].request.idempotency_key, 'expire-1');
});

test('expiring a complete session is refused with Stripe\'s message', async (t) => {
  const fake = await withFake(t);
  const stripe = clientFor(fake);
  const created = await stripe.checkout.sessions.create(sessionParams());
  await fake.control.pay(created.id, 'paid');

  const err = await rejectionOf(stripe.checkout.sessions.expire(created.id));
  assert.ok(err instanceof Stripe.errors.StripeInvalidRequestError, `got ${err.type}`);
  assert.equal(err.statusCode, 400);
  assert.equal(err.message,
               'Only Checkout Sessions with a status in ["open"] can be expired. ' +
               'This Checkout Session has a status of `complete`.');
  assert.equal((await stripe.checkout.sessions.retrieve(created.id)).status, 'complete');
});

test('refunds a paid session\'s payment_intent once; refunding again fails', async (t) => {
  const fake = await withFake(t);
  const stripe = clientFor(fake);
  const created = await stripe.checkout.sessions.create(sessionParams());
  await fake.control.pay(created.id, 'paid');
  const paid = await stripe.checkout.sessions.retrieve(created.id);
  assert.equal(paid.payment_status, 'paid');
  assert.match(paid.payment_intent, /^pi_/);

  const refund = await stripe.refunds.create({ payment_intent: paid.payment_intent },
                                             { idempotencyKey: 'refund-res_0001' });
  assert.match(refund.id, /^re_/);
  assert.equal(refund.object, 'refund');
  assert.equal(refund.amount, paid.amount_total);
  assert.equal(refund.currency, 'eur');
  assert.equal(refund.payment_intent, paid.payment_intent);
  assert.equal(refund.status, 'succeeded');

  const replay = await stripe.refunds.create({ payment_intent: paid.payment_intent },
                                             { idempotencyKey: 'refund-res_0001' });
  assert.equal(replay.id, refund.id, 'the same key replays the refund, it does not refund twice');

  const again = await rejectionOf(stripe.refunds.create({ payment_intent: paid.payment_intent }));
  assert.ok(again instanceof Stripe.errors.StripeInvalidRequestError, `got ${again.type}`);
  assert.equal(again.code, 'charge_already_refunded');

  const unknown = await rejectionOf(stripe.refunds.create({ payment_intent: 'pi_unknown' }));
  assert.equal(unknown.code, 'resource_missing');
  assert.equal(unknown.param, 'payment_intent');
  assert.equal((await fake.control.refunds()).length, 1);
});

test('a wrong API key is a StripeAuthenticationError that does not echo the key', async (t) => {
  const fake = await withFake(t);
  const wrongKey = 'sk_test_not_the_configured_key_9876';
  const err = await rejectionOf(clientFor(fake, wrongKey).checkout.sessions.create(sessionParams()));
  assert.ok(err instanceof Stripe.errors.StripeAuthenticationError, `got ${err.type}`);
  assert.equal(err.statusCode, 401);
  assert.match(err.message, /^Invalid API Key provided: sk_test_\*+9876$/);
  assert.ok(!fake.logs.some((line) => JSON.stringify(line).includes(wrongKey)),
            'the key never reaches the logs');
});

test('injected faults surface as the library\'s errors and are not stored', async (t) => {
  const fake = await withFake(t);
  const stripe = clientFor(fake);

  await fake.control.faults({ fail_next: 1, status: 500, should_retry: false });
  const failed = await rejectionOf(
    stripe.checkout.sessions.create(sessionParams(), { idempotencyKey: 'res_fault' }));
  assert.ok(failed instanceof Stripe.errors.StripeAPIError, `got ${failed.type}`);
  assert.equal(failed.statusCode, 500);
  assert.equal(failed.headers['stripe-should-retry'], 'false');

  await fake.control.faults({ fail_next: 1, status: 429 });
  const limited = await rejectionOf(
    stripe.checkout.sessions.create(sessionParams(), { idempotencyKey: 'res_fault' }));
  assert.ok(limited instanceof Stripe.errors.StripeRateLimitError, `got ${limited.type}`);

  const session = await stripe.checkout.sessions.create(sessionParams(),
                                                        { idempotencyKey: 'res_fault' });
  assert.equal(session.lastResponse.headers['idempotent-replayed'], undefined,
               'faulted attempts left nothing to replay');
  const requests = await fake.control.requests();
  assert.deepEqual(requests.map((r) => [r.status, r.injected_fault, r.fault]),
                   [[500, true, 'fail'], [429, true, 'fail'], [200, false, null]]);
});

test('a dropped connection is a connection error; the library retries it once by itself',
     async (t) => {
  const fake = await withFake(t);
  const stripe = clientFor(fake);

  // stripe-node retries ECONNRESET once even with maxNetworkRetries: 0, reusing its key.
  await fake.control.faults({ drop_next: 1 });
  const session = await stripe.checkout.sessions.create(sessionParams());
  let requests = await fake.control.requests();
  assert.deepEqual(requests.map((r) => [r.status, r.fault]), [[0, 'drop'], [200, null]]);
  assert.equal(requests[0].idempotency_key, requests[1].idempotency_key);
  assert.equal(session.status, 'open');

  await fake.control.faults({ drop_next: 2 });
  const err = await rejectionOf(stripe.checkout.sessions.create(sessionParams()));
  assert.ok(err instanceof Stripe.errors.StripeConnectionError, `got ${err.type}`);

  // after_processing: Stripe did the work; the retry replays the stored answer.
  await fake.control.faults({ drop_next: 1, after_processing: true });
  const replayed = await stripe.checkout.sessions.create(sessionParams());
  requests = await fake.control.requests();
  assert.equal(requests.at(-1).replayed, true);
  assert.equal((await fake.control.sessions()).filter((s) => s.id === replayed.id).length, 1);
  assert.equal((await fake.control.sessions()).length, 2);
});

test('delivers a signed checkout.session.completed that constructEvent accepts', async (t) => {
  const receiver = await withReceiver(t);
  const fake = await withFake(t, { webhookUrl: receiver.url, webhookSecret: WEBHOOK_SECRET });
  const stripe = clientFor(fake);
  const created = await stripe.checkout.sessions.create(sessionParams());

  await fake.control.pay(created.id, 'paid');
  const [delivery] = await receiver.waitFor(
    (r) => eventOf(r).type === 'checkout.session.completed');

  assert.equal(delivery.method, 'POST');
  assert.match(delivery.headers['content-type'], /^application\/json/);
  const event = stripe.webhooks.constructEvent(
    delivery.rawBody, delivery.headers['stripe-signature'], WEBHOOK_SECRET);
  assert.match(event.id, /^evt_/);
  assert.equal(event.object, 'event');
  assert.equal(event.type, 'checkout.session.completed');
  assert.equal(event.api_version, '2026-10-28.endive');
  assert.equal(event.livemode, false);
  assert.equal(event.data.object.id, created.id);
  assert.equal(event.data.object.status, 'complete');
  assert.equal(event.data.object.payment_status, 'paid');
  assert.match(event.data.object.payment_intent, /^pi_/);
  assert.equal(event.data.object.client_reference_id, 'res_0001');

  assert.throws(
    () => stripe.webhooks.constructEvent(delivery.rawBody, delivery.headers['stripe-signature'],
                                         'whsec_some_other_secret'),
    Stripe.errors.StripeSignatureVerificationError);
});

test('refunds and disputes fire charge.refunded and charge.dispute.* that constructEvent accepts',
  async (t) => {
    const receiver = await withReceiver(t);
    const fake = await withFake(t, { webhookUrl: receiver.url, webhookSecret: WEBHOOK_SECRET });
    const stripe = clientFor(fake);
    const created = await stripe.checkout.sessions.create(sessionParams());
    await fake.control.pay(created.id, 'paid');
    const paid = await stripe.checkout.sessions.retrieve(created.id);
    const verified = async (type, count = 1) => {
      const deliveries = await receiver.waitFor((r) => eventOf(r).type === type, { count });
      return deliveries.map((d) => stripe.webhooks.constructEvent(
        d.rawBody, d.headers['stripe-signature'], WEBHOOK_SECRET));
    };

    // A partial refund through the API, then the rest from the "dashboard".
    await stripe.refunds.create({ payment_intent: paid.payment_intent, amount: 1000 });
    await fake.control.refund(created.id);
    const [partial, full] = await verified('charge.refunded', 2);
    for (const e of [partial, full]) {
      assert.equal(e.data.object.object, 'charge');
      assert.match(e.data.object.id, /^ch_/);
      assert.equal(e.data.object.payment_intent, paid.payment_intent);
      assert.equal(e.data.object.amount, paid.amount_total);
      assert.equal(e.data.object.currency, 'eur');
    }
    assert.equal(partial.data.object.amount_refunded, 1000);
    assert.equal(partial.data.object.refunded, false);
    assert.equal(full.data.object.amount_refunded, paid.amount_total);
    assert.equal(full.data.object.refunded, true);
    assert.notEqual(partial.request, null, 'an API refund names its request');
    assert.equal(full.request, null);

    const other = await stripe.checkout.sessions.create(sessionParams());
    await fake.control.pay(other.id, 'paid');
    const otherPaid = await stripe.checkout.sessions.retrieve(other.id);
    const dispute = await fake.control.dispute(other.id, { reason: 'product_not_received' });
    assert.match(dispute.id, /^dp_/);
    await fake.control.closeDispute(dispute.id, 'lost');
    const [opened] = await verified('charge.dispute.created');
    const [closed] = await verified('charge.dispute.closed');
    for (const e of [opened, closed]) {
      assert.equal(e.data.object.object, 'dispute');
      assert.equal(e.data.object.id, dispute.id);
      assert.match(e.data.object.charge, /^ch_/);
      assert.equal(e.data.object.payment_intent, otherPaid.payment_intent);
      assert.equal(e.data.object.amount, otherPaid.amount_total);
      assert.equal(e.data.object.reason, 'product_not_received');
    }
    assert.equal(opened.data.object.status, 'needs_response');
    assert.equal(closed.data.object.status, 'lost');
  });

test('a session asking for an address, a phone, a locale and a rate comes back with them, '
  + 'and its completion carries the buyer', async (t) => {
  const receiver = await withReceiver(t);
  const fake = await withFake(t, { webhookUrl: receiver.url, webhookSecret: WEBHOOK_SECRET });
  const stripe = clientFor(fake);
  const params = sessionParams({
    shipping_address_collection: { allowed_countries: ['DE', 'FR'] },
    phone_number_collection: { enabled: true },
    locale: 'de',
    shipping_options: [{ shipping_rate: 'shr_1PaintlockJs' }],
  });
  params.line_items[0].price_data.product_data.description = 'Oil on linen';
  params.line_items[0].price_data.product_data.images = ['https://images.test/sunflowers.jpg'];
  const created = await stripe.checkout.sessions.create(params);
  assert.deepEqual(created.shipping_address_collection, { allowed_countries: ['DE', 'FR'] });
  assert.deepEqual(created.phone_number_collection, { enabled: true });
  assert.equal(created.locale, 'de');
  assert.equal(created.shipping_options[0].shipping_rate, 'shr_1PaintlockJs');
  assert.equal(created.customer_details, null);

  const expanded = await stripe.checkout.sessions.retrieve(
    created.id, { expand: ['line_items.data.price.product'] });
  const product = expanded.line_items.data[0].price.product;
  assert.equal(product.object, 'product');
  assert.equal(product.description, 'Oil on linen');
  assert.deepEqual(product.images, ['https://images.test/sunflowers.jpg']);

  const refused = await rejectionOf(stripe.checkout.sessions.create(sessionParams({
    shipping_address_collection: { allowed_countries: ['de'] },
  })));
  assert.ok(refused instanceof Stripe.errors.StripeInvalidRequestError);
  assert.equal(refused.param, 'shipping_address_collection[allowed_countries][0]');
  const badLocale = await rejectionOf(stripe.checkout.sessions.create(sessionParams({
    locale: 'xx',
  })));
  assert.equal(badLocale.param, 'locale');

  await fake.control.pay(created.id, 'paid', {
    customer_details: { name: 'Ada', email: 'ada@example.com', phone: '+49301' },
    shipping_details: { name: 'Ada L.', address: { line1: 'Hauptstr. 1', city: 'Berlin',
                                                   postal_code: '10115', country: 'DE' } },
  });
  const paid = await stripe.checkout.sessions.retrieve(created.id);
  assert.equal(paid.customer_details.email, 'ada@example.com');
  assert.equal(paid.customer_details.phone, '+49301');
  assert.equal(paid.collected_information.shipping_details.address.country, 'DE');
  const [delivery] = await receiver.waitFor(
    (r) => eventOf(r).type === 'checkout.session.completed');
  const event = stripe.webhooks.constructEvent(
    delivery.rawBody, delivery.headers['stripe-signature'], WEBHOOK_SECRET);
  assert.equal(event.data.object.collected_information.shipping_details.name, 'Ada L.');
  assert.equal(event.data.object.customer_details.name, 'Ada');
});

test('signatures agree with stripe.webhooks.generateTestHeaderString', async (t) => {
  const receiver = await withReceiver(t);
  const fake = await withFake(t, { webhookUrl: receiver.url, webhookSecret: WEBHOOK_SECRET });
  const stripe = clientFor(fake);
  const created = await stripe.checkout.sessions.create(sessionParams());
  await fake.control.expire(created.id);
  const [delivery] = await receiver.waitFor(() => true);

  const header = delivery.headers['stripe-signature'];
  const timestamp = Number(/(?:^|,)t=(\d+)/.exec(header)[1]);
  const expected = stripe.webhooks.generateTestHeaderString({
    payload: delivery.body, secret: WEBHOOK_SECRET, timestamp,
  });
  assert.equal(header, expected, 'the fake signs exactly as the official library does');

  // And the other way round: a header the library makes verifies the fake's payload.
  const libraryEvent = stripe.webhooks.constructEvent(delivery.body, expected, WEBHOOK_SECRET);
  assert.equal(libraryEvent.type, 'checkout.session.expired');
  assert.equal(libraryEvent.data.object.status, 'expired');
});

test('failed deliveries are retried with the same bytes until the endpoint answers 2xx',
     async (t) => {
  const receiver = await withReceiver(t, { status: (_, index) => (index < 2 ? 500 : 200) });
  const fake = await withFake(t, {
    webhookUrl: receiver.url, webhookSecret: WEBHOOK_SECRET, webhookRetries: 3,
  });
  const stripe = clientFor(fake);
  const created = await stripe.checkout.sessions.create(sessionParams());
  await fake.control.pay(created.id, 'unpaid');

  const deliveries = await receiver.waitFor(() => true, { count: 3 });
  assert.equal(new Set(deliveries.map((d) => d.body)).size, 1, 'identical payloads');
  for (const d of deliveries) {
    stripe.webhooks.constructEvent(d.rawBody, d.headers['stripe-signature'], WEBHOOK_SECRET);
  }
  const completed = eventOf(deliveries[0]);
  assert.equal(completed.data.object.payment_status, 'unpaid');
  assert.match(completed.data.object.payment_intent, /^pi_/);

  const [logged] = await eventually(async () => {
    const events = await fake.control.events();
    return events[0]?.delivered === 1 ? events : null;
  });
  assert.equal(logged.delivery_attempts, 3);
  assert.equal(logged.last_delivery_status, 200);
});

test('webhook controls hold, duplicate, drop and redeliver events', async (t) => {
  const receiver = await withReceiver(t);
  const fake = await withFake(t, { webhookUrl: receiver.url, webhookSecret: WEBHOOK_SECRET });
  const stripe = clientFor(fake);
  const a = await stripe.checkout.sessions.create(sessionParams());
  const b = await stripe.checkout.sessions.create(sessionParams());

  const held = await fake.control.webhooks({ hold: true });
  assert.equal(held.hold, true);
  await fake.control.pay(a.id, 'unpaid');
  await fake.control.asyncPayment(a.id, 'succeeded');
  assert.equal((await fake.control.webhooks({})).held, 2);
  assert.equal(receiver.received.length, 0);
  await fake.control.webhooks({ hold: false });
  const released = await receiver.waitFor(() => true, { count: 2 });
  assert.deepEqual(released.map((r) => eventOf(r).type),
                   ['checkout.session.completed', 'checkout.session.async_payment_succeeded']);
  assert.equal(eventOf(released[1]).data.object.payment_status, 'paid');

  await fake.control.webhooks({ duplicate_next: 1 });
  await fake.control.expire(b.id);
  const twice = await receiver.waitFor((r) => eventOf(r).type === 'checkout.session.expired',
                                       { count: 2 });
  assert.equal(eventOf(twice[0]).id, eventOf(twice[1]).id, 'one event, delivered twice');

  const c = await stripe.checkout.sessions.create(sessionParams());
  const d = await stripe.checkout.sessions.create(sessionParams());
  await fake.control.webhooks({ drop_next: 1 });
  await fake.control.expire(c.id);
  await fake.control.expire(d.id);
  // Deliveries go out in order, so once d's event arrived, c's would have too.
  await receiver.waitFor((r) => eventOf(r).data.object.id === d.id);
  const events = await fake.control.events();
  const dropped = events.find((e) => e.data.object.id === c.id);
  assert.equal(dropped.delivery_attempts, 0);
  assert.ok(!receiver.received.some((r) => eventOf(r).id === dropped.id));

  assert.deepEqual(await fake.control.deliver(dropped.id), { status: 200 });
  assert.ok(receiver.received.some((r) => eventOf(r).id === dropped.id));
});

test('the hosted page pays and redirects to success_url, or cancels', async (t) => {
  const fake = await withFake(t);
  const stripe = clientFor(fake);
  const created = await stripe.checkout.sessions.create(sessionParams());

  const page = await fetch(created.url);
  assert.equal(page.status, 200);
  const html = await page.text();
  assert.match(html, /<title>Stripe \(fake\) — pay<\/title>/);
  assert.match(html, /Sunflowers/);
  assert.match(html, /Harbour &amp; Sky/);
  assert.match(html, /1250\.00 EUR/);
  assert.match(html, /1295\.50 EUR/);
  assert.match(html, />Pay<\/button>/);
  assert.match(html, />Cancel<\/button>/);

  const cancelled = await fetch(`${created.url}/cancel`, { method: 'POST', redirect: 'manual' });
  assert.equal(cancelled.status, 303);
  assert.equal(cancelled.headers.get('location'), 'http://shop.test/cancel');
  assert.equal((await stripe.checkout.sessions.retrieve(created.id)).status, 'open');

  const paid = await fetch(`${created.url}/pay`, { method: 'POST', redirect: 'manual' });
  assert.equal(paid.status, 303);
  assert.equal(paid.headers.get('location'),
               `http://shop.test/success?session_id=${created.id}`);
  const after = await stripe.checkout.sessions.retrieve(created.id);
  assert.equal(after.status, 'complete');
  assert.equal(after.payment_status, 'paid');
  assert.deepEqual((await fake.control.events()).map((e) => e.type),
                   ['checkout.session.completed']);
  assert.match(await (await fetch(created.url)).text(), /already been paid/);
});
