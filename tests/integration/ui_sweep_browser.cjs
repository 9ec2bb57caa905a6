// Drives Debian's chromium (headless, through playwright-core) over a sweep's pages of
// `mlw history ui`: node ui_sweep_browser.cjs URL SWEEP_ID [SHOTS_DIR]. Prints "ok NAME" or
// "not ok NAME: why" per check; test_sweeps.sh counts them.
"use strict";
const fs = require("fs");
const path = require("path");
const { chromium } = require(path.join(process.env.MLW_SOURCE_DIR, "web/node_modules/playwright-core"));

const [url, sweep, shots] = process.argv.slice(2);
let failures = 0;
function check(name, ok, why = "") {
  console.log(ok ? `ok ${name}` : `not ok ${name}: ${why}`);
  if (!ok) failures++;
}

async function main() {
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"] });
  const context = await browser.newContext({ viewport: { width: 1360, height: 900 }, acceptDownloads: true });
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  const ready = (what) => page.waitForFunction((w) => document.body.dataset.ready === w, what, { timeout: 15000 });
  const base = url.replace(/\?token=.*/, "");
  await page.goto(url);
  await ready("runs");

  // The runs page: the sweep as a filter, parameter columns, a filter on a parameter.
  await page.selectOption("#f-sweep", sweep);
  await page.waitForFunction(() => document.querySelectorAll("#runs tbody tr[data-run]").length === 6);
  await page.waitForSelector('#runs td[data-field="param:bs"]', { timeout: 5000 }).catch(() => null);
  const defaults = await page.$$eval("#runs th", (ths) => ths.map((t) => t.textContent));
  check("a sweep's runs show its parameters as columns without asking", defaults.includes("lr") && defaults.includes("bs"),
    JSON.stringify(defaults));
  await page.click("#f-columns summary");
  await page.check('input[data-column="param:lr"]');
  await page.check('input[data-column="metric:loss"]');
  await page.waitForSelector('#runs td[data-field="param:lr"]');
  await page.click('#runs th[data-sort="param:lr"]');
  await page.waitForFunction(() => document.querySelector("#runs th.sorted")?.dataset.sort === "param:lr");
  await page.waitForTimeout(300);
  const lrs = await page.$$eval('#runs td[data-field="param:lr"]', (c) => c.map((x) => Number(x.textContent)));
  check("the runs page has an lr column, sorted by it (largest first)",
    lrs.length === 6 && JSON.stringify(lrs) === JSON.stringify(lrs.slice().sort((a, b) => b - a)), JSON.stringify(lrs));
  await page.fill("#f-where", "lr<0.05");
  await page.press("#f-where", "Enter");
  await page.waitForFunction(() => document.querySelectorAll("#runs tbody tr[data-run]").length === 4);
  check("a filter on a parameter keeps the runs with lr<0.05", true);
  if (shots) await page.screenshot({ path: path.join(shots, "ui-runs-params.png") });

  // The sweep page: best first, parallel coordinates drawn, brushing filters the table.
  await page.goto(base + `#/sweep/${sweep}`);
  await ready("sweep");
  await page.waitForFunction(() => document.body.dataset.curves === "drawn");
  const info = await page.evaluate(() => window.mlw.sweep);
  check("the parallel coordinates draw every run", info.runs === 6 && info.lines === 6, JSON.stringify(info));
  check("lr spans decades: a log axis; bs does not", info.axes.find((a) => a.name === "lr")?.log === true &&
    info.axes.find((a) => a.name === "bs")?.log === false, JSON.stringify(info.axes));
  check("bs, a few whole values, is a discrete axis: its ticks are its values",
    info.axes.find((a) => a.name === "bs")?.discrete === true &&
    JSON.stringify(info.axes.find((a) => a.name === "bs").ticks) === "[32,64]", JSON.stringify(info.axes));
  const pow2 = await page.evaluate(() => { const a = makeAxis("bs", [16, 32, 64, 256], "param");
    return { log: a.log, base: a.base, ticks: a.ticks.map(([t]) => t), mid: a.pos(64) }; });
  check("powers of two spanning 16x: a log2 axis, 64 midway", pow2.base === 2 && pow2.log &&
    JSON.stringify(pow2.ticks) === "[16,32,64,256]" && Math.abs(pow2.mid - 0.5) < 1e-9, JSON.stringify(pow2));
  const starts = await page.$$eval("#sweep-table tbody td.started", (c) => c.map((x) => x.textContent));
  check("each run's own start time in the sweep's table", starts.length === 6 &&
    starts.every((s) => /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d/.test(s)) && new Set(starts).size > 1, JSON.stringify(starts));
  const trials = await page.evaluate(() => { const c = window.mlw.charts.find((p) => p.mlwTitle === "curves");
    return c ? { trials: c.mlwTrials.length, series: c.series.length,
      shownRows: Array.from(c.root.querySelectorAll(".u-legend tr.u-series")).filter((r) => r.style.display !== "none").length } : null; });
  check("the curves are each trial's (6), the legend names the groups only", trials && trials.trials === 6 &&
    trials.series === 1 + 6 + 1 && trials.shownRows === 2, JSON.stringify(trials));
  const inked = await page.$eval("#parallel", (canvas) => {
    const d = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0 && Math.abs(d[i] - d[i + 2]) > 60) n++;
    return n;
  });
  check("the lines are on the canvas", inked > 500, `${inked} coloured pixels`);
  const losses = await page.$$eval("#sweep-table tbody tr", (rows) => rows.map((r) => Number(r.querySelector("td.metric").textContent)));
  check("the table is best first (lowest loss)", losses.length === 6 &&
    JSON.stringify(losses) === JSON.stringify(losses.slice().sort((a, b) => a - b)), JSON.stringify(losses));
  // Brush the lr axis (the first) over its upper half: only lr 0.1 and 0.01 remain (log axis).
  const box = await page.$eval("#parallel", (c) => { const r = c.getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; });
  const x = box[0] + 60, top = box[1] + 34, bottom = box[1] + 320 - 26;
  await page.mouse.move(x, top - 2);
  await page.mouse.down();
  await page.mouse.move(x, (top + bottom) / 2 + 10, { steps: 6 });
  await page.mouse.up();
  await page.waitForFunction(() => window.mlw.sweep.shown === 4);
  const kept = await page.$$eval("#sweep-table tbody tr", (rows) => rows.map((r) => Number(r.children[4].textContent)));
  check("brushing the lr axis filters the table to lr 0.1 and 0.01", kept.length === 4 && kept.every((v) => v >= 0.01), JSON.stringify(kept));
  check("the brush is in the URL", page.url().includes("brush=lr"), page.url());
  const [download] = await Promise.all([page.waitForEvent("download"), page.click("#csv")]);
  const csv = fs.readFileSync(await download.path(), "utf8").trim().split("\n");
  check("CSV export: a header with the parameters, the brushed rows", csv.length === 5 && csv[0].includes("lr,bs,loss"), JSON.stringify(csv));
  // What the button exports, for a hostile project's names and values: a text a spreadsheet would
  // run as a formula starts with an apostrophe, header cells are quoted as the rows are.
  const hostile = await page.evaluate(() => sweepCsv([{ run_id: "r1", point: 1, status: "Completed",
    params: { "a,b": '=HYPERLINK("x")', n: -2 }, metrics: { "@m": 1 }, duration_s: 3, problem: "+cmd" }],
  ["a,b", "n"], ["@m"]).split("\n"));
  check("CSV export: formula cells disarmed, the header quoted", hostile[0] === 'rank,run_id,point,status,"a,b",n,\'@m,duration_s,problem' &&
    hostile[1] === '1,r1,1,Completed,"\'=HYPERLINK(""x"")",-2,1,3,\'+cmd', JSON.stringify(hostile));
  if (shots) await page.screenshot({ path: path.join(shots, "ui-sweep.png"), fullPage: true });
  // Reloaded from its URL, the page keeps its brush; grouping the curves by bs names the groups.
  // The page's first, ungrouped curves are held back 1.5 s, so they answer after the grouped ones
  // (as a slow target's would): the later choice must win, its legends unchanged.
  const ungrouped = (u) => u.pathname.endsWith("/curves") && !u.searchParams.get("group");
  await page.route(ungrouped, async (r) => { await new Promise((ok) => setTimeout(ok, 1500)); await r.continue(); });
  await page.goto(page.url());
  await page.reload();
  await ready("sweep");
  check("the page state comes back from the URL", (await page.evaluate(() => window.mlw.sweep.shown)) === 4);
  await page.selectOption("#s-group", "bs");
  await page.waitForFunction(() => window.mlw.charts.some((c) => c.mlwTitle === "curves" && c.series.some((s) => s.label.startsWith("bs=64"))));
  await page.waitForFunction(() => document.body.dataset.curves === "drawn");
  await page.unroute(ungrouped);
  const labels = await page.$$eval("#curves .u-legend th", (ths) => ths.map((t) => getComputedStyle(t).textTransform + ":" + t.textContent));
  check("grouped curves: legends name the group in its own case", labels.some((l) => l.startsWith("none:") && l.includes("bs=32 (3)")), JSON.stringify(labels));

  // A run of the sweep: its parameters; compare's legends name the parameters that differ.
  const [first, second] = await page.$$eval("#sweep-table tbody tr", (rows) => rows.slice(0, 2).map((r) => r.dataset.run));
  await page.goto(base + `#/run/${first}`);
  await ready("run");
  const params = await page.textContent("#params");
  check("the run page lists its parameters", params.includes("lr") && params.includes("bs") && params.includes("optimizer"), params);
  await page.goto(base + `#/compare/${first},${second}`);
  await ready("compare");
  const legend = await page.evaluate(() => window.mlw.charts.flatMap((c) => c.series.slice(1).map((s) => s.label)));
  check("compare legends show the parameters that differ, not run ids", legend.length >= 2 &&
    legend.every((l) => /^(lr|bs)=/.test(l)), JSON.stringify(legend));
  check("no script errors in the pages", errors.length === 0, JSON.stringify(errors));
  await browser.close();
}

main().then(() => process.exit(failures ? 1 : 0), (e) => { console.log(`not ok browser: ${e.stack}`); process.exit(1); });
