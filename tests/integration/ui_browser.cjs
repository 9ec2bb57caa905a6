// Drives Debian's chromium (headless, through playwright-core) over `mlw history ui`:
// node ui_browser.cjs URL RUN_A RUN_B RUN_LIVE [SHOTS_DIR]. Prints "ok NAME" or
// "not ok NAME: why" per check; test_ui.sh counts them.
"use strict";
const path = require("path");
const { check, counts, launch } = require("./ui_launch.cjs");

const [url, runA, runB, runLive, shots] = process.argv.slice(2);
// In the page: the runs table's two last losses are in order (1: lowest first, -1: highest first).
function metricsInOrder(direction) {
  const v = [...document.querySelectorAll("#runs tbody td.metric")].map((x) => x.textContent)
    .filter((t) => t !== "").map(Number);
  return v.length === 2 && (v[1] - v[0]) * direction > 0;
}

async function main() {
  const browser = await launch();
  const page = await browser.newPage({ viewport: { width: 1360, height: 900 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  const ready = (what) => page.waitForFunction((w) => document.body.dataset.ready === w, what, { timeout: 15000 });
  const rowIds = () => page.$$eval("#runs tbody tr[data-run]", (rows) => rows.map((r) => r.dataset.run));

  // Runs page
  await page.goto(url);
  await ready("runs");
  check("the token URL lands on the runs page without the token in the address", !page.url().includes("token"), page.url());
  let ids = await rowIds();
  check("every run is listed, newest first", ids.length === 5 && ids.indexOf(runB) < ids.indexOf(runA), JSON.stringify(ids));
  await page.selectOption("#f-status", "Failed");
  await page.waitForFunction(() => document.querySelectorAll("#runs tbody tr[data-run]").length === 1);
  const statuses = await page.$$eval("#runs tbody .badge", (b) => b.map((x) => x.textContent));
  check("the status filter shows only failed runs", statuses.length === 1 && statuses[0] === "Failed", JSON.stringify(statuses));
  await page.selectOption("#f-status", "");
  await page.waitForFunction(() => document.querySelectorAll("#runs tbody tr[data-run]").length === 5);
  await page.fill("#f-q", "slow");
  await page.waitForFunction(() => { const rows = document.querySelectorAll("#runs tbody tr[data-run]");
    return rows.length === 1 && rows[0].textContent.includes("slow.py"); });
  ids = await rowIds();
  check("the text filter finds the run of slow.py", ids[0] === runLive, JSON.stringify(ids));
  await page.fill("#f-q", "");
  await page.waitForFunction(() => document.querySelectorAll("#runs tbody tr[data-run]").length === 5);
  await page.selectOption("#f-metric", "loss");
  await page.waitForSelector("#runs th[data-sort=metric]");
  await page.click("#runs th[data-sort=metric]");
  await page.waitForFunction(() => document.querySelector("#runs th.sorted")?.dataset.sort === "metric");
  // The header turns at the click; the rows come with the page's next answer (slow under load).
  await page.waitForFunction(metricsInOrder, -1, { timeout: 10000 }).catch(() => {});
  const values = await page.$$eval("#runs tbody td.metric", (c) => c.map((x) => x.textContent).filter((t) => t !== "").map(Number));
  const sorted = values.slice().sort((a, b) => b - a);
  check("sorting by the last loss puts the highest first", values.length === 2 && JSON.stringify(values) === JSON.stringify(sorted), JSON.stringify(values));
  await page.click("#runs th[data-sort=metric]");
  await page.waitForFunction(() => document.querySelector("#runs th.sorted")?.textContent.includes("▲"));
  await page.waitForFunction(metricsInOrder, 1, { timeout: 10000 }).catch(() => {});
  const ascending = await page.$$eval("#runs tbody td.metric", (c) => c.map((x) => x.textContent).filter((t) => t !== "").map(Number));
  check("… and the lowest first when clicked again", ascending.length === 2 && ascending[0] < ascending[1], JSON.stringify(ascending));
  if (shots) await page.screenshot({ path: path.join(shots, "ui-runs.png") });

  // One run: record, a chart per metric with its data drawn, the log, an output.
  await page.click(`a[href="#/run/${runA}"]`);
  await ready("run");
  const charts = await page.evaluate(() => window.mlw.charts.map((c) => ({
    title: c.mlwTitle, n: c.data[0].length, first: c.data[1][0], last: c.data[1][c.data[1].length - 1],
    nulls: c.data[1].filter((v) => v === null).length })));
  const loss = charts.find((c) => c.title === "loss");
  check("the run page draws one chart per metric", charts.length === 2 && charts.some((c) => c.title === "acc"), JSON.stringify(charts));
  check("the loss chart holds the logged series (200 points, first 1.005)",
    loss && loss.n === 200 && Math.abs(loss.first - 1.005) < 1e-12 && loss.nulls === 0, JSON.stringify(loss));
  const inked = await page.$eval('[data-metric="loss"] canvas', (canvas) => {
    const ctx = canvas.getContext("2d");
    const pixels = ctx.getImageData(0, 0, canvas.width, canvas.height).data;
    let coloured = 0;
    for (let i = 0; i < pixels.length; i += 4) {
      // the series' stroke (#2f6fed): blue well above red
      if (pixels[i + 3] > 0 && pixels[i + 2] > 180 && pixels[i] < 120) coloured++;
    }
    return coloured;
  });
  check("the loss line is drawn on the canvas", inked > 200, `${inked} pixels of the line's colour`);
  const record = await page.textContent("#record");
  check("the record shows the arguments and the exit code", record.includes("train.py 200") && record.includes("Exit code0"), record);
  check("the record names the data set's version it mounted", /Datatiny@1 \([0-9a-f]{7}\)/.test(record), record);
  await page.waitForFunction(() => document.getElementById("log").dataset.ended === "1");
  const logText = await page.textContent("#log");
  check("the driver log is shown", logText.includes("done 200"), logText.slice(-200));
  const href = await page.getAttribute("#outputs a", "href");
  const body = href ? await page.evaluate(async (h) => (await fetch(h)).text(), href) : "";
  check("an output downloads with its contents", body === "weights of run 200\n", JSON.stringify(body));
  if (shots) await page.screenshot({ path: path.join(shots, "ui-run.png"), fullPage: true });
  check("the run page shows no stray text", !(await page.textContent("h1")).includes("null"), await page.textContent("h1"));
  // Zoom: a drag over the chart asks the server for that range only.
  const box = await page.$eval('[data-metric="loss"] .u-over', (o) => { const r = o.getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; });
  await page.mouse.move(box[0] + box[2] * 0.25, box[1] + box[3] / 2);
  await page.mouse.down();
  await page.mouse.move(box[0] + box[2] * 0.5, box[1] + box[3] / 2, { steps: 5 });
  await page.mouse.up();
  await page.waitForFunction(() => { const c = window.mlw.charts.find((p) => p.mlwTitle === "loss"); return c && c.data[0].length < 200; });
  const zoomed = await page.evaluate(() => { const c = window.mlw.charts.find((p) => p.mlwTitle === "loss"); return [c.data[0][0], c.data[0][c.data[0].length - 1]]; });
  check("zooming fetches the selected range", zoomed[0] >= 40 && zoomed[1] <= 110, JSON.stringify(zoomed));

  // Compare
  await page.goto(url.replace(/\?token=.*/, "") + `#/compare/${runA},${runB}`);
  await ready("compare");
  const diffRows = await page.$$eval("#compare-table tr.diff", (r) => r.map((x) => x.dataset.row));
  check("compare highlights the arguments that differ", diffRows.includes("Arguments") && !diffRows.includes("Script"), JSON.stringify(diffRows));
  const inherited = await page.$$eval("#compare-table tr[data-row]", (rows) => rows
    .filter((r) => ["constructor", "toString", "__proto__"].includes(r.dataset.row))
    .map((r) => [r.dataset.row, ...Array.from(r.querySelectorAll("td"), (td) => td.textContent)]));
  check("compare: metrics named constructor, toString, __proto__ show the value, or nothing where not logged",
    inherited.length === 3 && inherited.every((r) => r[1] === "" && r[2] === "7"), JSON.stringify(inherited));
  const overlaid = await page.evaluate(() => window.mlw.charts.map((c) => [c.mlwTitle, c.data.length - 1,
    c.data[1].filter((v) => v !== null).length, (c.data[2] || []).filter((v) => v !== null).length]));
  const lossPair = overlaid.find((c) => c[0] === "loss");
  check("compare overlays both runs' series per metric", lossPair && lossPair[1] === 2 && lossPair[2] === 200 && lossPair[3] === 120, JSON.stringify(overlaid));
  if (shots) await page.screenshot({ path: path.join(shots, "ui-compare.png"), fullPage: true });

  // A page left while it still loads never comes back over the next one (a slow answer: a busy
  // machine, an ASan build): the runs list's first answer late under a run's page, then a run's
  // record late under the runs list.
  const base = url.replace(/\?token=.*/, "");
  const late = (ms) => async (r) => { await new Promise((res) => setTimeout(res, ms)); await r.continue().catch(() => {}); };
  await page.route("**/api/facets", late(1500));
  await page.goto(base + "#/");
  await page.evaluate((id) => { location.hash = "#/run/" + encodeURIComponent(id); }, runA);
  await ready("run");
  await page.waitForTimeout(2500);
  const stayed = await page.textContent("h1");
  check("a run opened while the runs list loads stays on the page", stayed.includes(runA), stayed);
  await page.unroute("**/api/facets");
  await page.route(`**/api/runs/${runB}`, late(1500));
  await page.evaluate((id) => { location.hash = "#/run/" + encodeURIComponent(id); }, runB);
  await page.evaluate(() => { location.hash = "#/"; });
  await ready("runs");
  await page.waitForTimeout(2500);
  const listed = await page.textContent("h1");
  check("… and the runs list shown while a run's record comes late stays too", listed === "Runs", listed);
  await page.unroute(`**/api/runs/${runB}`);

  // A running run: its log followed live, then canceled from the page.
  await page.goto(url.replace(/\?token=.*/, "") + `#/run/${runLive}`);
  await ready("run");
  await page.waitForFunction(() => /tick 12\n/.test(document.getElementById("log").textContent), null, { timeout: 20000 });
  // Then at least three more polls (one a second) of what the run appends.
  const shown = (await page.textContent("#log")).split("\n").filter((l) => l.startsWith("tick ")).length;
  await page.waitForFunction((n) => document.getElementById("log").textContent.includes(`tick ${n}\n`),
    shown + 14, { timeout: 30000 });
  const lines = (await page.textContent("#log")).split("\n").filter((l) => l.startsWith("tick "));
  const inOrder = lines.every((l, i) => l === `tick ${i}`);
  check("the live log grows line by line, none lost or doubled", inOrder && lines.length >= 13, JSON.stringify(lines.slice(0, 20)));
  await page.click("#cancel");
  await page.waitForFunction(() => document.querySelector("h1 .badge")?.textContent === "Canceled", null, { timeout: 30000 })
    .then(() => check("cancel from the page ends the run as Canceled", true),
      (e) => check("cancel from the page ends the run as Canceled", false, e.message));
  check("no script errors in the page", errors.length === 0, JSON.stringify(errors));
  // Another local user's server on another port of 127.0.0.1 (issue 33): cookies are not
  // port-scoped, so it must not be sent the dashboard's token cookie when the browser visits it.
  const http = require("http");
  const seen = [];
  const thief = http.createServer((req, res) => { seen.push(req.headers.cookie || ""); res.end("<html>hi</html>"); });
  await new Promise((resolve) => thief.listen(0, "127.0.0.1", resolve));
  const thiefUrl = `http://127.0.0.1:${thief.address().port}`;
  await page.goto(thiefUrl + "/");
  await page.goto(thiefUrl + "/api/runs");
  await page.evaluate(async () => { await fetch("/api/facets"); });
  thief.close();
  check("another server on 127.0.0.1 is sent no token cookie", seen.length >= 3 && !seen.some((c) => c.includes("mlw_token")),
    JSON.stringify(seen));
  await browser.close();
}

main().then(() => process.exit(counts.failures ? 1 : 0), (e) => { console.log(`not ok browser: ${e.stack}`); process.exit(1); });
