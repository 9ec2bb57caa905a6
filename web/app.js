// mlw history ui: the runs, a run, and runs compared; plain DOM and uPlot, no framework.
"use strict";

const csrf = document.querySelector('meta[name="mlw-csrf"]').content;
const main = document.getElementById("main");
const COLORS = ["#2f6fed", "#e8590c", "#1a7f37", "#8250df", "#cf222e", "#0598bc", "#bf8700", "#6e7781"];
const FINAL = new Set(["Completed", "Failed", "Canceled", "Lost", "Stopped"]);
// What tests and benchmarks read: the page shown, its charts (uPlot instances), timings.
window.mlw = { page: "", charts: [], ready: false };
let timers = [];
let generation = 0;

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "text") node.textContent = v;
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) if (c !== null && c !== undefined) node.append(c);
  return node;
}

// A metric's own value: metric names are the user's ("constructor", "__proto__" and "toString"
// included), so an object's inherited members must never pass for one.
const own = (o, k) => (o != null && Object.prototype.hasOwnProperty.call(o, k) ? o[k] : undefined);

async function api(path, options = {}) {
  const res = await fetch(path, options);
  if (!res.ok) {
    let message = res.status + " " + res.statusText;
    try { message = (await res.json()).error || message; } catch (e) { /* not JSON */ }
    throw new Error(message);
  }
  return res;
}
const getJson = async (path) => (await api(path)).json();

function every(ms, fn) {
  const mine = generation;
  const id = setInterval(() => { if (mine === generation && !document.hidden) fn(); }, ms);
  timers.push(id);
}

function fmtDuration(s) {
  if (s === null || s === undefined) return "";
  if (s < 60) return s.toFixed(s < 10 ? 2 : 1) + " s";
  const m = Math.floor(s / 60), h = Math.floor(m / 60);
  return h ? `${h} h ${m % 60} min` : `${m} min ${Math.round(s % 60)} s`;
}
const fmtTime = (iso) => (iso ? iso.replace("T", " ").replace("Z", "") : "");
// A number as the command line's tables show it (C's %.6g): 6 significant digits, an exponent
// below 1e-4 and from 1e6 (0.000367355, 1.23457e+06); whole numbers as they are.
function fmtNumber(v) {
  if (v === null || v === undefined) return "";
  if (typeof v !== "number") return JSON.stringify(v);
  if (!Number.isFinite(v) || (Number.isInteger(v) && Math.abs(v) < 1e15)) return String(v);
  const exp = Math.floor(Math.log10(Math.abs(v)));
  if (exp < -4 || exp >= 6) {
    const [m, e] = v.toExponential(5).split("e");
    const n = +e;
    return m.replace(/\.?0+$/, "") + "e" + (n < 0 ? "-" : "+") + String(Math.abs(n)).padStart(2, "0");
  }
  return String(+v.toPrecision(6));
}
const badge = (status) => el("span", { class: "badge s-" + status, text: status });
const runLink = (id) => el("a", { href: "#/run/" + encodeURIComponent(id), text: id });

function selected() {
  try { return JSON.parse(sessionStorage.getItem("mlw-compare") || "[]"); } catch (e) { return []; }
}
function setSelected(ids) {
  sessionStorage.setItem("mlw-compare", JSON.stringify(ids));
  const nav = document.getElementById("nav-compare");
  nav.textContent = ids.length ? `Compare (${ids.length})` : "Compare";
}

// ---------- Runs ----------
const runsState = { status: "", target: "", script: "", q: "", metric: "", sweep: "", columns: "",
  where: "", sort: "run_number", order: "desc", offset: 0, limit: 50 };
// The query of a page of runs (`where` may hold several conditions, separated by ";").
function runsQuery() {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(runsState)) {
    if (v === "" || v === null) continue;
    if (k === "where") v.split(";").map((c) => c.trim()).filter(Boolean).forEach((c) => params.append("where", c));
    else params.set(k, v);
  }
  return params;
}

async function showRuns() {
  window.mlw.page = "runs";
  // A page left before its answers came is never drawn over the next one.
  const mine = generation;
  const firstPage = getJson("api/runs?" + runsQuery()).catch((e) => e);  // asked beside the facets
  const facets = await getJson("api/facets");
  if (mine !== generation) return;
  document.getElementById("project").textContent = facets.project;
  const option = (value, label, current) => el("option", { value, selected: value === current }, label || value);
  const filter = (name, label, values) => el("select", { id: "f-" + name, "aria-label": label,
    onchange: (e) => { runsState[name] = e.target.value; runsState.offset = 0; load(); } },
    option("", label + ": all", runsState[name]), values.map((v) => option(v, v, runsState[name])));
  let typing;
  const search = el("input", { type: "search", id: "f-q", placeholder: "Search id, script, target, problem…",
    value: runsState.q, oninput: (e) => { clearTimeout(typing);
      typing = setTimeout(() => { runsState.q = e.target.value; runsState.offset = 0; load(); }, 250); } });
  const metric = el("select", { id: "f-metric", "aria-label": "Metric column",
    onchange: (e) => { runsState.metric = e.target.value; if (!e.target.value && runsState.sort === "metric")
      runsState.sort = "run_number"; load(); } },
    option("", "Metric column: none", runsState.metric), facets.metrics.map((m) => option(m, m, runsState.metric)));
  const sweepLink = el("a", { id: "sweep-link" });
  // A sweep's runs show its parameters as columns unless columns were chosen already.
  const sweepFilter = el("select", { id: "f-sweep", "aria-label": "Sweep",
    onchange: async (e) => { runsState.sweep = e.target.value; runsState.offset = 0;
      if (runsState.sweep && !runsState.columns) {
        const sweep = await getJson("api/sweeps/" + encodeURIComponent(runsState.sweep)).catch(() => null);
        if (sweep && !runsState.columns) runsState.columns = sweep.parameters.map((p) => "param:" + p).join(",");
        columnPicker.querySelectorAll("input[data-column]").forEach((box) => { box.checked = chosenColumns().has(box.dataset.column); });
      }
      load(); } },
    option("", "Sweep: all", runsState.sweep), facets.sweeps.map((v) => option(v, v, runsState.sweep)));
  // Parameter and metric columns, several at once.
  const chosenColumns = () => new Set(runsState.columns.split(",").filter(Boolean));
  const columnBox = (field) => el("label", {}, el("input", { type: "checkbox", "data-column": field,
    checked: chosenColumns().has(field), onchange: (e) => {
      const set = chosenColumns();
      if (e.target.checked) set.add(field); else set.delete(field);
      runsState.columns = Array.from(set).join(","); load(); } }), " " + field.replace(/^param:/, ""));
  const columnPicker = el("details", { class: "columns", id: "f-columns" }, el("summary", {}, "Columns"),
    el("div", {}, facets.params.map((p) => columnBox("param:" + p)), facets.metrics.map((m) => columnBox("metric:" + m))));
  const where = el("input", { type: "search", id: "f-where", placeholder: "Filter: lr<0.1; metric:loss<0.5",
    value: runsState.where, onchange: (e) => { runsState.where = e.target.value; runsState.offset = 0; load(); } });
  const compareButton = el("button", { class: "primary", id: "compare-selected",
    onclick: () => { location.hash = "#/compare/" + selected().map(encodeURIComponent).join(","); } });
  const table = el("table", { id: "runs" });
  const pager = el("div", { class: "pager" });
  main.replaceChildren(el("h1", {}, "Runs"),
    el("div", { class: "filters" }, filter("status", "Status", facets.statuses),
      filter("target", "Target", facets.targets), filter("script", "Script", facets.scripts), search,
      metric, sweepFilter, sweepLink, columnPicker, where, compareButton),
    el("p", { class: "error", id: "runs-error" }),
    el("div", { class: "panel" }, table, pager));

  const columns = [["", null], ["#", "run_number"], ["Run", "run_id"], ["Status", "status"],
    ["Script", "script"], ["Target", "target"], ["Created (UTC)", "created"], ["Duration", "duration"],
    ["Exit", "exit_code"]];
  async function load() {
    let page;
    try {
      page = await getJson("api/runs?" + runsQuery());
    } catch (e) {
      if (mine === generation) document.getElementById("runs-error").textContent = e.message;
      return;
    }
    if (mine !== generation) return;
    render(page);
  }
  function render(page) {
    document.getElementById("runs-error").textContent = page instanceof Error ? page.message : "";
    if (page instanceof Error) return;
    sweepLink.replaceChildren(runsState.sweep ? "Sweep page ›" : "");
    sweepLink.href = runsState.sweep ? "#/sweep/" + encodeURIComponent(runsState.sweep) : "#/";
    const fields = runsState.columns.split(",").filter(Boolean);
    const chosen = new Set(selected());
    compareButton.textContent = `Compare selected (${chosen.size})`;
    compareButton.disabled = chosen.size < 2;
    const cols = (runsState.metric ? columns.concat([[runsState.metric, "metric"]]) : columns)
      .concat(fields.map((f) => [f.replace(/^(param|metric):/, ""), f]), [["Problem", null]]);
    const head = el("tr", {}, cols.map(([label, key]) => {
      const sorted = key && runsState.sort === key;
      return el("th", { class: (key ? "sortable" : "") + (sorted ? " sorted" : ""), "data-sort": key,
        onclick: key ? () => { runsState.order = sorted && runsState.order === "desc" ? "asc" : "desc";
          runsState.sort = key; runsState.offset = 0; load(); } : undefined },
        label + (sorted ? (runsState.order === "desc" ? " ▼" : " ▲") : ""));
    }));
    for (const r of page.runs) if (Array.isArray(r.values)) r.values = Object.fromEntries(fields.map((f, i) => [f, r.values[i]]));
    const rows = page.runs.map((r) => el("tr", { "data-run": r.run_id },
      el("td", {}, el("input", { type: "checkbox", "aria-label": "select " + r.run_id, checked: chosen.has(r.run_id),
        onchange: (e) => { const ids = selected().filter((x) => x !== r.run_id);
          if (e.target.checked) ids.push(r.run_id); setSelected(ids); render(page); } })),
      el("td", { class: "num", text: r.run_number }), el("td", {}, runLink(r.run_id)),
      el("td", {}, badge(r.status)), el("td", { text: r.script }), el("td", { text: r.target }),
      el("td", { text: fmtTime(r.created) }), el("td", { class: "num", text: fmtDuration(r.duration_s) }),
      el("td", { class: "num", text: r.exit_code ?? "" }),
      runsState.metric ? el("td", { class: "num metric", text: fmtNumber(r.metric) }) : null,
      fields.map((f) => el("td", { class: "num field", "data-field": f, text: fmtNumber(own(r.values, f)) })),
      el("td", { class: "problem", text: r.problem || "" })));
    table.replaceChildren(el("thead", {}, head), el("tbody", {}, rows.length ? rows :
      el("tr", {}, el("td", { colspan: cols.length, class: "empty", text: "No runs match." }))));
    const first = page.total ? page.offset + 1 : 0;
    const last = Math.min(page.offset + page.runs.length, page.total);
    pager.replaceChildren(el("span", { id: "range", text: `${first}–${last} of ${page.total.toLocaleString("en")}` }),
      el("button", { disabled: page.offset === 0, onclick: () => {
        runsState.offset = Math.max(0, runsState.offset - runsState.limit); load(); } }, "‹ Newer"),
      el("button", { disabled: last >= page.total, onclick: () => {
        runsState.offset += runsState.limit; load(); } }, "Older ›"));
    if (!window.mlw.ready) {
      window.mlw.ready = true;
      performance.mark("mlw-runs-ready");
    }
    document.body.dataset.ready = "runs";
  }
  const first = await firstPage;
  if (mine !== generation) return;
  render(first);
  every(2000, load);
}

// ---------- Charts ----------
function makeChart(container, title, seriesList, onZoom) {
  // seriesList: [{label, x, y}], merged onto one sorted x axis (nulls where a run has no point).
  const xs = Array.from(new Set(seriesList.flatMap((s) => s.x))).sort((a, b) => a - b);
  const index = new Map(xs.map((x, i) => [x, i]));
  const data = [xs];
  for (const s of seriesList) {
    const ys = new Array(xs.length).fill(null);
    s.x.forEach((x, i) => { ys[index.get(x)] = s.y[i]; });
    data.push(ys);
  }
  const width = Math.max(320, container.clientWidth - 24);
  const opts = {
    width, height: 240, cursor: { drag: { x: true, y: false } },
    scales: { x: { time: false } },
    axes: [{ label: "step" }, {}],
    series: [{ label: "step" }].concat(seriesList.map((s, i) => ({
      label: s.label, stroke: COLORS[i % COLORS.length], width: 1.5, spanGaps: seriesList.length > 1,
      points: { show: s.x.length < 60 } }))),
    hooks: onZoom ? { setSelect: [(u) => {
      if (u.select.width < 2) return;
      const from = u.posToVal(u.select.left, "x"), to = u.posToVal(u.select.left + u.select.width, "x");
      onZoom(u, from, to);
    }] } : {},
  };
  const plot = new uPlot(opts, data, container);
  plot.mlwTitle = title;
  window.mlw.charts.push(plot);
  return plot;
}

async function seriesOf(id, query = "") {
  return (await getJson(`api/runs/${encodeURIComponent(id)}/series?points=2000${query}`));
}

function chartPanel(title, note) {
  const box = el("div", { class: "panel chart", "data-metric": title });
  box.append(el("h3", {}, title, " ", el("span", { class: "note", text: note || "" })));
  return box;
}

// ---------- One run ----------
async function showRun(id) {
  window.mlw.page = "run";
  const mine = generation;
  let record = await getJson("api/runs/" + encodeURIComponent(id));
  if (mine !== generation) return;
  const title = el("h1", {});
  const recordBox = el("dl", { class: "record panel", id: "record" });
  const charts = el("div", { class: "grid", id: "charts" });
  const others = el("div", { id: "other-metrics" });
  const log = el("pre", { class: "log", id: "log" });
  const follow = el("input", { type: "checkbox", id: "follow", checked: true });
  const outputs = el("div", { id: "outputs" });
  const paramsBox = el("div", { id: "params-box" });
  // The GPU sampler's series (sys/…, docs/gpus.md): a section of their own, with its summary.
  const systemHead = el("h2", { id: "system-head", hidden: true }, "System");
  const systemBox = el("div", { id: "system" });
  const systemCharts = el("div", { class: "grid", id: "system-charts" });
  main.replaceChildren(title, recordBox, el("h2", {}, "Parameters"), paramsBox, el("h2", {}, "Metrics"), charts, others,
    systemHead, systemBox, systemCharts,
    el("div", { class: "row" }, el("h2", {}, "Driver log"),
      el("label", { class: "muted" }, follow, " follow")), log, el("h2", {}, "Outputs"), outputs);

  function renderRecord() {
    const cancel = record.live ? el("button", { class: "danger", id: "cancel", onclick: async (e) => {
      e.target.disabled = true; e.target.textContent = "Canceling…";
      try {
        await api(`api/runs/${encodeURIComponent(id)}/cancel`, { method: "POST", headers: { "X-MLW-CSRF": csrf } });
      } catch (err) { e.target.textContent = "Cancel failed: " + err.message; }
    } }, "Cancel run") : null;
    title.replaceChildren(...[document.createTextNode(`Run ${record.run_number}`), el("code", { text: record.run_id }),
      badge(record.status), cancel].filter(Boolean));
    const rows = [["Script", [record.script].concat(record.arguments || []).join(" ")],
      ["Target", `${record.target} (${record.target_type})`], ["Image", record.image_tag],
      ["Git commit", record.git_commit ? record.git_commit + (record.git_dirty ? " (uncommitted changes)" : "") : ""],
      ["Created", fmtTime(record.created)], ["Started", fmtTime(record.started)], ["Ended", fmtTime(record.ended)],
      ["Duration", record.live && record.started ? "running for " + fmtDuration((Date.now() - Date.parse(record.started)) / 1000)
        : fmtDuration(record.duration_s)], ["Exit code", record.exit_code ?? ""],
      ["Sweep", record.sweep_id ? `${record.sweep_id} (point ${record.point})` : ""],
      ["Data", (record.data || []).map((d) => `${d.name}@${d.version} (${String(d.id).slice(0, 7)}) at ${d.mount}`).join("; ")],
      ["Problems", (record.problems || []).join("; ")], ["Run folder", record.run_folder]];
    recordBox.replaceChildren(...rows.filter(([, v]) => v !== "" && v !== null && v !== undefined)
      .flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { text: String(v) })]),
      ...(record.has_build_log ? [el("dt", { text: "Environment build" }), el("dd", {}, el("a", { id: "build-log",
        href: `api/runs/${encodeURIComponent(id)}/build.log`, text: "build.log" }))] : []),
      // Ports that `mlw experiment forward` (or submit --forward) serves on this machine now.
      ...(record.live && (record.forwards || []).length ? [el("dt", { text: "Forwarded" }), el("dd", { id: "forwards" },
        ...record.forwards.flatMap((f, i) => [i ? ", " : "", el("a", { href: f.url, target: "_blank", rel: "noopener",
          text: f.url }), ` (port ${f.port})`]))] : []));
    const names = Object.keys(record.params || {});
    paramsBox.replaceChildren(names.length ? el("table", { class: "panel", id: "params" }, el("tbody", {}, names.map((n) =>
      el("tr", {}, el("th", { text: n }), el("td", { class: "num", text: fmtNumber(own(record.params, n)) }))))) :
      el("p", { class: "muted", text: "No parameters." }));
    renderSystem();
    outputs.replaceChildren(record.outputs && record.outputs.length ? el("ul", {}, record.outputs.map((p) =>
      el("li", {}, el("a", { href: `api/runs/${encodeURIComponent(id)}/outputs/` +
        p.split("/").map(encodeURIComponent).join("/"), download: p.split("/").pop(), text: p })))) :
      el("p", { class: "muted", text: record.live ? "Collected when the run ends." : "No outputs." }));
  }

  function renderSystem() {
    const use = record.system || {};
    const gpus = use.gpus || [];
    // A Slurm job's GPUs of its other nodes are "node N, GPU K" (data-gpu "N:K").
    const rows = gpus.map((g) => el("tr", { "data-gpu": g.node ? `${g.node}:${g.gpu}` : String(g.gpu) },
      el("th", { text: `${g.node ? `node ${g.node}, ` : ""}GPU ${g.gpu}` }),
      el("td", { class: "num", text: `${fmtNumber(g.util_mean)}%` }), el("td", { class: "num", text: `${fmtNumber(g.util_p95)}%` }),
      el("td", { class: "num", text: `${fmtNumber(g.mem_peak_mib)}${g.mem_total_mib ? " of " + fmtNumber(g.mem_total_mib) : ""} MiB` }),
      el("td", { class: "num", text: String(g.samples) })));
    if (use.cpu_mean !== undefined || use.rss_peak_mb !== undefined) {
      rows.push(el("tr", { "data-gpu": "processes" }, el("th", { text: "Processes" }),
        el("td", { class: "num", text: use.cpu_mean !== undefined ? `CPU ${fmtNumber(use.cpu_mean)}%` : "" }), el("td", {}),
        el("td", { class: "num", text: use.rss_peak_mb !== undefined ? `${fmtNumber(use.rss_peak_mb)} MiB` : "" }), el("td", {})));
    }
    if (rows.length) systemHead.hidden = false;
    systemBox.replaceChildren(rows.length ? el("table", { class: "panel", id: "system-table" },
      el("thead", {}, el("tr", {}, ["", "Utilisation (mean)", "p95", "Memory (peak)", "Samples"].map((h) => el("th", { text: h })))),
      el("tbody", {}, rows)) : "");
  }

  const plots = new Map();
  async function renderCharts() {
    const data = await seriesOf(id);
    if (mine !== generation) return;
    const names = Object.keys(data.series);
    // A metric logged once is a value beside the others, not a chart of one dot.
    const numeric = names.filter((n) => data.series[n].total > 1);
    for (const name of numeric) {
      const s = data.series[name];
      const note = s.total > s.x.length ? `${s.total.toLocaleString("en")} points, ${s.x.length} shown` :
        `${s.total} points`;
      if (plots.has(name)) {
        const p = plots.get(name);
        if (!p.zoomed) { p.plot.setData([s.x, s.y]); p.box.querySelector(".note").textContent = note; }
        continue;
      }
      const box = chartPanel(name, note);
      (name.startsWith("sys/") ? systemCharts : charts).append(box);
      systemHead.hidden = systemHead.hidden && !name.startsWith("sys/");
      const entry = { box, zoomed: false };
      entry.plot = makeChart(box, name, [{ label: name, x: s.x, y: s.y }], async (u, from, to) => {
        const detail = (await seriesOf(id, `&name=${encodeURIComponent(name)}&from=${from}&to=${to}`)).series[name];
        entry.zoomed = true;
        u.setData([detail.x, detail.y]);
      });
      entry.plot.over.addEventListener("dblclick", () => { entry.zoomed = false; renderCharts(); });
      plots.set(name, entry);
    }
    const rest = names.filter((n) => data.series[n].total <= 1 && !n.startsWith("sys/"));
    const last = record.metrics || {};
    others.replaceChildren(rest.length ? el("table", { class: "panel" }, el("tbody", {}, rest.map((n) =>
      el("tr", { "data-metric": n }, el("td", { text: n }), el("td", { text: own(last, n) !== undefined ? fmtNumber(own(last, n)) :
        data.series[n].total === 1 ? fmtNumber(data.series[n].y[0]) : "(not a number)" }))))) : "");
    if (!numeric.some((n) => !n.startsWith("sys/")) && !rest.length) charts.replaceChildren(el("p", { class: "muted", text: "No metrics logged." }));
    document.body.dataset.ready = "run";
  }

  // The log: bytes from the offset reached, decoded as one stream (no line lost or doubled).
  let offset = 0;
  const decoder = new TextDecoder("utf-8");
  let logBusy = false;
  async function pollLog() {
    if (logBusy) return;
    logBusy = true;
    try {
      while (mine === generation) {
        const res = await api(`api/runs/${encodeURIComponent(id)}/log?offset=${offset}`);
        const status = res.headers.get("X-Run-Status");
        const bytes = new Uint8Array(await res.arrayBuffer());
        offset += bytes.length;
        const ended = FINAL.has(status) && bytes.length < 1024 * 1024;
        log.append(decoder.decode(bytes, { stream: !ended }));
        if (bytes.length && follow.checked) log.scrollTop = log.scrollHeight;
        if (ended) { log.dataset.ended = "1"; break; }
        if (bytes.length < 1024 * 1024) break;
      }
    } finally { logBusy = false; }
  }

  renderRecord();
  await Promise.all([renderCharts(), pollLog()]);
  if (record.live) {
    every(1000, pollLog);
    let tick = 0;
    every(1000, () => { if (record.live) renderRecord(); });  // the elapsed time ticks
    every(2000, async () => {
      record = await getJson("api/runs/" + encodeURIComponent(id));
      renderRecord();
      if (++tick % 2 === 0 || !record.live) renderCharts();
    });
  }
}

// ---------- Compare ----------
async function showCompare(ids) {
  window.mlw.page = "compare";
  const mine = generation;
  if (ids.length < 2) {
    main.replaceChildren(el("h1", {}, "Compare"), el("p", { class: "muted",
      text: "Tick two or more runs on the Runs page, then choose Compare selected." }));
    document.body.dataset.ready = "compare";
    return;
  }
  const records = await Promise.all(ids.map((id) => getJson("api/runs/" + encodeURIComponent(id))));
  const series = await Promise.all(ids.map((id) => seriesOf(id)));
  if (mine !== generation) return;
  const charts = el("div", { class: "grid", id: "charts" });
  const table = el("table", { id: "compare-table" });
  main.replaceChildren(el("h1", {}, `Compare ${ids.length} runs`), el("div", { class: "panel" }, table),
    el("h2", {}, "Metrics"), charts);
  const metricNames = Array.from(new Set(records.flatMap((r) => Object.keys(r.metrics || {}))
    .concat(series.flatMap((s) => Object.keys(s.series))))).sort();
  const rows = [["Status", (r) => r.status], ["Script", (r) => r.script],
    ["Arguments", (r) => (r.arguments || []).join(" ")], ["Target", (r) => r.target]]
    .concat(Array.from(new Set(records.flatMap((r) => Object.keys(r.params || {})))).sort()
      .map((p) => ["param " + p, (r) => fmtNumber(own(r.params, p))]), [
    ["Git commit", (r) => (r.git_commit || "").slice(0, 12)], ["Duration", (r) => fmtDuration(r.duration_s)],
    ["Exit code", (r) => r.exit_code ?? ""]])
    .concat(metricNames.map((m) => [m, (r) => (own(r.metrics, m) !== undefined ? fmtNumber(own(r.metrics, m)) : "")]));
  table.replaceChildren(el("thead", {}, el("tr", {}, el("th", { text: "" }), records.map((r) =>
    el("th", {}, runLink(r.run_id))))), el("tbody", {}, rows.map(([label, get]) => {
    const values = records.map((r) => String(get(r)));
    const differs = new Set(values).size > 1;
    return el("tr", { class: differs ? "diff" : "", "data-row": label }, el("th", { text: label }),
      values.map((v) => el("td", { text: v })));
  })));
  // Legends name what differs between the runs: their parameters, else their numbers.
  const paramNames = Array.from(new Set(records.flatMap((r) => Object.keys(r.params || {}))))
    .filter((p) => new Set(records.map((r) => JSON.stringify(own(r.params, p)))).size > 1);
  const legend = (r) => (paramNames.length ? paramNames.map((p) => `${p}=${fmtNumber(own(r.params, p))}`).join(" ")
    : `run ${r.run_number}`);
  for (const name of metricNames) {
    const list = series.map((s, i) => (own(s.series, name) && own(s.series, name).total ?
      { label: legend(records[i]), x: own(s.series, name).x, y: own(s.series, name).y } : null)).filter(Boolean);
    if (!list.length) continue;
    const box = chartPanel(name, `${list.length} runs`);
    charts.append(box);
    makeChart(box, name, list, null);
  }
  document.body.dataset.ready = "compare";
}

// ---------- GPUs: every GPU of the targets that lease them (computetarget gpus) ----------
async function showGpus() {
  window.mlw.page = "gpus";
  const mine = generation;
  const box = el("div", { id: "gpus" });
  main.replaceChildren(el("h1", {}, "GPUs"), box);
  async function load() {
    const targets = await getJson("api/gpus");
    if (mine !== generation) return;
    const idle = (g) => (g.idle_s === null || g.idle_s === undefined ? "-" : g.idle_s <= 0 ? "busy" : fmtDuration(g.idle_s));
    box.replaceChildren(...(targets.length ? targets.flatMap((t) => [el("h2", {}, `${t.target}` + (t.host ? ` (${t.host})` : "")),
      t.error ? el("p", { class: "error", text: t.error }) : el("table", { class: "panel", "data-target": t.target },
        el("thead", {}, el("tr", {}, ["GPU", "Name", "Util", "Memory (MiB)", "Run", "User", "Idle for", "Processes"]
          .map((h) => el("th", { text: h })))),
        el("tbody", {}, t.gpus.map((g) => el("tr", { "data-gpu": String(g.index) }, el("td", { text: String(g.index) }),
          el("td", { text: g.name }), el("td", { class: "num", text: g.util === null ? "?" : `${g.util}%` }),
          el("td", { class: "num", text: `${g.mem_used_mib} / ${g.mem_total_mib}` }),
          el("td", {}, g.run_id ? (g.in_history ? runLink(g.run_id) : `${g.run_id} (${g.run_user})`) : "-"),
          el("td", { text: g.target_user || "-" }), el("td", { text: idle(g) }),
          el("td", { text: g.processes.map((p) => `${p.foreign ? "foreign: " : ""}${p.name} (pid ${p.pid}, ${p.user})`).join("; ") }))))),
    ]) : [el("p", { class: "muted", text: "No target of this project leases GPUs (gpusPerRun)." })]));
    document.body.dataset.ready = "gpus";
  }
  await load();
  every(5000, load);
}

// ---------- Router ----------
async function route() {
  const mine = ++generation;
  timers.forEach(clearInterval);
  timers = [];
  window.mlw.charts = [];
  document.body.dataset.ready = "";
  const [hashPath, hashQuery] = location.hash.slice(1).split("?");
  const hash = decodeURIComponent(hashPath) || "/";
  const parts = hash.split("/").filter(Boolean);
  document.getElementById("nav-runs").classList.toggle("on", !parts.length);
  document.getElementById("nav-compare").classList.toggle("on", parts[0] === "compare");
  document.getElementById("nav-gpus").classList.toggle("on", parts[0] === "gpus");
  try {
    if (parts[0] === "run" && parts[1]) await showRun(parts[1]);
    else if (parts[0] === "sweep" && parts[1]) await showSweep(parts[1], hashQuery);
    else if (parts[0] === "gpus") await showGpus();
    else if (parts[0] === "compare") await showCompare(parts[1] ? parts[1].split(",") : selected());
    else await showRuns();
  } catch (err) {
    if (mine === generation) main.replaceChildren(el("p", { class: "error", id: "error", text: "Error: " + err.message }));
  }
}
setSelected(selected());
window.addEventListener("hashchange", route);
route();
