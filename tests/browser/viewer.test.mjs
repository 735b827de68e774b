// viewer.test.mjs — `ramtrace serve` in a real browser: traces a prompt
// holding markup and quotes with samples/kjv.bin, serves it, drives
// Debian's headless chromium through puppeteer-core, and checks what is
// drawn (canvas pixels in the plot palettes) and shown (tooltips, tables),
// that markup from the trace stays text, and that the URL carries the
// view.  With --screenshots DIR it saves a PNG of each view there.
//   RAMTRACE_BIN=build/ramtrace node tests/browser/viewer.test.mjs [--screenshots docs/img]
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import puppeteer from 'puppeteer-core';

const bin = path.resolve(process.env.RAMTRACE_BIN || 'ramtrace');
const shotIdx = process.argv.indexOf('--screenshots');
const shots = shotIdx > 0 ? path.resolve(process.argv[shotIdx + 1]) : null;
const chromium = process.env.CHROMIUM || '/usr/bin/chromium';
const NAME = '<script>window.__xss = 1</script> "quoted" & \'single\'';
const PROMPT = 'In the beginning <b>God</b> created "the heaven" & the earth. <script>window.__xss=2</script>\n';

let failures = 0, checks = 0;
function check(ok, what) {
  checks++;
  if (!ok) { failures++; console.log('browser test: FAIL: ' + what); }
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rt-browser-'));
const prompt = path.join(dir, 'prompt.txt'), db = path.join(dir, 'viewer.db');
fs.writeFileSync(prompt, PROMPT);
// run 1: 6,000 positions, so the zoomed-out view bins them (tiles of level > 0)
const long = path.join(dir, 'long.txt');
fs.writeFileSync(long, PROMPT.repeat(Math.ceil(6000 / PROMPT.length)).slice(0, 6000));
execFileSync(bin, ['trace', 'samples/kjv.bin', long, '-o', db, '--name', 'long', '-j', '1'], { stdio: 'pipe' });
// run 2 (the latest, opened first): the prompt with markup and quotes
execFileSync(bin, ['trace', 'samples/kjv.bin', prompt, '-o', db, '--name', NAME, '-j', '1'], { stdio: 'pipe' });

const server = spawn(bin, ['serve', db, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
let serverErr = '';
server.stderr.on('data', (d) => { serverErr += d; });
const url = await new Promise((resolve, reject) => {
  let out = '';
  server.stdout.on('data', (d) => {
    out += d;
    const m = /(http:\/\/127\.0\.0\.1:\d+\/)/.exec(out);
    if (m) resolve(m[1]);
  });
  server.on('exit', (c) => reject(new Error('serve exited ' + c + ': ' + serverErr)));
  setTimeout(() => reject(new Error('serve printed no URL')), 10000);
});

const browser = await puppeteer.launch({
  executablePath: chromium, headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--font-render-hinting=none'],
});
let code = 1;
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 760 });
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));
  const ready = () => page.waitForFunction(() => document.body.dataset.ready, { timeout: 20000 });
  const shot = async (name) => { if (shots) await page.screenshot({ path: path.join(shots, name) }); };
  const tilesLoaded = () => page.waitForFunction(
    () => $('trace-canvas').dataset.loading === '0', { timeout: 20000 });
  // Pixels of a canvas near the write and read colours of the palette.
  const palettePixels = (id) => page.evaluate((id) => {
    const c = document.getElementById(id), d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let w = 0, r = 0;
    for (let i = 0; i < d.length; i += 4) {
      const R = d[i], G = d[i + 1], B = d[i + 2];
      if (R - B > 60 && R > G) w++;          // vermilion #d55e00 over white
      if (B - R > 60 && B > G) r++;          // blue #0072b2 over white
    }
    return { w, r };
  }, id);

  // runs: the run name is shown as text
  await page.goto(url);
  await ready();
  check(await page.evaluate(() => document.body.dataset.ready) === '1', 'page ready');
  const names = await page.$$eval('#runs-table tbody tr', (rows) => rows.map((r) => r.cells[1].textContent));
  check(names.length === 2 && names[1] === NAME, 'run list shows the name as text: ' + JSON.stringify(names));
  await shot('viewer-runs.png');

  // overview: a cell per head, drawn in blue
  await page.click('nav button[data-view=overview]');
  const ov = await page.evaluate(() => {
    const g = ovGeom(), d = g.c.getContext('2d').getImageData(g.L + g.cw / 2 + 3, g.T + g.ch / 2 + 3, 1, 1).data;
    return [...d];
  });
  check(ov[2] > 150 && ov[0] < 200, 'overview cell of layer 0 head 0 is blue: ' + ov);
  await page.mouse.move(0, 0);
  const ovBox = await page.$eval('#ov-canvas', (c) => { const b = c.getBoundingClientRect(); return [b.left, b.top]; });
  const cell = await page.evaluate(() => { const g = ovGeom(); return [g.L + 2.5 * g.cw, g.T + 1.5 * g.ch]; });
  await page.mouse.move(ovBox[0] + cell[0], ovBox[1] + cell[1]);
  const ovTip = await page.$eval('#tooltip', (t) => t.textContent);
  check(/layer 1 head 2/.test(ovTip) && /events/.test(ovTip), 'overview tooltip: ' + ovTip);
  await shot('viewer-overview.png');

  // trace of the head clicked: both colours drawn
  await page.mouse.click(ovBox[0] + cell[0], ovBox[1] + cell[1]);
  await tilesLoaded();
  check(/view=trace/.test(page.url()) && /heads=1\.2/.test(page.url()), 'URL carries the trace view: ' + page.url());
  const px = await palettePixels('trace-canvas');
  check(px.w > 50 && px.r > 50, 'trace canvas holds writes and reads: ' + JSON.stringify(px));
  await shot('viewer-trace.png');

  // several heads, zoomed in, from the URL alone
  await page.goto(url + '#view=trace&heads=0.0,1.2,3.3&p0=0&p1=48');
  await page.reload();
  await ready();
  await tilesLoaded();
  await page.waitForFunction(() => tokBlocks.size > 0 && [...tokBlocks.values()].every((b) => b.state === 'ok'));
  check(await page.$eval('#heads-input', (i) => i.value) === '0.0,1.2,3.3', 'heads restored from the URL');
  // hover one event: find it on the page's own geometry
  const target = await page.evaluate(() => {
    const t = tiles.get(tileKey(1, 2, 0, 0)), ev = t.data.ev;
    let k = 0;
    while (k < ev.length && ev[k] < 20) k += 6;   // an event past the first positions
    S.s0 = ev[k + 1] - 8; S.s1 = ev[k + 1] + 8;   // slots zoomed so one slot is many pixels
    drawTrace();
    const g = traceGeom(), b = g.c.getBoundingClientRect();
    return { x: b.left + posToX(g, ev[k]) + 2, y: b.top + slotToY(g, 1, ev[k + 1]) + 2,
      pos: ev[k], slot: ev[k + 1], op: ev[k + 2], piece: tokBlocks.get(S.run + '/0').tokens.get(ev[k]) };
  });
  await page.mouse.move(target.x, target.y);
  const tipText = await page.$eval('#tooltip', (t) => t.textContent);
  check(tipText.includes('position ' + target.pos) && tipText.includes('slot ' + target.slot) &&
        tipText.includes('weight') && tipText.includes('rank') && tipText.includes('address') &&
        tipText.includes(JSON.stringify(target.piece)), 'event tooltip: ' + JSON.stringify(tipText) + ' for ' + JSON.stringify(target));
  // the token strip shows the markup characters of the prompt as text
  const ribbonPos = await page.evaluate(() =>
    [...tokBlocks.get(S.run + '/0').tokens].find(([, piece]) => piece === '<')[0]);
  const rb = await page.evaluate((p) => {
    const g = traceGeom(), b = g.c.getBoundingClientRect();
    return { x: b.left + posToX(g, p + 0.5), y: b.top + g.c.height - 20 };
  }, ribbonPos);
  await page.mouse.move(rb.x, rb.y);
  const rbTip = await page.$eval('#tooltip', (t) => t.textContent);
  check(rbTip.includes('position ' + ribbonPos) && rbTip.includes('"<"'), 'token strip tooltip: ' + JSON.stringify(rbTip));
  // click the event: its slot's writers and readers
  await page.mouse.click(target.x, target.y);
  await page.waitForSelector('#slot-writers tbody tr, #slot-readers tbody tr');
  const slotRows = await page.$$eval('#slot-writers tbody tr, #slot-readers tbody tr',
    (rows) => rows.map((r) => [...r.cells].map((c) => c.textContent)));
  check(slotRows.some((r) => r[0] === String(target.pos)), 'slot lists the hovered event\'s position');
  check(/slot=1\.2\./.test(page.url()), 'URL carries the slot: ' + page.url());
  await shot('viewer-slot.png');
  // click a position on the strip: every traced head there
  await page.mouse.click(rb.x, rb.y);
  await page.waitForSelector('#pos-table tbody tr');
  const posRows = await page.$$eval('#pos-table tbody tr', (rows) => rows.length);
  check(posRows === 16, 'position lists all 16 heads: ' + posRows);
  const posTitle = await page.$eval('#details h3', (h) => h.textContent);
  check(posTitle.includes('"<"'), 'position title shows the token as text: ' + posTitle);
  await shot('viewer-position.png');
  // zooming with the wheel changes the level's span
  const before = await page.evaluate(() => S.p1 - S.p0);
  await page.mouse.move(target.x, target.y);
  await page.mouse.wheel({ deltaY: -300 });
  const after = await page.evaluate(() => S.p1 - S.p0);
  check(after < before, 'wheel zooms in: ' + before + ' -> ' + after);

  // miss-ratio curve drawn
  await page.click('nav button[data-view=mrc]');
  await page.waitForFunction(() => $('mrc-note').textContent.includes('accesses'), { timeout: 20000 });
  const mpx = await palettePixels('mrc-canvas');
  check(mpx.r > 100, 'miss-ratio curve drawn: ' + JSON.stringify(mpx));
  await shot('viewer-mrc.png');

  // SQL: a result table, markup as text, an error as one line
  await page.click('nav button[data-view=sql]');
  await page.$eval('#sql-text', (t) => { t.value = 'SELECT name, 1 AS one FROM runs_this'; });
  await page.click('#sql-run');
  await page.waitForFunction(() => $('sql-msg').textContent.includes('row'));
  const cellText = await page.$eval('#sql-table tbody td', (td) => td.textContent);
  check(cellText === NAME, 'SQL cell shows the name as text: ' + cellText);
  await shot('viewer-sql.png');
  await page.$eval('#sql-text', (t) => { t.value = 'SELECT nope FROM nowhere'; });
  await page.click('#sql-run');
  await page.waitForFunction(() => $('sql-msg').className === 'err');
  check(/no such table/.test(await page.$eval('#sql-msg', (m) => m.textContent)), 'SQL error shown');
  await page.$eval('#sql-text', (t) => { t.value = 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c'; });
  await page.click('#sql-run');
  await page.waitForFunction(() => $('sql-msg').textContent.includes('row'));
  check(/cut at 1000/.test(await page.$eval('#sql-msg', (m) => m.textContent)), 'SQL rows capped');
  check(/q=WITH/.test(page.url()), 'URL carries the SQL');

  // zoomed out over the long run: binned tiles, both colours drawn
  await page.goto(url + '#view=trace&run=1&heads=1.2,2.1');
  await page.reload();
  await ready();
  await tilesLoaded();
  const lvl = await page.$eval('#trace-canvas', (c) => +c.dataset.level);
  check(lvl >= 2, 'the long run is drawn from binned tiles: level ' + lvl);
  const bpx = await palettePixels('trace-canvas');
  check(bpx.w > 500 && bpx.r > 500, 'binned tiles hold writes and reads: ' + JSON.stringify(bpx));
  await shot('viewer-zoomed-out.png');

  // nothing from the trace ran as script
  check(await page.evaluate(() => window.__xss) === undefined, 'no script from the trace ran');
  check(await page.evaluate(() => document.querySelectorAll('script').length) === 1, 'no script element was added');
  check(await page.evaluate(() => document.querySelectorAll('main b').length) === 0, 'no markup element from the trace');
  check(pageErrors.length === 0, 'no page errors: ' + pageErrors.join('; '));
  code = failures ? 1 : 0;
} catch (e) {
  console.log('browser test: FAIL: ' + e.message);
} finally {
  await browser.close();
  const exited = new Promise((r) => server.on('exit', (c, sig) => r([c, sig])));
  server.kill('SIGINT');
  const [status, sig] = await exited;
  // Ctrl-C stops the server cleanly (under ASan also: nothing leaked)
  check(status === 0, 'serve exits 0 on SIGINT: ' + status + ' ' + sig + ' ' + serverErr.slice(-2000));
  if (status !== 0) code = 1;
  fs.rmSync(dir, { recursive: true, force: true });
}
console.log('browser test: ' + (checks - failures) + ' of ' + checks + ' checks passed');
process.exit(code);
