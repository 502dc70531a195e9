// The attention viewer's page (src/inspect/attention_view.html, as written by
// inspect::write_attention_view) in a real browser: Debian's chromium driven by puppeteer-core.
//
//   node tests/browser/view_test.mjs VIEW.html EXPECTED.json [SCREENSHOT.png]
//   node tests/browser/view_test.mjs VIEW.html - [SCREENSHOT.png]     (every check but the values)
//
// EXPECTED.json holds the float patterns captured before quantisation:
//   {"groups": [{"name", "T", "examples": n, "models": [{"name", "layers", "heads",
//                "patterns": [example][layer][head][T*T]}]}]}
// Exit code: 0 all checks passed, 1 a check failed (each printed as "FAIL: ..."),
// 77 skipped (no chromium at /usr/bin/chromium or $CHROMIUM).
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import puppeteer from 'puppeteer-core';

const STEP = 1 / 65535 + 1e-9;  // one quantisation step
const OVERALL_TIMEOUT_MS = 60000;

const [viewArg, expectedArg, shotArg] = process.argv.slice(2);
if (!viewArg || !expectedArg) {
  console.log('usage: node tests/browser/view_test.mjs VIEW.html EXPECTED.json [SCREENSHOT.png]');
  process.exit(1);
}
const chromium = process.env.CHROMIUM || '/usr/bin/chromium';
if (!fs.existsSync(chromium)) {
  console.log(`SKIPPED: no chromium at ${chromium} (install Debian's chromium or set $CHROMIUM)`);
  process.exit(77);
}

// ---- checks: each named, counted, and printed when it fails ----------------
let passed = 0;
const failures = [];
function check(ok, failMessage) {
  if (ok) {
    passed++;
  } else {
    failures.push(failMessage);
    console.log(`FAIL: ${failMessage}`);
  }
  return ok;
}

let browser = null;
const watchdog = setTimeout(() => {
  console.log(`FAIL: the test did not finish within ${OVERALL_TIMEOUT_MS / 1000} s`);
  if (browser && browser.process()) browser.process().kill('SIGKILL');
  process.exit(1);
}, OVERALL_TIMEOUT_MS);

const maxAbsDiff = (a, b) => {
  if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return Infinity;
  let d = 0;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i] - b[i]));
  return d;
};
const fmt = (x) => (x === Infinity ? 'a length mismatch' : x.toPrecision(3));

async function main() {
  const viewPath = path.resolve(viewArg);
  // '-': no captured values to compare (a page written elsewhere, e.g. heads_compare's view.html).
  const expected = expectedArg === '-' ? { groups: [] } : JSON.parse(fs.readFileSync(expectedArg, 'utf8'));

  browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu', '--no-first-run', '--allow-file-access-from-files'],
    timeout: 30000,
  });
  const page = await browser.newPage();
  page.setDefaultTimeout(15000);
  await page.setViewport({ width: 1400, height: 900 });

  // ---- 1. loads offline, requests nothing, logs nothing ----------------------
  const external = [];
  const consoleProblems = [];
  page.on('console', (msg) => {
    if (['error', 'warn', 'warning', 'assert'].includes(msg.type()))
      consoleProblems.push(`${msg.type()}: ${msg.text()}`);
  });
  page.on('pageerror', (err) => consoleProblems.push(`pageerror: ${err.message || err}`));
  await page.setOfflineMode(true);
  await page.setRequestInterception(true);
  page.on('request', (req) => {
    const url = req.url();
    if (/^(file|data|about):/.test(url)) {
      req.continue();
    } else {
      external.push(url);
      req.abort();
    }
  });
  await page.goto(pathToFileURL(viewPath).href, { waitUntil: 'load' });
  let ready = false;
  try {
    await page.waitForFunction(() => window.headgradView && window.headgradView.ready === true,
                               { timeout: 10000 });
    ready = true;
  } catch (e) {
    /* reported below */
  }
  check(ready, 'window.headgradView.ready did not become true within 10 s');
  check(external.length === 0, `the page requested ${external.length} non-file URL(s): ${external.join(', ')}`);
  check(consoleProblems.length === 0, `console errors/warnings while loading: ${consoleProblems.join(' | ')}`);
  if (!ready) return;

  // The page's own view of its data (names, sizes, default pairs).
  const info = await page.evaluate(() => window.headgradView.data.groups.map((g) => ({
    name: g.name, T: g.T, examples: g.examples.length, pair: g.pair,
    models: g.models.map((m) => ({ name: m.name, layers: m.layers, heads: m.heads })),
  })));
  const panelSel = (p) => `div.panel[data-panel="${p}"]`;

  // ---- 2. every head of every model shows the captured values ---------------
  // (panel A alone: the page then leaves panel B empty, which halves the work per step)
  await page.evaluate(() => window.headgradView.setCompare(false));
  for (let ei = 0; ei < expected.groups.length; ei++) {
    const eg = expected.groups[ei];
    let gi = info.findIndex((g) => g.name === eg.name);
    if (!check(gi >= 0, `group '${eg.name}' of the expected values is not on the page`)) continue;
    const g = info[gi];
    check(g.T === eg.T, `group '${eg.name}': T ${g.T} on the page, ${eg.T} expected`);
    for (let mi = 0; mi < eg.models.length; mi++) {
      const em = eg.models[mi];
      const pm = g.models.findIndex((m) => m.name === em.name);
      if (!check(pm >= 0, `model '${em.name}' of group '${eg.name}' is not on the page`)) continue;
      const m = g.models[pm];
      check(m.layers === em.layers && m.heads === em.heads,
            `group '${eg.name}' model ${pm}: ${m.layers}x${m.heads} on the page, ${em.layers}x${em.heads} expected`);
      const nex = Math.min(eg.examples, em.patterns.length, 2);
      for (let ex = 0; ex < nex; ex++) {
        const where = `group '${eg.name}' model ${pm} ('${em.name}') example ${ex}`;
        const got = await page.evaluate((gi, pm, ex) => {
          const v = window.headgradView;
          // Each setter re-renders; call only those that change something.
          if (v.state.group !== gi) v.setGroup(gi);
          if (v.state.modelA !== pm) v.setModels(pm, v.state.modelB);
          if (v.state.example !== ex) v.setExample(ex);
          const m = v.data.groups[gi].models[pm];
          const heads = [];
          for (let l = 0; l < m.layers; l++)
            for (let h = 0; h < m.heads; h++) heads.push(v.values('A', l, h));
          const cells = document.querySelectorAll('div.panel[data-panel="A"] canvas.cell').length;
          return { heads, cells };
        }, gi, pm, ex);
        check(got.cells === em.layers * em.heads,
              `${where}: ${got.cells} canvas.cell thumbnails in panel A, ${em.layers * em.heads} expected`);
        for (let l = 0; l < em.layers; l++) {
          for (let h = 0; h < em.heads; h++) {
            const d = maxAbsDiff(got.heads[l * em.heads + h], em.patterns[ex][l][h]);
            check(d <= STEP, `cell values of ${where} layer ${l} head ${h} differ from the captured pattern by ${fmt(d)} > ${STEP.toExponential(1)}`);
          }
        }
        // The enlarged head's table, for the first and the last head.
        const picks = [[0, 0], [em.layers - 1, em.heads - 1]];
        for (const [l, h] of picks.slice(0, em.layers * em.heads > 1 ? 2 : 1)) {
          const table = await page.evaluate((l, h) => {
            window.headgradView.select(l, h);
            const tds = document.querySelectorAll('div.panel[data-panel="A"] .detail td.v');
            const out = [];
            for (const td of tds) out.push([Number(td.dataset.q), Number(td.dataset.k), Number(td.dataset.v)]);
            return out;
          }, l, h);
          const T = eg.T;
          if (!check(table.length === T * T, `${where}: the enlarged head L${l} H${h} has ${table.length} td.v cells, ${T * T} expected`)) continue;
          let d = 0;
          for (const [q, k, v] of table) d = Math.max(d, Math.abs(v - em.patterns[ex][l][h][q * T + k]));
          if (Number.isNaN(d)) d = Infinity;
          check(d <= STEP, `data-v of the enlarged head of ${where} layer ${l} head ${h} differ from the captured pattern by ${fmt(d)} > ${STEP.toExponential(1)}`);
        }
      }
    }
  }

  // The groups used below: one with two models or more if there is one.
  let multi = info.findIndex((g) => g.models.length >= 2);
  const gHover = multi >= 0 ? multi : 0;
  const resetGroup = (gi) => page.evaluate((gi) => {
    const v = window.headgradView;
    v.setScale('linear');
    if (!v.state.compare) v.setCompare(true);
    v.setGroup(gi);
    v.select(0, 0);
  }, gi);

  // ---- 3. hovering a token follows it in both panels --------------------------
  {
    await resetGroup(gHover);
    const T = info[gHover].T;
    const pos = Math.min(3, T - 1);
    await page.hover(`${panelSel('A')} span.token[data-pos="${pos}"]`);
    const h = await page.evaluate((pos) => {
      const out = [];
      for (const p of document.querySelectorAll('div.panel')) {
        if (p.hidden || getComputedStyle(p).display === 'none') continue;
        const rows = [...p.querySelectorAll('.hl-row')];
        const cols = [...p.querySelectorAll('.hl-col')];
        const vals = window.headgradView.values(p.dataset.panel, window.headgradView.state.layer,
                                                window.headgradView.state.head);
        out.push({
          panel: p.dataset.panel,
          hover: p.getAttribute('data-hover'),
          rows: rows.length, rowsOk: rows.every((c) => c.dataset.q === String(pos)),
          cols: cols.length, colsOk: cols.every((c) => c.dataset.k === String(pos)),
          attended: [...p.querySelectorAll('span.token.attended')].map((c) => Number(c.dataset.pos)),
          clamped: p.querySelector('.detail h3 .msg') !== null,
          vals,
        });
      }
      return out;
    }, pos);
    check(h.length === 2, `hover: ${h.length} visible panels, 2 expected`);
    for (const p of h) {
      const w = `hover on token ${pos}: panel ${p.panel}`;
      check(p.hover === String(pos), `${w} has data-hover="${p.hover}", "${pos}" expected`);
      check(p.rows === T && p.rowsOk, `${w} has ${p.rows} .hl-row cells${p.rowsOk ? '' : ' (not all of row ' + pos + ')'}, ${T} of row q=${pos} expected`);
      check(p.cols === T && p.colsOk, `${w} has ${p.cols} .hl-col cells${p.colsOk ? '' : ' (not all of column ' + pos + ')'}, ${T} of column k=${pos} expected`);
      if (p.vals && !p.clamped) {
        const want = [];
        for (let k = 0; k < T; k++) if (p.vals[pos * T + k] > 0.05) want.push(k);
        check(JSON.stringify(want) === JSON.stringify(p.attended),
              `${w}: chips marked attended ${JSON.stringify(p.attended)}, ${JSON.stringify(want)} expected (weight > 0.05)`);
      }
    }
    await page.hover('h1');
    const cleared = await page.evaluate(() => ({
      hover: document.querySelectorAll('div.panel[data-hover]').length,
      marks: document.querySelectorAll('.hl-row, .hl-col, span.token.attended').length,
      state: window.headgradView.state.hover,
    }));
    check(cleared.hover === 0 && cleared.marks === 0 && cleared.state === null,
          `hover: leaving the token left ${cleared.hover} panels with data-hover and ${cleared.marks} highlighted cells/chips (state.hover ${cleared.state})`);
  }

  // ---- 4. the pickers change what is drawn ----------------------------------
  {
    const snapshot = () => page.evaluate(() => {
      const v = window.headgradView;
      const strip = (p) => [...document.querySelectorAll(`div.panel[data-panel="${p}"] .tokens span.token`)]
        .map((s) => s.textContent).join(' ');
      const tds = [...document.querySelectorAll('div.panel[data-panel="A"] .detail td.v')];
      return { A: strip('A'), B: strip('B'), values: v.values('A', v.state.layer, v.state.head),
               detail: tds.map((td) => td.dataset.v).join(','), state: { ...v.state } };
    });
    // Example picker.
    const gi = info.findIndex((g) => g.examples >= 2);
    if (gi >= 0) {
      await resetGroup(gi);
      const sameTokens = await page.evaluate((gi) => {
        const e = window.headgradView.data.groups[gi].examples;
        return JSON.stringify(e[0].tokens) === JSON.stringify(e[1].tokens);
      }, gi);
      const before = await snapshot();
      await page.select('select#example', '1');
      const after = await snapshot();
      check(after.state.example === 1, `select#example: state.example is ${after.state.example} after choosing example 1`);
      if (!sameTokens)
        check(before.A !== after.A && before.B !== after.B, 'select#example: the token strips did not change with the example');
      check(maxAbsDiff(before.values, after.values) > 0, 'select#example: values() did not change with the example');
    }
    // Clicking a thumbnail.
    const gc = info.findIndex((g) => g.models.some((m) => m.layers * m.heads >= 2));
    if (gc >= 0) {
      await resetGroup(gc);
      const mi = info[gc].models.findIndex((m) => m.layers * m.heads >= 2);
      const [l, h] = info[gc].models[mi].layers >= 2 ? [1, 0] : [0, 1];
      await page.evaluate((mi) => { window.headgradView.setModels(mi, mi); window.headgradView.select(0, 0); }, mi);
      const before = await snapshot();
      await page.click(`${panelSel('A')} canvas.cell[data-layer="${l}"][data-head="${h}"]`);
      const after = await snapshot();
      const sel = await page.evaluate(() => ({
        selected: [...document.querySelectorAll('div.panel[data-panel="A"] canvas.cell.selected')]
          .map((c) => `${c.dataset.layer},${c.dataset.head}`),
        layer: document.querySelector('#layer').value, head: document.querySelector('#head').value,
      }));
      const w = `clicking thumbnail L${l} H${h}`;
      check(after.state.layer === l && after.state.head === h,
            `${w}: state.layer/head is ${after.state.layer}/${after.state.head}`);
      check(sel.selected.length === 1 && sel.selected[0] === `${l},${h}`,
            `${w}: the selected thumbnails of panel A are [${sel.selected.join(' ')}]`);
      check(sel.layer === String(l) && sel.head === String(h), `${w}: #layer/#head show ${sel.layer}/${sel.head}`);
      check(before.detail !== after.detail, `${w}: the enlarged head's values did not change`);
    }
    // Colour scale: colours change, values do not.
    {
      await resetGroup(gHover);
      const pick = await page.evaluate(() => {
        const tds = [...document.querySelectorAll('div.panel[data-panel="A"] .detail td.v')];
        const i = tds.findIndex((td) => Number(td.dataset.v) > 0.002 && Number(td.dataset.v) < 0.9);
        return i < 0 ? null : { i, bg: getComputedStyle(tds[i]).backgroundColor, v: tds[i].dataset.v };
      });
      if (check(pick !== null, 'colour scale: no td.v with a value in (0.002, 0.9) to compare')) {
        await page.select('select#scale', 'log');
        const after = await page.evaluate((i) => {
          const td = document.querySelectorAll('div.panel[data-panel="A"] .detail td.v')[i];
          return { bg: getComputedStyle(td).backgroundColor, v: td.dataset.v, scale: window.headgradView.state.scale };
        }, pick.i);
        check(after.scale === 'log', `select#scale: state.scale is ${after.scale} after choosing log`);
        check(after.bg !== pick.bg, `select#scale: the background of a td.v (${pick.v}) stayed ${pick.bg} under the log scale`);
        check(after.v === pick.v, `select#scale: data-v changed from ${pick.v} to ${after.v} with the colour scale`);
      }
    }
  }

  // ---- 5. side by side -------------------------------------------------------
  if (multi >= 0) {
    await resetGroup(multi);
    const g = info[multi];
    let [a, b] = g.pair && g.pair[0] !== g.pair[1] ? g.pair : [0, 1];
    await page.evaluate((a, b) => window.headgradView.setModels(a, b), a, b);
    const s = await page.evaluate(() => [...document.querySelectorAll('div.panel')].map((p) => ({
      panel: p.dataset.panel,
      visible: !p.hidden && getComputedStyle(p).display !== 'none' && p.getBoundingClientRect().width > 0,
      title: p.querySelector('.title').textContent,
      tokens: [...p.querySelectorAll('.tokens span.token')].map((t) => t.textContent).join(' '),
      cells: p.querySelectorAll('canvas.cell').length,
    })));
    const [A, B] = s;
    check(A.visible && B.visible, `side by side: panel A visible ${A.visible}, panel B visible ${B.visible}`);
    check(A.tokens === B.tokens && A.tokens.length > 0, 'side by side: the panels show different token labels');
    check(A.title.includes(g.models[a].name), `side by side: panel A's title '${A.title}' does not name model '${g.models[a].name}'`);
    check(B.title.includes(g.models[b].name), `side by side: panel B's title '${B.title}' does not name model '${g.models[b].name}'`);
    check(A.cells === g.models[a].layers * g.models[a].heads,
          `side by side: panel A has ${A.cells} thumbnails, ${g.models[a].layers * g.models[a].heads} expected`);
    check(B.cells === g.models[b].layers * g.models[b].heads,
          `side by side: panel B has ${B.cells} thumbnails, ${g.models[b].layers * g.models[b].heads} expected`);
    await page.click('#compare');
    const hidden = await page.evaluate(() => {
      const p = document.querySelector('div.panel[data-panel="B"]');
      return { shown: !p.hidden && getComputedStyle(p).display !== 'none', compare: window.headgradView.state.compare };
    });
    check(!hidden.shown && hidden.compare === false, `unchecking #compare: panel B still shown (${hidden.shown}), state.compare ${hidden.compare}`);
    await page.click('#compare');
  }

  // ---- 6. screenshot ---------------------------------------------------------
  if (shotArg) {
    const gs = multi >= 0 ? multi : 0;
    await resetGroup(gs);
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.hover(`${panelSel('A')} span.token[data-pos="${Math.floor(info[gs].T / 2)}"]`);
    await page.screenshot({ path: path.resolve(shotArg), fullPage: true });
    check(fs.existsSync(shotArg), `screenshot: ${shotArg} was not written`);
  }

  check(consoleProblems.length === 0, `console errors/warnings during the test: ${consoleProblems.join(' | ')}`);
  check(external.length === 0, `the page requested non-file URLs during the test: ${external.join(', ')}`);
}

let code = 0;
try {
  await main();
} catch (e) {
  console.log(`FAIL: ${e && e.stack ? e.stack : e}`);
  failures.push(String(e));
} finally {
  if (browser) await browser.close().catch(() => {});
  clearTimeout(watchdog);
}
if (failures.length) {
  console.log(`view_test: ${failures.length} of ${passed + failures.length} checks failed`);
  code = 1;
} else {
  console.log(`view_test: ${passed} checks passed`);
}
process.exit(code);
