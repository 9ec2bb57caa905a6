// node ui_timing.cjs URL HASH READY LOADS: Chromium (headless, playwright-core) loads the
// dashboard LOADS times and prints the median ms from navigation start until
// document.body.dataset.ready === READY (the page drawn and usable).
"use strict";
const path = require("path");
const { chromium } = require(path.join(__dirname, "../web/node_modules/playwright-core"));
const [url, hash, ready, loads] = process.argv.slice(2);
(async () => {
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"] });
  const context = await browser.newContext({ viewport: { width: 1360, height: 900 } });
  const page = await context.newPage();
  await page.goto(url);  // sets the cookie
  await page.waitForFunction(() => document.body.dataset.ready === "runs", null, { timeout: 60000 });
  const base = url.replace(/\?token=.*/, "");
  const times = [];
  for (let i = 0; i < Number(loads); i++) {
    await page.goto("about:blank");
    await page.goto(base + hash);
    await page.waitForFunction((r) => document.body.dataset.ready === r, ready, { timeout: 60000 });
    times.push(await page.evaluate(() => performance.now()));
  }
  times.sort((a, b) => a - b);
  console.log(times[Math.floor(times.length / 2)].toFixed(1));
  await browser.close();
})().catch((e) => { console.error(e); process.exit(1); });
