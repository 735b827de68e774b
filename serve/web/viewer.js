// viewer.js — the trace viewer of `ramtrace serve` (docs/viewer.md): plain
// JavaScript on canvas, talking to the server's JSON endpoints (/api/...).
// Every text from the trace (token pieces, run names, SQL cells) is put in
// the page with textContent, never as markup.  The view state lives in the
// URL's hash, so a view can be shared or reloaded.
'use strict';

const $ = (id) => document.getElementById(id);
const TOKEN_BLOCK = 4096;
const TILE_COLS = 1024;
const S = {            // the view state (the URL hash carries it)
  view: 'runs', run: 0, heads: [], p0: 0, p1: 0, s0: 0, s1: 0,
  palette: 'default', mrc: 'all', q: '', slot: null, pos: null,
};
let info = null;       // /api/info
let runInfo = null;    // /api/heads of the current run
const tiles = new Map();   // tile key -> {state, data, grid}
const tokBlocks = new Map(); // run/block -> {state, tokens: Map pos -> piece}

// ---- fetching ------------------------------------------------------------

async function api(path, params) {
  const u = new URL(path, location.origin);
  for (const [k, v] of Object.entries(params || {})) u.searchParams.set(k, v);
  const r = await fetch(u);
  let j;
  try { j = await r.json(); } catch (e) { throw new Error(path + ': not JSON (' + r.status + ')'); }
  if (!r.ok) throw new Error(j.error || ('HTTP ' + r.status));
  return j;
}

function status(msg) { $('status').textContent = msg || ''; }

// ---- URL state -----------------------------------------------------------

function headsText(hs) { return hs.map((h) => h[0] + '.' + h[1]).join(','); }
function parseHeads(s) {
  const out = [];
  for (const part of (s || '').split(',')) {
    const m = /^\s*(\d+)\.(\d+)\s*$/.exec(part);
    if (m) out.push([+m[1], +m[2]]);
  }
  return out;
}

function saveState() {
  const p = new URLSearchParams();
  p.set('view', S.view);
  p.set('run', S.run);
  if (S.heads.length) p.set('heads', headsText(S.heads));
  if (S.p1 > S.p0) { p.set('p0', Math.round(S.p0)); p.set('p1', Math.round(S.p1)); }
  if (S.s1 > S.s0) { p.set('s0', Math.round(S.s0)); p.set('s1', Math.round(S.s1)); }
  if (S.palette !== 'default') p.set('palette', S.palette);
  if (S.mrc !== 'all') p.set('mrc', S.mrc);
  if (S.q) p.set('q', S.q);
  if (S.slot) p.set('slot', S.slot.join('.'));
  if (S.pos !== null) p.set('pos', S.pos);
  history.replaceState(null, '', '#' + p.toString());
}

function loadState() {
  const p = new URLSearchParams(location.hash.slice(1));
  S.view = p.get('view') || 'runs';
  S.run = +(p.get('run') || 0);
  S.heads = parseHeads(p.get('heads'));
  S.p0 = +(p.get('p0') || 0); S.p1 = +(p.get('p1') || 0);
  S.s0 = +(p.get('s0') || 0); S.s1 = +(p.get('s1') || 0);
  S.palette = p.get('palette') || 'default';
  S.mrc = p.get('mrc') || 'all';
  S.q = p.get('q') || '';
  const sl = (p.get('slot') || '').split('.').map(Number);
  S.slot = sl.length === 3 && sl.every(Number.isFinite) ? sl : null;
  S.pos = p.has('pos') ? +p.get('pos') : null;
}

// ---- views ---------------------------------------------------------------

function showView(v) {
  S.view = v;
  for (const b of document.querySelectorAll('nav button')) b.classList.toggle('active', b.dataset.view === v);
  for (const s of document.querySelectorAll('main section')) s.classList.toggle('active', s.id === 'view-' + v);
  saveState();
  render();
}

async function selectRun(id) {
  S.run = id;
  tiles.clear();
  runInfo = await api('/api/heads', { run: id });
  S.run = runInfo.run.id;
  $('run-label').textContent = 'run ' + runInfo.run.id + ' · ' + runInfo.run.name + ' · ' +
    runInfo.run.tokens + ' tokens · ' + runInfo.run.events.toLocaleString('en') + ' events';
  if (!S.heads.length && runInfo.list.length) S.heads = [[runInfo.list[0][0], runInfo.list[0][1]]];
  fillMrcScope();
}

function render() {
  $('tooltip').hidden = true;
  if (S.view === 'runs') renderRuns();
  else if (S.view === 'overview') drawOverview();
  else if (S.view === 'trace') { $('heads-input').value = headsText(S.heads); drawTrace(); }
  else if (S.view === 'mrc') drawMrc();
  else if (S.view === 'sql') { if (S.q) $('sql-text').value = S.q; }
}

// Fill table t from columns and rows (arrays of cell values) as text.
function fillTable(t, columns, rows, onclick) {
  t.replaceChildren();
  const head = t.createTHead().insertRow();
  for (const c of columns) { const th = document.createElement('th'); th.textContent = c; head.appendChild(th); }
  const body = t.createTBody();
  rows.forEach((r, i) => {
    const tr = body.insertRow();
    for (const v of r) tr.insertCell().textContent = v === null || v === undefined ? 'NULL' : String(v);
    if (onclick) { tr.classList.add('clickable'); tr.addEventListener('click', () => onclick(i)); }
  });
}

async function renderRuns() {
  const runs = await api('/api/runs');
  fillTable($('runs-table'), ['id', 'name', 'status', 'tokens', 'events', 'layers × heads', 'M', 'K', 'model'],
    runs.map((r) => [r.id, r.name, r.status, r.tokens, r.events, r.layers + ' × ' + r.heads, r.M, r.K, r.model]),
    async (i) => { S.heads = []; S.p0 = S.p1 = S.s0 = S.s1 = 0; await selectRun(runs[i].id); showView('overview'); });
}

// ---- tooltip -------------------------------------------------------------

function tip(ev, lines) {
  const t = $('tooltip');
  if (!lines) { t.hidden = true; return; }
  t.textContent = lines.join('\n');
  t.hidden = false;
  t.style.left = (ev.clientX + 14) + 'px';
  t.style.top = (ev.clientY + 14) + 'px';
}

// ---- overview ------------------------------------------------------------

function ovGeom() {
  const c = $('ov-canvas'), r = runInfo.run;
  const L = 60, T = 30;
  const cw = Math.max(8, Math.min(48, (c.width - L - 10) / r.heads));
  const ch = Math.max(6, Math.min(32, (c.height - T - 10) / r.layers));
  return { c, L, T, cw, ch };
}

function drawOverview() {
  if (!runInfo) return;
  const g = ovGeom(), ctx = g.c.getContext('2d'), r = runInfo.run;
  ctx.clearRect(0, 0, g.c.width, g.c.height);
  const max = Math.max(1, ...runInfo.list.map((h) => h[3]));
  ctx.fillStyle = '#1f1f1f'; ctx.font = '11px DejaVu Sans';
  ctx.textAlign = 'center';
  for (let h = 0; h < r.heads; h++) ctx.fillText('h' + h, g.L + (h + 0.5) * g.cw, g.T - 8);
  ctx.textAlign = 'right';
  for (let l = 0; l < r.layers; l++) ctx.fillText('layer ' + l, g.L - 6, g.T + (l + 0.7) * g.ch);
  const sel = new Set(S.heads.map((h) => h[0] + '.' + h[1]));
  for (const [l, h, cape, n] of runInfo.list) {
    const x = g.L + h * g.cw, y = g.T + l * g.ch;
    ctx.fillStyle = 'rgba(0, 114, 178, ' + (0.15 + 0.85 * n / max) + ')';
    ctx.fillRect(x + 1, y + 1, g.cw - 2, g.ch - 2);
    if (cape) { ctx.strokeStyle = '#d55e00'; ctx.lineWidth = 2; ctx.beginPath();
      ctx.arc(x + g.cw / 2, y + g.ch / 2, Math.min(g.cw, g.ch) / 3, 0, 2 * Math.PI); ctx.stroke(); }
    if (sel.has(l + '.' + h)) { ctx.strokeStyle = '#000'; ctx.lineWidth = 2; ctx.strokeRect(x + 1, y + 1, g.cw - 2, g.ch - 2); }
  }
}

function ovHit(ev) {
  if (!runInfo) return null;
  const g = ovGeom(), b = g.c.getBoundingClientRect();
  const h = Math.floor((ev.clientX - b.left - g.L) / g.cw), l = Math.floor((ev.clientY - b.top - g.T) / g.ch);
  return runInfo.list.find((e) => e[0] === l && e[1] === h) || null;
}

// ---- trace ---------------------------------------------------------------

const MARGIN = { l: 56, r: 8, t: 6, ribbon: 34 };

function colors() {
  const p = info.palette;
  return S.palette === 'paper' ? [p.paper_write, p.paper_read] : [p.write, p.read];
}
function rgba(hex, a) {
  const n = parseInt(hex.slice(1), 16);
  return 'rgba(' + (n >> 16) + ',' + ((n >> 8) & 255) + ',' + (n & 255) + ',' + a.toFixed(3) + ')';
}

function clampView() {
  const r = runInfo.run, n = Math.max(1, r.tokens);
  if (!(S.p1 > S.p0)) { S.p0 = 0; S.p1 = n; }
  if (!(S.s1 > S.s0)) { S.s0 = 0; S.s1 = r.M; }
  const pw = Math.min(n, Math.max(8, S.p1 - S.p0)), sw = Math.min(r.M, Math.max(4, S.s1 - S.s0));
  S.p0 = Math.max(0, Math.min(n - pw, S.p0)); S.p1 = S.p0 + pw;
  S.s0 = Math.max(0, Math.min(r.M - sw, S.s0)); S.s1 = S.s0 + sw;
}

function traceGeom() {
  const c = $('trace-canvas'), n = Math.max(1, S.heads.length);
  const pw = c.width - MARGIN.l - MARGIN.r;
  const ph = (c.height - MARGIN.t - MARGIN.ribbon) / n;
  return { c, pw, ph, n, x0: MARGIN.l };
}
const posToX = (g, p) => g.x0 + (p - S.p0) / (S.p1 - S.p0) * g.pw;
const xToPos = (g, x) => S.p0 + (x - g.x0) / g.pw * (S.p1 - S.p0);
const slotToY = (g, i, s) => MARGIN.t + i * g.ph + 14 + (s - S.s0) / (S.s1 - S.s0) * (g.ph - 18);
const yToSlot = (g, i, y) => S.s0 + (y - MARGIN.t - i * g.ph - 14) / (g.ph - 18) * (S.s1 - S.s0);

// The zoom level whose columns are at most a pixel wide.
function level(g) {
  const ppp = (S.p1 - S.p0) / g.pw;
  return ppp <= 1 ? 0 : Math.min(40, Math.ceil(Math.log2(ppp)));
}

function tileKey(l, h, z, t) { return S.run + '/' + l + '.' + h + '/' + z + '/' + t; }

function getTile(l, h, z, t) {
  const k = tileKey(l, h, z, t);
  let e = tiles.get(k);
  if (e) return e;
  e = { state: 'loading' };
  tiles.set(k, e);
  if (tiles.size > 400) tiles.delete(tiles.keys().next().value);
  api('/api/tile', { run: S.run, layer: l, head: h, z, t }).then((d) => {
    e.data = d;
    if (d.grid) e.grid = Uint8Array.from(atob(d.grid), (ch) => ch.charCodeAt(0));
    else { let m = 0; for (let i = 5; i < d.ev.length; i += 6) m = Math.max(m, d.ev[i]); e.wmax = m || 1; }
    e.state = 'ok';
    scheduleDraw();
  }).catch((err) => { e.state = 'err'; status(err.message); scheduleDraw(); });
  return e;
}

let drawPending = false;
function scheduleDraw() {
  if (drawPending) return;
  drawPending = true;
  requestAnimationFrame(() => { drawPending = false; if (S.view === 'trace') drawTrace(); });
}

function getTokens(p) {
  const b = Math.floor(p / TOKEN_BLOCK), k = S.run + '/' + b;
  let e = tokBlocks.get(k);
  if (!e) {
    e = { state: 'loading', tokens: new Map() };
    tokBlocks.set(k, e);
    api('/api/tokens', { run: S.run, b }).then((d) => {
      for (const [pos, , , piece] of d.tokens) e.tokens.set(pos, piece);
      e.state = 'ok';
      scheduleDraw();
    }).catch((err) => { e.state = 'err'; status(err.message); });
  }
  return e.tokens.get(p);
}

function drawTrace() {
  if (!runInfo || !info) return;
  clampView();
  const g = traceGeom(), ctx = g.c.getContext('2d');
  const [wc, rc] = colors();
  ctx.clearRect(0, 0, g.c.width, g.c.height);
  const z = level(g), span = TILE_COLS * 2 ** z;
  const t0 = Math.floor(S.p0 / span), t1 = Math.floor((Math.min(S.p1, runInfo.run.tokens) - 1) / span);
  const cw = g.pw / (S.p1 - S.p0), sh = (g.ph - 18) / (S.s1 - S.s0);
  let loading = 0;
  S.heads.forEach(([l, h], i) => {
    const top = MARGIN.t + i * g.ph;
    ctx.fillStyle = '#1f1f1f'; ctx.font = '11px DejaVu Sans'; ctx.textAlign = 'left';
    const cape = runInfo.list.find((e) => e[0] === l && e[1] === h);
    ctx.fillText('layer ' + l + ' head ' + h + (cape && cape[2] ? ' (CAPE)' : '') + (cape ? '' : ' (not traced)'), g.x0, top + 10);
    ctx.save();
    ctx.beginPath(); ctx.rect(g.x0, top + 14, g.pw, g.ph - 18); ctx.clip();
    ctx.fillStyle = '#fafafa'; ctx.fillRect(g.x0, top + 14, g.pw, g.ph - 18);
    for (let t = t0; t <= t1 && cape; t++) {
      const e = getTile(l, h, z, t);
      if (e.state !== 'ok') { loading++; continue; }
      const d = e.data;
      if (!e.grid) {
        const ev = d.ev;
        for (let k = 0; k < ev.length; k += 6) {
          const p = ev[k], s = ev[k + 1];
          if (p < S.p0 - 1 || p > S.p1 || s < S.s0 - 1 || s > S.s1) continue;
          ctx.fillStyle = rgba(ev[k + 2] ? rc : wc, 0.25 + 0.75 * ev[k + 5] / e.wmax);
          ctx.fillRect(posToX(g, p), slotToY(g, i, s), Math.max(1, cw), Math.max(1, sh));
        }
      } else {
        const rows = d.rows, bw = d.bin * cw, bh = d.sbin * sh;
        const c0 = Math.max(0, Math.floor((S.p0 - d.p0) / d.bin)), c1 = Math.min(TILE_COLS, Math.ceil((S.p1 - d.p0) / d.bin));
        const r0 = Math.max(0, Math.floor(S.s0 / d.sbin)), r1 = Math.min(rows, Math.ceil(S.s1 / d.sbin));
        for (let c = c0; c < c1; c++) {
          const x = posToX(g, d.p0 + c * d.bin);
          for (let r = r0; r < r1; r++) {
            const v = e.grid[c * rows + r];
            if (!v) continue;
            const read = v >= 128, lv = (v & 127) - 1;
            ctx.fillStyle = rgba(read ? rc : wc, 0.25 + 0.75 * lv / 126);
            ctx.fillRect(x, slotToY(g, i, r * d.sbin), Math.max(1, bw), Math.max(1, bh));
          }
        }
      }
    }
    const fg = runInfo.first_generated;
    if (fg > 0 && fg > S.p0 && fg < S.p1) {
      ctx.strokeStyle = '#555'; ctx.setLineDash([4, 3]); ctx.beginPath();
      ctx.moveTo(posToX(g, fg), top + 14); ctx.lineTo(posToX(g, fg), top + g.ph - 4); ctx.stroke(); ctx.setLineDash([]);
    }
    ctx.restore();
    ctx.fillStyle = '#1f1f1f'; ctx.textAlign = 'right';
    ctx.fillText(String(Math.round(S.s0)), g.x0 - 4, top + 24);
    ctx.fillText(String(Math.round(S.s1)), g.x0 - 4, top + g.ph - 4);
    ctx.save(); ctx.translate(12, top + g.ph / 2); ctx.rotate(-Math.PI / 2); ctx.textAlign = 'center';
    ctx.fillText('slot', 0, 0); ctx.restore();
  });
  drawRibbon(g, ctx, cw);
  status(loading ? 'loading ' + loading + ' tile(s)…' : '');
  $('trace-canvas').dataset.level = z;
  $('trace-canvas').dataset.loading = loading;
}

// The strip under the panels: token text when there is room, else
// position ticks; clicking it selects a position.
function drawRibbon(g, ctx, cw) {
  const y = g.c.height - MARGIN.ribbon;
  ctx.fillStyle = '#f2f2f2'; ctx.fillRect(g.x0, y + 2, g.pw, MARGIN.ribbon - 4);
  ctx.fillStyle = '#1f1f1f'; ctx.font = '11px DejaVu Sans'; ctx.textAlign = 'center';
  if (cw >= 14) {
    for (let p = Math.ceil(S.p0); p < S.p1; p++) {
      const piece = getTokens(p);
      if (piece === undefined) continue;
      const x = posToX(g, p + 0.5);
      ctx.save(); ctx.beginPath(); ctx.rect(posToX(g, p), y, cw, MARGIN.ribbon); ctx.clip();
      ctx.fillText(piece, x, y + 14); ctx.fillStyle = '#888'; ctx.fillText(String(p), x, y + 27); ctx.restore();
    }
  } else {
    const span = S.p1 - S.p0;   // ticks at 1, 2 or 5 x 10^k, at most 10 of them
    let step = 10 ** Math.max(0, Math.floor(Math.log10(span / 10)));
    for (const m of [1, 2, 5, 10]) if (span / (step * m) <= 10) { step *= m; break; }
    for (let p = Math.ceil(S.p0 / step) * step; p < S.p1; p += step) ctx.fillText(String(p), posToX(g, p), y + 20);
  }
  ctx.textAlign = 'left'; ctx.fillStyle = '#666';
  ctx.fillText('position', 4, y + 20);
}

// What is under the mouse: {i, l, h, pos, slot} or {ribbon, pos}.
function traceHit(ev) {
  const g = traceGeom(), b = g.c.getBoundingClientRect();
  const x = (ev.clientX - b.left) * g.c.width / b.width, y = (ev.clientY - b.top) * g.c.height / b.height;
  if (x < g.x0 || x > g.x0 + g.pw) return null;
  const pos = Math.floor(xToPos(g, x));
  if (y >= g.c.height - MARGIN.ribbon) return { ribbon: true, pos };
  const i = Math.floor((y - MARGIN.t) / g.ph);
  if (i < 0 || i >= S.heads.length) return null;
  const slot = Math.floor(yToSlot(g, i, y));
  if (slot < S.s0 || slot >= S.s1) return null;
  return { i, l: S.heads[i][0], h: S.heads[i][1], pos, slot, g, x, y };
}

// The event nearest to a hit on a zoomed-in tile (within 3 px).
function nearestEvent(hit) {
  const g = hit.g, z = level(g);
  if (z !== 0) return null;
  const e = tiles.get(tileKey(hit.l, hit.h, 0, Math.floor(hit.pos / TILE_COLS)));
  if (!e || e.state !== 'ok') return null;
  const cw = g.pw / (S.p1 - S.p0), sh = (g.ph - 18) / (S.s1 - S.s0);
  let best = null, bd = 1e9;
  const ev = e.data.ev;
  for (let k = 0; k < ev.length; k += 6) {
    const dx = Math.abs(posToX(g, ev[k]) + cw / 2 - hit.x), dy = Math.abs(slotToY(g, hit.i, ev[k + 1]) + sh / 2 - hit.y);
    const d = Math.max(dx - cw / 2, 0) + Math.max(dy - sh / 2, 0);
    if (d < bd && d <= 3) { bd = d; best = ev.slice(k, k + 6); }
  }
  return best;
}

function hoverTrace(ev) {
  const hit = traceHit(ev);
  if (!hit) return tip(ev, null);
  const piece = getTokens(hit.pos);
  if (hit.ribbon) return tip(ev, ['position ' + hit.pos, 'token ' + JSON.stringify(piece === undefined ? '' : piece), 'click: every head at this position']);
  const e = nearestEvent(hit);
  if (e) {
    const tok = getTokens(e[0]);
    return tip(ev, ['layer ' + hit.l + ' head ' + hit.h, 'position ' + e[0] + '  token ' + JSON.stringify(tok === undefined ? '' : tok),
      (e[2] ? 'read' : 'write') + '  slot ' + e[1] + '  address ' + e[4], 'rank ' + e[3] + '  weight ' + e[5]]);
  }
  const z = level(hit.g);
  if (z > 0) {
    const bin = 2 ** z, p0 = Math.floor(hit.pos / bin) * bin;
    return tip(ev, ['layer ' + hit.l + ' head ' + hit.h, 'positions ' + p0 + '–' + (p0 + bin - 1) + '  slot ' + hit.slot,
      'zoomed out: ' + bin + ' positions a column (the strongest event drawn)', 'zoom in for single events']);
  }
  tip(ev, ['layer ' + hit.l + ' head ' + hit.h, 'position ' + hit.pos + '  token ' + JSON.stringify(piece === undefined ? '' : piece), 'slot ' + hit.slot]);
}

function detailsTitle(text) { const h = document.createElement('h3'); h.textContent = text; return h; }

async function showSlot(l, h, slot) {
  S.slot = [l, h, slot]; S.pos = null; saveState();
  const d = await api('/api/slot', { run: S.run, layer: l, head: h, slot });
  const box = $('details');
  box.replaceChildren(detailsTitle('layer ' + l + ' head ' + h + ' slot ' + slot));
  for (const [name, list, n] of [['writers', d.writes, d.n_writes], ['readers', d.reads, d.n_reads]]) {
    box.appendChild(detailsTitle(name + ' (' + n + (n > list.length ? ', first ' + list.length + ' shown' : '') + ')'));
    const t = document.createElement('table'); t.className = 'data'; t.id = 'slot-' + name;
    fillTable(t, ['pos', 'token', 'rank', 'weight', 'address'], list.map((a) => [a.pos, a.tok, a.rank, a.w, a.addr]),
      (i) => { S.p0 = list[i].pos - 32; S.p1 = list[i].pos + 32; saveState(); drawTrace(); });
    box.appendChild(t);
  }
}

async function showPos(pos) {
  S.pos = pos; S.slot = null; saveState();
  const d = await api('/api/pos', { run: S.run, pos });
  const by = new Map();
  for (let k = 0; k < d.ev.length; k += 7) {
    const key = d.ev[k] + '.' + d.ev[k + 1];
    if (!by.has(key)) by.set(key, [[], []]);
    by.get(key)[d.ev[k + 2]].push(d.ev[k + 4]);
  }
  const box = $('details');
  box.replaceChildren(detailsTitle('position ' + pos + ' token ' + JSON.stringify(d.tok)));
  const t = document.createElement('table'); t.className = 'data'; t.id = 'pos-table';
  fillTable(t, ['head', 'wrote slots', 'read slots'], [...by].map(([k, [w, r]]) => [k, w.join(' '), r.join(' ')]));
  box.appendChild(t);
}

// ---- miss-ratio curve ----------------------------------------------------

function fillMrcScope() {
  const sel = $('mrc-scope');
  sel.replaceChildren();
  const add = (v, text) => { const o = document.createElement('option'); o.value = v; o.textContent = text; sel.appendChild(o); };
  add('all', 'one LRU cache per head, every traced head (misses summed)');
  for (const [l, h] of S.heads) add(l + '.' + h, 'layer ' + l + ' head ' + h);
  sel.value = S.mrc;
  if (sel.value !== S.mrc) { S.mrc = 'all'; sel.value = 'all'; }
}

let mrcData = null;
async function drawMrc() {
  if (!runInfo) return;
  const params = { run: S.run };
  if (S.mrc !== 'all') { const [l, h] = S.mrc.split('.'); params.layer = l; params.head = h; }
  status('computing the curve…');
  mrcData = await api('/api/mrc', params);
  status('');
  $('mrc-note').textContent = mrcData.accesses.toLocaleString('en') + ' accesses, ' + mrcData.caches + ' cache(s), ' +
    mrcData.cold.toLocaleString('en') + ' cold misses';
  const c = $('mrc-canvas'), ctx = c.getContext('2d'), m = mrcGeom();
  ctx.clearRect(0, 0, c.width, c.height);
  ctx.strokeStyle = '#888'; ctx.strokeRect(m.L, m.T, m.W, m.H);
  ctx.fillStyle = '#1f1f1f'; ctx.font = '12px DejaVu Sans'; ctx.textAlign = 'center';
  ctx.fillText('capacity (slots per cache)', m.L + m.W / 2, c.height - 8);
  for (let f = 0; f <= 4; f++) {
    ctx.textAlign = 'right'; ctx.fillText((f / 4).toFixed(2), m.L - 6, m.T + m.H * (1 - f / 4) + 4);
    ctx.textAlign = 'center'; ctx.fillText(String(Math.round(m.cmax * f / 4)), m.L + m.W * f / 4, m.T + m.H + 16);
  }
  ctx.save(); ctx.translate(14, m.T + m.H / 2); ctx.rotate(-Math.PI / 2); ctx.fillText('LRU miss ratio', 0, 0); ctx.restore();
  ctx.strokeStyle = colors()[1]; ctx.lineWidth = 2; ctx.beginPath();
  mrcData.capacity.forEach((cap, i) => {
    const x = m.L + m.W * cap / m.cmax, y = m.T + m.H * (1 - mrcData.miss_ratio[i]);
    if (i) ctx.lineTo(x, y); else ctx.moveTo(x, y);
  });
  ctx.stroke(); ctx.lineWidth = 1;
}
function mrcGeom() {
  const c = $('mrc-canvas');
  const cmax = mrcData && mrcData.capacity.length ? mrcData.capacity[mrcData.capacity.length - 1] : 1;
  return { L: 60, T: 10, W: c.width - 80, H: c.height - 50, cmax };
}

// ---- SQL -----------------------------------------------------------------

async function runSql() {
  S.q = $('sql-text').value; saveState();
  $('sql-msg').textContent = 'running…'; $('sql-msg').className = '';
  const t = $('sql-table');
  try {
    const d = await api('/api/sql', { run: S.run, q: S.q });
    const last = d.results.length ? d.results[d.results.length - 1] : { columns: [], rows: [] };
    fillTable(t, last.columns, last.rows.map((r) => last.columns.map((c) => r[c])));
    $('sql-msg').textContent = last.rows.length + ' row(s)' + (d.truncated ? ', cut at ' + d.max_rows : '');
  } catch (e) {
    t.replaceChildren();
    $('sql-msg').textContent = e.message; $('sql-msg').className = 'err';
  }
}

// ---- events --------------------------------------------------------------

function wire() {
  for (const b of document.querySelectorAll('nav button')) b.addEventListener('click', () => showView(b.dataset.view));
  const ov = $('ov-canvas');
  ov.addEventListener('mousemove', (ev) => {
    const e = ovHit(ev);
    tip(ev, e && ['layer ' + e[0] + ' head ' + e[1], e[3].toLocaleString('en') + ' events' + (e[2] ? ', CAPE' : '')]);
  });
  ov.addEventListener('mouseleave', (ev) => tip(ev, null));
  ov.addEventListener('click', (ev) => {
    const e = ovHit(ev);
    if (!e) return;
    const hh = [e[0], e[1]];
    if (ev.shiftKey) {
      const i = S.heads.findIndex((x) => x[0] === hh[0] && x[1] === hh[1]);
      if (i >= 0) S.heads.splice(i, 1); else S.heads.push(hh);
      saveState(); drawOverview();
    } else { S.heads = [hh]; fillMrcScope(); showView('trace'); }
  });
  const tc = $('trace-canvas');
  let drag = null;
  tc.addEventListener('mousedown', (ev) => { drag = { x: ev.clientX, y: ev.clientY, p0: S.p0, p1: S.p1, s0: S.s0, s1: S.s1, moved: false }; });
  window.addEventListener('mouseup', (ev) => {
    if (!drag) return;
    const d = drag; drag = null;
    if (d.moved) { saveState(); return; }
    const hit = traceHit(ev);
    if (!hit) return;
    if (hit.ribbon) showPos(hit.pos).catch((e) => status(e.message));
    else showSlot(hit.l, hit.h, hit.slot).catch((e) => status(e.message));
  });
  tc.addEventListener('mousemove', (ev) => {
    if (drag && (Math.abs(ev.clientX - drag.x) > 3 || Math.abs(ev.clientY - drag.y) > 3)) drag.moved = true;
    if (drag && drag.moved) {
      const g = traceGeom();
      const dp = (ev.clientX - drag.x) / g.pw * (drag.p1 - drag.p0);
      const ds = (ev.clientY - drag.y) / (g.ph - 18) * (drag.s1 - drag.s0);
      S.p0 = drag.p0 - dp; S.p1 = drag.p1 - dp; S.s0 = drag.s0 - ds; S.s1 = drag.s1 - ds;
      tip(ev, null); scheduleDraw(); return;
    }
    hoverTrace(ev);
  });
  tc.addEventListener('mouseleave', (ev) => tip(ev, null));
  tc.addEventListener('wheel', (ev) => {
    ev.preventDefault();
    const g = traceGeom(), hit = traceHit(ev), f = ev.deltaY > 0 ? 1.25 : 0.8;
    if (ev.shiftKey && hit && !hit.ribbon) {
      const s = yToSlot(g, hit.i, hit.y);
      S.s0 = s - (s - S.s0) * f; S.s1 = s + (S.s1 - s) * f;
    } else {
      const b = tc.getBoundingClientRect(), p = xToPos(g, (ev.clientX - b.left) * tc.width / b.width);
      S.p0 = p - (p - S.p0) * f; S.p1 = p + (S.p1 - p) * f;
    }
    scheduleDraw(); saveState();
  }, { passive: false });
  $('reset-zoom').addEventListener('click', () => { S.p0 = S.p1 = S.s0 = S.s1 = 0; saveState(); drawTrace(); });
  $('heads-input').addEventListener('change', () => { S.heads = parseHeads($('heads-input').value); fillMrcScope(); saveState(); drawTrace(); });
  $('palette-select').addEventListener('change', () => { S.palette = $('palette-select').value; saveState(); drawTrace(); });
  $('mrc-scope').addEventListener('change', () => { S.mrc = $('mrc-scope').value; saveState(); drawMrc().catch((e) => status(e.message)); });
  const mc = $('mrc-canvas');
  mc.addEventListener('mousemove', (ev) => {
    if (!mrcData) return;
    const m = mrcGeom(), b = mc.getBoundingClientRect();
    const cap = (ev.clientX - b.left - m.L) / m.W * m.cmax;
    let i = mrcData.capacity.findIndex((c) => c >= cap);
    if (i < 0) return tip(ev, null);
    tip(ev, ['capacity ' + mrcData.capacity[i] + ' slots', 'miss ratio ' + mrcData.miss_ratio[i].toFixed(4)]);
  });
  mc.addEventListener('mouseleave', (ev) => tip(ev, null));
  $('sql-run').addEventListener('click', runSql);
  $('sql-text').addEventListener('keydown', (ev) => { if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) runSql(); });
}

async function main() {
  wire();
  loadState();
  try {
    info = await api('/api/info');
    $('trace-name').textContent = info.trace;
    $('palette-select').value = S.palette;
    await selectRun(S.run);
    showView(S.view);
    if (S.view === 'trace' && S.slot) await showSlot(...S.slot);
    else if (S.view === 'trace' && S.pos !== null) await showPos(S.pos);
    document.body.dataset.ready = '1';
  } catch (e) {
    status(e.message);
    document.body.dataset.ready = 'error';
  }
}

main();
