/*! paintlock.js: drop-in checkout buttons with live availability.
 *
 *   <script src="https://GATEWAY/paintlock.js" defer></script>
 *   <button data-paintlock-painting="p7">Buy</button>
 *
 * The gateway serves this file at /paintlock.js (its source is
 * gateway/paintlock.js, compiled into the gateway). The script talks to the
 * gateway it was loaded from, so a page on another origin needs that origin in
 * the gateway's PAINTLOCK_ALLOWED_ORIGINS. See fixtures/storefront/README.md.
 *
 * What it does to every element with data-paintlock-painting="p7" (or
 * "p1 p2" for a cart of several):
 *   - a click POSTs /v1/checkout; 201 goes on to the Stripe page;
 *     409 shows "Being bought right now — free again at 14:05" with a live
 *     countdown, or "Sold"; other failures show the gateway's message;
 *   - it listens to /v1/paintings/stream and keeps the button's
 *     data-paintlock-state (available | reserved | sold | pending | unknown),
 *     its label and its disabled flag true, without a reload;
 *   - it fires a bubbling "paintlock:state" event on the button when its state
 *     changes (detail: {paintings, state, free_at}), and "paintlock:connection"
 *     on the document when the stream opens or drops (detail: {open}).
 * A painting this tab holds itself (it started the checkout, then came back
 * from Stripe) shows "Reserved for you until 14:05" and a "Resume payment"
 * button that returns to its Stripe page (data-paintlock-own is set).
 * The waiting line: next to a painting someone else is buying, a "Join the
 * line" button (POST /v1/paintings/{id}/line; the line token stays in this
 * tab's sessionStorage). While in line the status says "You are number 3 in
 * line"; when the tab's turn comes the button is enabled again and the
 * status says "Your turn — buy within 1:59", counting down, and a click buys
 * with the line token. The tab opens the stream with its line tokens
 * (?line_token=…), and the stream tells it, and only it, its position and
 * when its turn starts and ends ("line" events); everyone else sees only the
 * line's length. When its place ends (bought, passed, left, cleared) the
 * script asks the gateway once which it was (GET …/line). The button
 * gets data-paintlock-line (waiting | your_turn | passed | closed) and fires
 * "paintlock:line" (detail: {painting, state, position, window_until}).
 * Optional attributes on the button:
 *   data-paintlock-status="ID"   the element to write messages into (default:
 *                                a <span class="paintlock-status"> after it)
 *   data-paintlock-label-reserved / -sold / -withdrawn / -pending / -own   labels
 *                                (defaults "Reserved", "Sold", "Not for sale",
 *                                "One moment…", "Resume payment")
 * On the script tag: data-paintlock-gateway="https://…" overrides the gateway.
 * A button inside <form method="post" action="GATEWAY/v1/checkout"> still
 * works without JavaScript.
 */
(function () {
  'use strict';
  if (window.Paintlock) return;

  var SELECTOR = '[data-paintlock-painting]';
  var STORAGE_KEY = 'paintlock:checkout';
  var LINE_KEY = 'paintlock:line:';  // + painting id: {token}

  var base = gatewayBase();
  var known = new Map();         // painting id -> {state, free_at}
  var local = new WeakMap();     // element -> {busy, note}
  var shown = new WeakMap();     // element -> the state last rendered
  var originals = new WeakMap(); // element -> its own label (innerHTML)
  var subscribers = new Set();
  var source = null;
  var backoffMs = 1000;
  var ticker = null;
  var lastAsked = 0;
  var lines = new Map();         // painting id -> this tab's place in its line
  var streamTokens = '';        // the line tokens the open stream follows
  var lineAsking = new Map();    // painting id -> the request in flight

  function gatewayBase() {
    var script = document.currentScript;
    if (!script) {
      var all = document.getElementsByTagName('script');
      for (var i = all.length - 1; i >= 0; i--) {
        if (/\/paintlock\.js(\?|#|$)/.test(all[i].src)) { script = all[i]; break; }
      }
    }
    if (script && script.getAttribute('data-paintlock-gateway')) {
      return script.getAttribute('data-paintlock-gateway').replace(/\/+$/, '');
    }
    if (script && script.src) {
      return new URL(script.src, location.href).href.replace(/\/paintlock\.js([?#].*)?$/, '');
    }
    return location.origin;
  }

  // ---- time ----------------------------------------------------------------

  // Free-at times are shown rounded up to the minute: a buyer told "14:06"
  // must never come back too early.
  function clock(iso) {
    var at = new Date(Math.ceil(Date.parse(iso) / 60000) * 60000);
    var time = at.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
    if (at - Date.now() > 20 * 3600 * 1000) {
      return at.toLocaleDateString(undefined, { day: 'numeric', month: 'short' }) + ', ' + time;
    }
    return time;
  }

  function remaining(iso) {
    var s = Math.max(0, Math.ceil((Date.parse(iso) - Date.now()) / 1000));
    var h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
    var mmss = (h ? h + ':' + String(m).padStart(2, '0') : String(m)) + ':' + String(sec).padStart(2, '0');
    return { seconds: s, text: mmss };
  }

  // ---- state ---------------------------------------------------------------

  function paintingsOf(el) {
    return (el.getAttribute('data-paintlock-painting') || '').split(/[\s,]+/).filter(Boolean);
  }

  // A cart is sold if any painting is, withdrawn (not for sale) if any is, reserved (until the latest free_at) if
  // any is, available when all are known to be.
  function combined(ids) {
    var state = 'available', freeAt = null, unknown = false;
    for (var i = 0; i < ids.length; i++) {
      var k = known.get(ids[i]);
      if (!k) { unknown = true; continue; }
      if (k.state === 'sold') return { state: 'sold', free_at: null };
      if (k.state === 'withdrawn') { state = 'withdrawn'; continue; }
      if (k.state === 'reserved' && state !== 'withdrawn') {
        state = 'reserved';
        if (!freeAt || Date.parse(k.free_at) > Date.parse(freeAt)) freeAt = k.free_at;
      }
    }
    if (state === 'available' && unknown) state = 'unknown';
    return { state: state, free_at: state === 'withdrawn' ? null : freeAt };
  }

  function apply(p) {
    if (!p || !p.id || !p.state) return;
    known.set(p.id, { state: p.state, free_at: p.free_at || null, line_length: p.line_length || 0 });
    renderPainting(p.id);
    subscribers.forEach(function (fn) {
      try { fn({ id: p.id, state: p.state, free_at: p.free_at || null }); } catch (e) { console.error(e); }
    });
  }

  // ---- rendering -------------------------------------------------------------

  function statusElement(el) {
    var id = el.getAttribute('data-paintlock-status');
    if (id) return document.getElementById(id);
    var next = el.nextElementSibling;
    if (next && next.classList.contains('paintlock-status')) return next;
    var span = document.createElement('span');
    span.className = 'paintlock-status';
    span.setAttribute('role', 'status');
    span.setAttribute('aria-live', 'polite');
    el.insertAdjacentElement('afterend', span);
    return span;
  }

  function label(el, state) {
    var defaults = { reserved: 'Reserved', sold: 'Sold', withdrawn: 'Not for sale', pending: 'One moment…' };
    return el.getAttribute('data-paintlock-label-' + state) || defaults[state];
  }

  // This tab's own hold on exactly these paintings, still running: the
  // checkout it started, whose held_until is the paintings' free_at (a hold
  // someone took over since has another). Another tab is another buyer.
  function ownHold(ids, s) {
    if (s.state !== 'reserved') return null;
    var record = lastCheckout();
    if (!record || !record.checkout_url || !record.paintings) return null;
    if (record.paintings.length !== ids.length) return null;
    for (var i = 0; i < ids.length; i++) {
      var k = known.get(ids[i]);
      if (record.paintings.indexOf(ids[i]) < 0 || !k || k.free_at !== record.held_until) return null;
    }
    return Date.parse(record.held_until) > Date.now() ? record : null;
  }

  function render(el) {
    if (!originals.has(el)) originals.set(el, el.innerHTML);
    var ids = paintingsOf(el);
    var s = combined(ids);
    var mine = local.get(el) || {};
    var state = mine.busy ? 'pending' : s.state;
    var own = mine.busy ? null : ownHold(ids, s);
    var place = ids.length === 1 ? lineOf(ids[0]) : null;
    var turn = !mine.busy && place && place.state === 'your_turn';
    var length = ids.length === 1 && known.get(ids[0]) ? known.get(ids[0]).line_length : 0;
    var key = state + '|' + (s.free_at || '') + '|' + (mine.note || '') + '|' + (own ? 'own' : '') +
              '|' + (place ? place.state + ':' + place.position + ':' + place.window_until : '') +
              '|' + length;
    if (shown.get(el) === key) return;
    var changed = !shown.has(el) || shown.get(el).split('|')[0] !== state;
    shown.set(el, key);

    el.setAttribute('data-paintlock-state', state);
    if (own) el.setAttribute('data-paintlock-own', '');
    else el.removeAttribute('data-paintlock-own');
    if (place) el.setAttribute('data-paintlock-line', place.state);
    else el.removeAttribute('data-paintlock-line');
    var off = !own && !turn && (state === 'pending' || state === 'reserved' || state === 'sold' ||
                        state === 'withdrawn');
    if ('disabled' in el) el.disabled = off;
    el.setAttribute('aria-disabled', off ? 'true' : 'false');
    var text = own ? el.getAttribute('data-paintlock-label-own') || 'Resume payment'
             : turn ? el.getAttribute('data-paintlock-label-turn') || 'Buy now'
             : label(el, state);
    if (text) el.textContent = text;
    else el.innerHTML = originals.get(el);

    var status = statusElement(el);
    if (status) {
      status.textContent = '';
      if (mine.note) {
        status.textContent = mine.note;
      } else if (turn) {
        status.appendChild(document.createTextNode('Your turn — buy within '));
        status.appendChild(countdownOf(place.window_until, true));
      } else if (place && place.state === 'waiting') {
        status.appendChild(document.createTextNode('You are number ' + place.position + ' in line'));
        if (place.window_from) {
          status.appendChild(document.createTextNode(' — your turn from about '));
          var turnAt = document.createElement('time');
          turnAt.dateTime = place.window_from;
          turnAt.textContent = clock(place.window_from);
          status.appendChild(turnAt);
        }
        status.appendChild(document.createTextNode(' '));
        status.appendChild(lineButton('leave', ids[0], 'Leave the line'));
      } else if (place && (place.state === 'passed' || place.state === 'closed')) {
        status.textContent = place.state === 'passed'
          ? 'Your turn in line passed unused.'
          : 'The line is closed: the painting was sold.';
      } else if (state === 'reserved' && s.free_at) {
        status.appendChild(document.createTextNode(own ? 'Reserved for you until '
                                                       : 'Being bought right now — free again at '));
        var time = document.createElement('time');
        time.dateTime = s.free_at;
        time.textContent = clock(s.free_at);
        status.appendChild(time);
        var left = remaining(s.free_at);
        if (left.seconds < 3600) {
          var countdown = document.createElement('span');
          countdown.className = 'paintlock-countdown';
          countdown.setAttribute('data-paintlock-until', s.free_at);
          countdown.setAttribute('aria-hidden', 'true');
          countdown.textContent = ' (' + left.text + ')';
          status.appendChild(countdown);
          tick();
        }
        if (ids.length === 1 && !own) {
          if (length) status.appendChild(document.createTextNode(' · ' + length + ' waiting'));
          status.appendChild(document.createTextNode(' '));
          status.appendChild(lineButton('join', ids[0], 'Join the line'));
        }
      }
      status.setAttribute('data-paintlock-state', state);
    }
    if (changed) {
      el.dispatchEvent(new CustomEvent('paintlock:state', {
        bubbles: true,
        detail: { paintings: ids, state: state, free_at: s.free_at, own: !!own },
      }));
    }
    var lineKey = place ? place.state + ':' + place.position : '';
    if (el.getAttribute('data-paintlock-line-shown') !== lineKey) {
      el.setAttribute('data-paintlock-line-shown', lineKey);
      if (place) {
        el.dispatchEvent(new CustomEvent('paintlock:line', {
          bubbles: true,
          detail: { painting: ids[0], state: place.state, position: place.position,
                    window_until: place.window_until },
        }));
      }
    }
  }

  // One timer for every countdown on the page, running only while one shows.
  function tick() {
    if (ticker) return;
    ticker = setInterval(function () {
      var all = document.querySelectorAll('[data-paintlock-until]');
      if (!all.length) { clearInterval(ticker); ticker = null; return; }
      all.forEach(function (c) {
        var until = c.getAttribute('data-paintlock-until');
        var left = remaining(until);
        if (c.hasAttribute('data-paintlock-bare')) {
          c.textContent = left.text;
          return;
        }
        c.textContent = left.seconds > 0 ? ' (' + left.text + ')' : ' (any moment now)';
        // The stream says when the hold lapsed; if it is late (or down),
        // ask once.
        if (left.seconds === 0 && Date.now() - Date.parse(until) > 3000 && Date.now() - lastAsked > 10000) {
          lastAsked = Date.now();
          refresh(null);
        }
      });
    }, 1000);
  }

  function countdownOf(until, bare) {
    var c = document.createElement('span');
    c.className = 'paintlock-countdown';
    c.setAttribute('data-paintlock-until', until);
    if (bare) c.setAttribute('data-paintlock-bare', '');
    c.textContent = bare ? remaining(until).text : ' (' + remaining(until).text + ')';
    tick();
    return c;
  }

  function lineButton(what, id, text) {
    var b = document.createElement('button');
    b.type = 'button';
    b.className = 'paintlock-' + what;
    b.setAttribute('data-paintlock-line-' + what, id);
    b.textContent = text;
    return b;
  }

  function renderPainting(id) {
    document.querySelectorAll(SELECTOR).forEach(function (el) {
      if (paintingsOf(el).indexOf(id) >= 0) render(el);
    });
  }

  function setLocal(el, value) {
    local.set(el, value);
    render(el);
  }

  // ---- network ---------------------------------------------------------------

  function refresh(ids) {
    var list = ids && ids.length ? ids : null;
    var urls = list ? list.map(function (id) { return base + '/v1/paintings/' + encodeURIComponent(id); })
                    : [base + '/v1/paintings'];
    return Promise.all(urls.map(function (url) {
      return fetch(url, { credentials: 'omit' }).then(function (r) { return r.ok ? r.json() : null; })
        .then(function (body) {
          if (!body) return;
          (body.paintings || [body]).forEach(apply);
        }).catch(function () {});
    }));
  }

  function connect() {
    if (source || typeof EventSource === 'undefined') return;
    streamTokens = lineTokens();
    source = new EventSource(base + '/v1/paintings/stream' + streamTokens);
    source.addEventListener('painting', function (e) {
      try { apply(JSON.parse(e.data)); } catch (err) { console.error(err); }
    });
    source.addEventListener('line', function (e) {
      try { applyLine(JSON.parse(e.data)); } catch (err) { console.error(err); }
    });
    source.addEventListener('open', function () {
      backoffMs = 1000;
      connection(true);
      // What happened to a place while the stream was down: ask once.
      lines.forEach(function (place, id) {
        if (place.state === 'waiting' || place.state === 'your_turn') askLine(id);
      });
    });
    source.addEventListener('error', function () {
      connection(false);
      // EventSource reconnects by itself after a network error; an HTTP error
      // (503: the gateway has too many streams) closes it for good.
      if (source && source.readyState === EventSource.CLOSED) {
        source = null;
        refresh(null);
        setTimeout(connect, backoffMs * (0.5 + Math.random()));
        backoffMs = Math.min(backoffMs * 2, 60000);
      }
    });
  }

  // ---- the waiting line --------------------------------------------------------

  // The query that makes the stream follow this tab's places ('' for none).
  function lineTokens() {
    var tokens = [];
    try {
      for (var i = 0; i < sessionStorage.length; i++) {
        var key = sessionStorage.key(i);
        if (key.indexOf(LINE_KEY) === 0) lineOf(key.slice(LINE_KEY.length));
      }
    } catch (e) { /* private mode: only this page's places */ }
    lines.forEach(function (place) {
      if (place.token && (place.state === 'waiting' || place.state === 'your_turn')) tokens.push(place.token);
    });
    tokens.sort();
    return tokens.length ? '?' + tokens.slice(0, 8).map(function (t) {
      return 'line_token=' + encodeURIComponent(t);
    }).join('&') : '';
  }

  // Reopens the stream when the places it should follow changed.
  function restream() {
    if (!source || lineTokens() === streamTokens) return;
    source.close();
    source = null;
    connect();
  }

  // A "line" event: this tab's own place in a painting's line.
  function applyLine(e) {
    var place = lines.get(e.id);
    if (!place) return;
    if (e.state === 'waiting' || e.state === 'your_turn') {
      lines.set(e.id, { token: place.token, state: e.state, position: e.position,
                        window_from: e.window_from, window_until: e.window_until });
      renderPainting(e.id);
    } else if (e.state === 'closed') {
      lines.set(e.id, { token: place.token, state: 'closed', position: null });
      forgetLine(e.id);
      renderPainting(e.id);
      restream();
    } else {
      askLine(e.id);  // ended: bought, passed, left or cleared
    }
  }

  // This tab's place in a painting's line, from memory or sessionStorage.
  function lineOf(id) {
    if (!lines.has(id)) {
      var saved = null;
      try { saved = JSON.parse(sessionStorage.getItem(LINE_KEY + id)); } catch (e) { saved = null; }
      if (!saved || !saved.token) return null;
      lines.set(id, { token: saved.token, state: 'waiting', position: saved.position || null });
      askLine(id);
    }
    return lines.get(id);
  }

  function forgetLine(id) {
    try { sessionStorage.removeItem(LINE_KEY + id); } catch (e) { /* private mode */ }
  }

  // Asks the gateway where this tab stands (after joining, at page load, and
  // when the stream says the place ended or the stream reconnects).
  function askLine(id) {
    var place = lines.get(id);
    if (!place || !place.token || lineAsking.has(id)) return;
    var asking = fetch(base + '/v1/paintings/' + encodeURIComponent(id) + '/line', {
      credentials: 'omit',
      headers: { 'Paintlock-Line-Token': place.token },
    }).then(function (r) {
      if (r.status === 404) { lines.delete(id); forgetLine(id); restream(); return null; }
      return r.ok ? r.json() : null;
    }).then(function (body) {
      if (!body) return;
      var next = { token: place.token, state: body.state, position: body.position || null,
                   window_from: body.window_from || null, window_until: body.window_until || null };
      lines.set(id, next);
      if (next.state !== 'waiting' && next.state !== 'your_turn') {
        forgetLine(id);
        restream();
      }
    }).catch(function () {}).then(function () {
      lineAsking.delete(id);
      renderPainting(id);
    });
    lineAsking.set(id, asking);
  }

  async function joinLine(id) {
    var note = '';
    try {
      var res = await fetch(base + '/v1/paintings/' + encodeURIComponent(id) + '/line', {
        method: 'POST', mode: 'cors', credentials: 'omit',
      });
      var body = {};
      try { body = await res.json(); } catch (e) { body = {}; }
      if (res.status === 201 && body.line_token) {
        try {
          sessionStorage.setItem(LINE_KEY + id, JSON.stringify({ token: body.line_token, position: body.position }));
        } catch (e) { /* private mode: kept for this page only */ }
        lines.set(id, { token: body.line_token, state: 'waiting', position: body.position,
                        window_from: body.window_from || null, window_until: body.window_until || null });
        restream();
      } else if (res.status === 409 && body.code === 'painting_free') {
        refresh([id]);
      } else {
        note = body.message || 'Joining the line failed (HTTP ' + res.status + ').';
      }
    } catch (e) {
      note = 'The line cannot be reached right now; please try again.';
    }
    document.querySelectorAll(SELECTOR).forEach(function (el) {
      if (paintingsOf(el).join(' ') === id) setLocal(el, { busy: false, note: note });
    });
    renderPainting(id);
  }

  async function leaveLine(id) {
    var place = lines.get(id);
    if (!place) return;
    try {
      await fetch(base + '/v1/paintings/' + encodeURIComponent(id) + '/line', {
        method: 'DELETE', mode: 'cors', credentials: 'omit',
        headers: { 'Paintlock-Line-Token': place.token },
      });
    } catch (e) { /* the place lapses by itself when its turn passes */ }
    lines.delete(id);
    forgetLine(id);
    restream();
    renderPainting(id);
  }

  function lastCheckout() {
    try { return JSON.parse(sessionStorage.getItem(STORAGE_KEY)); } catch (e) { return null; }
  }

  function connection(open) {
    document.dispatchEvent(new CustomEvent('paintlock:connection', { detail: { open: open } }));
  }

  function sleep(ms) { return new Promise(function (r) { setTimeout(r, ms); }); }

  async function buy(el) {
    var ids = paintingsOf(el);
    var mine = local.get(el) || {};
    if (!ids.length || mine.busy) return;
    var own = ownHold(ids, combined(ids));
    if (own) {  // this tab holds them already: back to its Stripe page
      location.assign(own.checkout_url);
      return;
    }
    var place = ids.length === 1 ? lineOf(ids[0]) : null;
    var lineToken = place && (place.state === 'waiting' || place.state === 'your_turn') ? place.token : null;
    setLocal(el, { busy: true, note: '' });
    var note = '';
    try {
      for (var attempt = 0; ; attempt++) {
        var res = await fetch(base + '/v1/checkout', {
          method: 'POST',
          mode: 'cors',
          credentials: 'omit',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify(lineToken ? { paintings: ids, line_token: lineToken } : { paintings: ids }),
        });
        var body = {};
        try { body = await res.json(); } catch (e) { body = {}; }
        if (res.status === 201 && body.checkout_url) {
          var record = { paintings: ids, reservation_id: body.reservation_id,
                         held_until: body.held_until, checkout_url: body.checkout_url };
          try { sessionStorage.setItem(STORAGE_KEY, JSON.stringify(record)); } catch (e) { /* private mode */ }
          if (lineToken) { lines.delete(ids[0]); forgetLine(ids[0]); }
          var go = el.dispatchEvent(new CustomEvent('paintlock:checkout', {
            bubbles: true, cancelable: true, detail: record }));
          if (go) location.assign(body.checkout_url);
          return;  // stays "pending" while the browser leaves
        }
        if (res.status === 409 && body.code === 'painting_busy' && attempt < 4) {
          // Another buyer is deciding this very moment: the answer will be
          // "reserved" or ours within a second.
          await sleep(1000 * (Number(res.headers.get('Retry-After')) || 1));
          continue;
        }
        if (res.status === 409 && body.code === 'painting_reserved' && body.painting) {
          var k = known.get(body.painting);
          apply({ id: body.painting, state: 'reserved', free_at: body.free_at,
                  line_length: k ? k.line_length : 0 });
        } else if (res.status === 409 && body.code === 'painting_sold' && body.painting) {
          apply({ id: body.painting, state: 'sold' });
        } else if (res.status === 409 && body.code === 'painting_withdrawn' && body.painting) {
          apply({ id: body.painting, state: 'withdrawn' });
        } else {
          note = body.message || 'The checkout could not start (HTTP ' + res.status + '). Please try again.';
        }
        break;
      }
    } catch (e) {
      note = 'The checkout cannot be reached right now. Nothing was reserved or charged; please try again.';
    }
    setLocal(el, { busy: false, note: note });
  }

  // ---- wiring ----------------------------------------------------------------

  function scan(root) {
    var found = false;
    if (root.matches && root.matches(SELECTOR)) { render(root); found = true; }
    if (root.querySelectorAll) {
      root.querySelectorAll(SELECTOR).forEach(function (el) { render(el); found = true; });
    }
    if (found) connect();
  }

  document.addEventListener('click', function (e) {
    var line = e.target.closest && e.target.closest('[data-paintlock-line-join], [data-paintlock-line-leave]');
    if (line) {
      e.preventDefault();
      if (line.hasAttribute('data-paintlock-line-join')) joinLine(line.getAttribute('data-paintlock-line-join'));
      else leaveLine(line.getAttribute('data-paintlock-line-leave'));
      return;
    }
    var el = e.target.closest && e.target.closest(SELECTOR);
    if (!el) return;
    e.preventDefault();  // a <form> fallback around the button is for no-JS visitors
    buy(el);
  });

  // Back from the Stripe page, a page restored from the back-forward cache
  // still shows "pending", and its stream was closed.
  window.addEventListener('pageshow', function (e) {
    if (!e.persisted) return;
    document.querySelectorAll(SELECTOR).forEach(function (el) { setLocal(el, { busy: false, note: '' }); });
    if (source && source.readyState === EventSource.CLOSED) source = null;
    connect();
  });

  function start() {
    scan(document);
    new MutationObserver(function (records) {
      records.forEach(function (r) {
        r.addedNodes.forEach(function (n) { if (n.nodeType === 1) scan(n); });
      });
    }).observe(document.documentElement, { childList: true, subtree: true });
  }

  window.Paintlock = {
    version: 1,
    gateway: base,
    // The latest known state of a painting: {state, free_at} or undefined.
    state: function (id) { return known.get(id); },
    // Calls fn({id, state, free_at}) on every change; returns an unsubscribe.
    subscribe: function (fn) {
      subscribers.add(fn);
      known.forEach(function (v, id) { fn({ id: id, state: v.state, free_at: v.free_at }); });
      connect();
      return function () { subscribers.delete(fn); };
    },
    // The catalogue from the gateway: [{id, title, price_minor, currency, state, free_at?}].
    paintings: function () {
      return fetch(base + '/v1/paintings', { credentials: 'omit' }).then(function (r) {
        if (!r.ok) throw new Error('the gateway answered ' + r.status);
        return r.json();
      }).then(function (body) {
        body.paintings.forEach(function (p) { if (!known.has(p.id)) apply(p); });
        return body.paintings;
      });
    },
    // What the last checkout started in this tab: {paintings, reservation_id,
    // held_until, checkout_url}, or null. For success and cancel pages.
    lastCheckout: lastCheckout,
    // This tab's place in a painting's line: {state, position, window_from,
    // window_until} (the token is not handed out), or null.
    line: function (id) {
      var p = lineOf(id);
      return p ? { state: p.state, position: p.position, window_from: p.window_from,
                   window_until: p.window_until } : null;
    },
    formatTime: clock,
  };

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
  else start();
})();
