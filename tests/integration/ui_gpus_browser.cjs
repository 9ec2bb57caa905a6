// Drives Debian's chromium (headless, through playwright-core) over `mlw history ui` for GPU
// telemetry (docs/gpus.md): node ui_gpus_browser.cjs URL RUN GPU HOLDER. Checks that RUN's page
// has a System section (its GPU's summary and a chart per sampled series) and that the GPUs page
// names HOLDER on GPU 0. Prints "ok NAME" or "not ok NAME: why" per check.
"use strict";
const { check, counts, launch } = require("./ui_launch.cjs");

const [url, run, gpu, holder] = process.argv.slice(2);

async function main() {
  const browser = await launch();
  const page = await browser.newPage({ viewport: { width: 1360, height: 900 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  const ready = (what) => page.waitForFunction((w) => document.body.dataset.ready === w, what, { timeout: 20000 });
  await page.goto(url);
  await page.goto(page.url().replace(/#.*$/, "") + "#/run/" + encodeURIComponent(run));
  await ready("run");
  const summary = await page.$$eval(`#system-table tr[data-gpu="${gpu}"] td`, (cells) => cells.map((c) => c.textContent));
  check("the run page's System section sums up its GPU", summary[0] === "22%" && summary[2] === "2200 of 11441 MiB",
    JSON.stringify(summary));
  const charts = await page.$$eval("#system-charts .panel.chart", (boxes) => boxes.map((b) => b.dataset.metric));
  check("… with a chart per sampled series", charts.includes(`sys/gpu${gpu}/util`) && charts.includes(`sys/gpu${gpu}/mem_used`),
    JSON.stringify(charts));
  const metrics = await page.$$eval("#charts .panel.chart", (boxes) => boxes.map((b) => b.dataset.metric));
  check("… apart from the script's metrics", !metrics.some((m) => m.startsWith("sys/")), JSON.stringify(metrics));
  await page.click("#nav-gpus");
  await ready("gpus");
  const row = await page.$$eval('#gpus table tr[data-gpu="0"] td', (cells) => cells.map((c) => c.textContent));
  check("the GPUs page names the run that holds GPU 0", row[4] === holder && row[2] === "50%", JSON.stringify(row));
  check("no script errors in the pages", errors.length === 0, JSON.stringify(errors));
  await browser.close();
}

main().then(() => process.exit(counts.failures ? 1 : 0), (e) => { console.log(`not ok the browser ran: ${e.message}`); process.exit(1); });
