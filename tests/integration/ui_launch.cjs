// Debian's chromium, headless, through playwright-core, as the dashboard's browser suites start
// it, and their one way to count a check ("ok NAME" or "not ok NAME: why").
"use strict";
const path = require("path");
const { chromium } = require(path.join(process.env.MLW_SOURCE_DIR, "web/node_modules/playwright-core"));

const counts = { failures: 0 };

function check(name, ok, why = "") {
  console.log(ok ? `ok ${name}` : `not ok ${name}: ${why}`);
  if (!ok) counts.failures++;
}

function launch() {
  return chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync"],
  });
}

module.exports = { check, counts, launch };
