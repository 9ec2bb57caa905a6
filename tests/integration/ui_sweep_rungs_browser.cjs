// Drives Debian's chromium (headless, through playwright-core) over an ASHA sweep's page of
// `mlw history ui`: node ui_sweep_rungs_browser.cjs URL SWEEP_ID EXPECTED_JSON [SHOTS_DIR].
// EXPECTED_JSON: {rungs: [[rung, reached, promoted, went on, stopped], …], budget: TEXT,
// reached: [per run, best first], best: [best so far, …]}. Prints "ok NAME" or "not ok NAME:
// why" per check; test_sweeps.sh counts them.
"use strict";
const path = require("path");
const { check, counts, launch } = require("./ui_launch.cjs");

const [url, sweep, expectedText, shots] = process.argv.slice(2);
const expected = JSON.parse(expectedText);

async function main() {
  const browser = await launch();
  const page = await (await browser.newContext({ viewport: { width: 1360, height: 900 } })).newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  await page.goto(url);
  await page.waitForFunction(() => document.body.dataset.ready === "runs", null, { timeout: 15000 });
  await page.goto(url.replace(/\?token=.*/, "") + `#/sweep/${sweep}`);
  await page.waitForFunction(() => document.body.dataset.ready === "sweep", null, { timeout: 15000 });
  const rungs = await page.$$eval("#rungs tbody tr", (rows) => rows.map((r) =>
    Array.from(r.children).map((c) => Number(c.textContent))));
  check("the rungs: who reached each, and was promoted, went on or was stopped there",
    JSON.stringify(rungs) === JSON.stringify(expected.rungs), JSON.stringify(rungs));
  const heads = await page.$$eval("#rungs th", (ths) => ths.map((t) => t.textContent));
  check("… the rungs named in the resource's units", heads[0] === "Rung (epochs)", JSON.stringify(heads));
  const budget = await page.textContent("#budget");
  check("the budget spent against every trial given all of it", budget.includes(expected.budget) &&
    /GPU-seconds held of about [0-9.]+ \(\d+%\)/.test(budget), budget);
  const reached = await page.$$eval("#sweep-table tbody td.reached", (c) => c.map((x) => Number(x.textContent)));
  check("each trial's budget reached, in the table (best first)", JSON.stringify(reached) === JSON.stringify(expected.reached),
    JSON.stringify(reached));
  const why = await page.$$eval("#sweep-table tbody td.reached", (c) => c.map((x) => x.title));
  check("… its decisions, where the pointer rests", why.length > 0 && why.every((t) => /(goes on|promoted|stopped)/.test(t)),
    JSON.stringify(why.slice(0, 2)));
  const best = await page.evaluate(() => window.mlw.bestSoFar.map((v) => Number(v.toFixed(6))));
  check("the best so far, at each completed trial's end", JSON.stringify(best) === JSON.stringify(expected.best),
    JSON.stringify(best));
  const drawn = await page.evaluate(() => window.mlw.charts.some((c) => c.mlwTitle === "best-so-far"));
  check("… drawn", drawn);
  if (shots) await page.screenshot({ path: path.join(shots, "ui-sweep-rungs.png"), fullPage: true });
  check("no script errors in the page", errors.length === 0, JSON.stringify(errors));
  await browser.close();
}

main().then(() => process.exit(counts.failures ? 1 : 0), (e) => { console.log(`not ok browser: ${e.stack}`); process.exit(1); });
