// mlw history ui: a sweep's page (best first, parallel coordinates with brushing, the metric
// against each parameter, curves grouped by a parameter, CSV). Uses app.js's helpers.
"use strict";

// The page's state lives in the URL: #/sweep/ID?metric=loss&group=lr&smooth=0.5&logy=1&brush=lr:0.2:0.6
function sweepState(query) {
  const p = new URLSearchParams(query || "");
  const brush = {};
  for (const part of (p.get("brush") || "").split(";").filter(Boolean)) {
    const [axis, a, b] = part.split(":");
    if (axis && Number.isFinite(+a) && Number.isFinite(+b)) brush[axis] = [Math.min(+a, +b), Math.max(+a, +b)];
  }
  return { metric: p.get("metric") || "", group: p.get("group") || "", smooth: +(p.get("smooth") || 0),
    logy: p.get("logy") === "1", brush };
}
function sweepHash(id, s) {
  const p = new URLSearchParams();
  if (s.metric) p.set("metric", s.metric);
  if (s.group) p.set("group", s.group);
  if (s.smooth) p.set("smooth", s.smooth);
  if (s.logy) p.set("logy", "1");
  const brush = Object.entries(s.brush).map(([k, [a, b]]) => `${k}:${a.toFixed(3)}:${b.toFixed(3)}`).join(";");
  if (brush) p.set("brush", brush);
  const q = p.toString();
  return "#/sweep/" + encodeURIComponent(id) + (q ? "?" + q : "");
}

// An axis of the parallel coordinates: how a value maps to 0 (bottom) … 1 (top).
function makeAxis(name, values, kind) {
  const present = values.filter((v) => v !== null && v !== undefined);
  const numeric = present.length > 0 && present.every((v) => typeof v === "number");
  if (!numeric) {
    const cats = Array.from(new Set(present.map((v) => JSON.stringify(v)))).sort();
    const pos = (v) => (v === null || v === undefined ? null :
      cats.length < 2 ? 0.5 : cats.indexOf(JSON.stringify(v)) / (cats.length - 1));
    return { name, kind, log: false, pos, ticks: cats.map((c) => [JSON.parse(c), pos(JSON.parse(c))]) };
  }
  const lo = Math.min(...present), hi = Math.max(...present);
  // A parameter of a few whole values (a batch size, a layer count) is discrete: its ticks are
  // its values, on a log2 axis when they are powers of two spanning 4x or more (16, 32, …, 256).
  const distinct = Array.from(new Set(present)).sort((x, y) => x - y);
  const discrete = kind === "param" && distinct.length <= 12 && distinct.every(Number.isInteger);
  const pow2 = discrete && lo > 0 && hi / lo >= 4 && distinct.every((v) => Number.isInteger(Math.log2(v)));
  const log = pow2 || (!discrete && lo > 0 && hi / lo >= 100);  // spanning decades: a log axis
  const f = pow2 ? Math.log2 : log ? Math.log10 : (x) => x;
  const a = f(lo), b = f(hi);
  const pos = (v) => (typeof v !== "number" ? null : b === a ? 0.5 : (f(v) - a) / (b - a));
  let ticks = log ? [] : [lo, (lo + hi) / 2, hi];
  if (discrete) ticks = distinct;
  else if (log) for (let e = Math.ceil(a); e <= Math.floor(b); e++) ticks.push(10 ** e);
  if (log && ticks.length < 2) ticks.push(lo, hi);
  return { name, kind, log, base: pow2 ? 2 : log ? 10 : 0, discrete, pos, ticks: ticks.map((t) => [t, pos(t)]) };
}

function passes(run, axes, brush) {
  for (const ax of axes) {
    const range = brush[ax.name];
    if (!range) continue;
    const p = ax.pos(ax.value(run));
    if (p === null || p < range[0] - 1e-9 || p > range[1] + 1e-9) return false;
  }
  return true;
}

function drawParallel(canvas, runs, axes, brush, best, worst) {
  const ratio = window.devicePixelRatio || 1;
  const width = canvas.clientWidth, height = 320;
  canvas.width = width * ratio;
  canvas.height = height * ratio;
  canvas.style.height = height + "px";
  const g = canvas.getContext("2d");
  g.scale(ratio, ratio);
  g.clearRect(0, 0, width, height);
  const top = 34, bottom = height - 26, left = 60, right = width - 60;
  const xOf = (i) => (axes.length < 2 ? (left + right) / 2 : left + (i * (right - left)) / (axes.length - 1));
  const yOf = (p) => bottom - p * (bottom - top);
  let shown = 0;
  const line = (run) => {
    g.beginPath();
    let started = false;
    axes.forEach((ax, i) => {
      const p = ax.pos(ax.value(run));
      if (p === null) { started = false; return; }
      if (!started) g.moveTo(xOf(i), yOf(p)); else g.lineTo(xOf(i), yOf(p));
      started = true;
    });
    g.stroke();
  };
  g.lineWidth = 1;
  g.strokeStyle = "rgba(150,150,150,0.25)";
  const kept = [];
  for (const run of runs) { if (passes(run, axes, brush)) kept.push(run); else line(run); }
  const metric = axes.find((a) => a.kind === "metric");
  for (const run of kept) {
    const v = metric ? metric.value(run) : null;
    const t = typeof v === "number" && best !== worst ? (v - best) / (worst - best) : 0.5;
    g.strokeStyle = `hsla(${Math.round(220 - 200 * Math.min(1, Math.max(0, t)))}, 75%, 45%, ${runs.length > 2000 ? 0.35 : 0.8})`;
    line(run);
    shown++;
  }
  g.fillStyle = "#24292f";
  g.font = "12px system-ui, sans-serif";
  g.textAlign = "center";
  axes.forEach((ax, i) => {
    const x = xOf(i);
    g.strokeStyle = "#57606a";
    g.lineWidth = 1;
    g.beginPath(); g.moveTo(x, top); g.lineTo(x, bottom); g.stroke();
    g.fillText(ax.name + (ax.base === 2 ? " (log2)" : ax.log ? " (log)" : ""), x, top - 14);
    g.textAlign = "right";
    for (const [t, p] of ax.ticks.slice(0, 12)) if (p !== null) g.fillText(fmtNumber(t), x - 5, yOf(p) + 4);
    g.textAlign = "center";
    const range = brush[ax.name];
    if (range) {
      g.fillStyle = "rgba(47,111,237,0.18)";
      g.fillRect(x - 8, yOf(range[1]), 16, yOf(range[0]) - yOf(range[1]));
      g.strokeStyle = "#2f6fed";
      g.strokeRect(x - 8, yOf(range[1]), 16, yOf(range[0]) - yOf(range[1]));
      g.fillStyle = "#24292f";
    }
  });
  return { shown, xOf, yOf, top, bottom };
}

// A small scatter of the metric against one parameter (log x where it spans decades).
function drawScatter(canvas, runs, ax, metricAxis) {
  const ratio = window.devicePixelRatio || 1;
  const width = canvas.clientWidth || 260, height = 200;
  canvas.width = width * ratio;
  canvas.height = height * ratio;
  canvas.style.height = height + "px";
  const g = canvas.getContext("2d");
  g.scale(ratio, ratio);
  const l = 60, r = width - 16, t = 10, b = height - 34;
  g.strokeStyle = "#8c959f";
  g.strokeRect(l, t, r - l, b - t);
  g.fillStyle = "#2f6fed";
  let drawn = 0;
  for (const run of runs) {
    const px = ax.pos(ax.value(run)), py = metricAxis.pos(metricAxis.value(run));
    if (px === null || py === null) continue;
    g.beginPath();
    g.arc(l + px * (r - l), b - py * (b - t), 3, 0, 2 * Math.PI);
    g.fill();
    drawn++;
  }
  g.fillStyle = "#24292f";
  g.font = "11px system-ui, sans-serif";
  g.textAlign = "center";
  g.fillText(ax.name + (ax.base === 2 ? " (log2)" : ax.log ? " (log)" : ""), (l + r) / 2, height - 8);
  g.textAlign = "right";
  for (const [v, p] of metricAxis.ticks.slice(0, 5)) if (p !== null) g.fillText(fmtNumber(v), l - 4, b - p * (b - t) + 4);
  g.textAlign = "center";
  for (const [v, p] of ax.ticks.slice(0, 8)) if (p !== null) g.fillText(fmtNumber(v), l + p * (r - l), b + 12);
  return drawn;
}

const smoothed = (ys, alpha) => {
  if (!alpha) return ys;
  let last = null;
  return ys.map((y) => (y === null ? null : (last = last === null ? y : alpha * last + (1 - alpha) * y)));
};

async function drawCurves(box, id, state, mine) {
  // Only the latest request draws: the page's first curves may answer after a later grouping's.
  const ask = String(+(box.dataset.ask || 0) + 1);
  box.dataset.ask = ask;
  if (!state.metric) { box.replaceChildren(el("p", { class: "muted", text: "No metric to chart." })); return; }
  const group = state.group;
  const data = await getJson(`api/sweeps/${encodeURIComponent(id)}/curves?metric=${encodeURIComponent(state.metric)}` +
    `&group=${encodeURIComponent(group)}`);
  if (mine !== generation || box.dataset.ask !== ask) return;
  window.mlw.charts = window.mlw.charts.filter((c) => c.mlwTitle !== "curves" || (c.destroy(), false));
  box.replaceChildren();
  const groups = data.groups, trials = data.trials || [];
  if (!groups.length) { box.append(el("p", { class: "muted", text: "No run has logged " + state.metric + " yet." })); return; }
  // Each trial's own curve in its group's colour (a stopped, failed or canceled one dashed, never
  // averaged away), and each group's mean over them, thicker, named in the legend.
  const xs = Array.from(new Set(groups.flatMap((gr) => gr.x).concat(trials.flatMap((t) => t.x)))).sort((a, b) => a - b);
  const at = new Map(xs.map((x, i) => [x, i]));
  const fill = (x, vals) => { const out = new Array(xs.length).fill(null); x.forEach((v, i) => { out[at.get(v)] = vals[i]; }); return out; };
  const colorOf = new Map(groups.map((gr, k) => [gr.group, COLORS[k % COLORS.length]]));
  const cols = [xs];
  const series = [{ label: "step" }];
  trials.forEach((t) => {
    cols.push(smoothed(fill(t.x, t.y), state.smooth));
    const ended = t.status !== "Completed" && t.status !== "Running";
    series.push({ label: t.run_id, stroke: (colorOf.get(t.group) || COLORS[0]) + (ended ? "99" : "66"), width: 1,
      dash: ended ? [5, 4] : undefined, spanGaps: true, mlwTrial: t.status });
  });
  groups.forEach((gr) => {
    const label = group ? `${group}=${gr.group} (${gr.runs})` : `mean of ${gr.runs} runs`;
    cols.push(smoothed(fill(gr.x, gr.mean), state.smooth));
    series.push({ label, stroke: colorOf.get(gr.group), width: 2.5, spanGaps: true });
  });
  const plot = new uPlot({
    width: Math.max(320, box.clientWidth - 24), height: 280,
    scales: { x: { time: false }, y: state.logy ? { distr: 3 } : {} },
    axes: [{ label: "step" }, { label: state.metric }], series,
    legend: { show: true },
  }, cols, box);
  // The legend names the groups; a trial is named where the pointer is (its run id in the title).
  plot.root.querySelectorAll(".u-legend tr.u-series").forEach((row, i) => {
    if (series[i] && series[i].mlwTrial) row.style.display = "none";
  });
  if (data.trials_left_out) box.append(el("p", { class: "muted", text: `${data.trials_left_out} more runs are in the means only` }));
  plot.mlwTitle = "curves";
  plot.mlwTrials = trials.map((t) => ({ run_id: t.run_id, status: t.status, group: t.group }));
  window.mlw.charts.push(plot);
}

// A scheduled sweep (ASHA, Hyperband): the budget spent, and each rung's tally of the decisions
// taken there (who reached it, went on as too few to judge by, was promoted or stopped).
function scheduleSection(sweep) {
  const s = sweep.scheduler;
  if (!s) return [];
  const b = sweep.budget, hyper = s.type === "hyperband";
  const pct = (a, c) => (c ? ` (${Math.round((100 * a) / c)}%)` : "");
  const head = [`Rung (${s.resource})`].concat(hyper ? ["Bracket"] : [],
    ["Reached", "Promoted", "Went on (too few to judge by)", "Stopped"]);
  const rows = sweep.rungs.map((r) => el("tr", {}, [r.rung].concat(hyper ? [r.bracket] : [],
    [r.reached, r.promoted, r.goes_on, r.stopped]).map((v) => el("td", { class: "num", text: v }))));
  return [el("h2", {}, `Rungs (${hyper ? "Hyperband" : "ASHA"}: ${s.resource} ${s.min} to ${s.max}, eta ${s.eta})`),
    el("div", { class: "panel" },
      el("p", { id: "budget", class: "muted", text: `Budget: ${fmtNumber(b.spent)} of ${fmtNumber(b.full)} ${b.unit} ` +
        `spent${pct(b.spent, b.full)} against every trial given --${b.unit} ${s.max}; ${fmtNumber(b.gpu_seconds)} ` +
        "GPU-seconds held" + (b.full_gpu_seconds ? ` of about ${fmtNumber(b.full_gpu_seconds)}` +
        `${pct(b.gpu_seconds, b.full_gpu_seconds)}` : "") }),
      el("table", { id: "rungs" }, el("thead", {}, el("tr", {}, head.map((h) => el("th", { text: h })))),
        el("tbody", {}, rows)))];
}

// The best value of the sweep's metric so far, at each completed trial's end (seconds since the
// sweep began).
function drawBestSoFar(box, sweep) {
  const points = sweep.best_so_far || [];
  window.mlw.bestSoFar = points.map((p) => p.value);
  if (!points.length) { box.replaceChildren(el("p", { class: "muted", text: "No trial has completed yet." })); return; }
  const plot = new uPlot({
    width: Math.max(320, box.clientWidth - 24), height: 200, scales: { x: { time: false } },
    axes: [{ label: "seconds since the sweep began" }, { label: "best " + (sweep.metric || "value") }],
    series: [{ label: "s" }, { label: "best so far", stroke: COLORS[0], width: 2, paths: uPlot.paths.stepped({ align: 1 }),
      points: { show: true } }],
  }, [points.map((p) => p.t_s), points.map((p) => p.value)], box);
  plot.mlwTitle = "best-so-far";
  window.mlw.charts.push(plot);
}

function sweepCsv(rows, params, metrics) {
  // A text that a spreadsheet would read as a formula (=, +, -, @, tab, CR first) gets a leading
  // apostrophe (OWASP's CSV-injection rule); numbers stay numbers. Header cells are quoted alike.
  const quote = (v) => {
    let s = v === null || v === undefined ? "" : typeof v === "string" ? v : JSON.stringify(v);
    if (typeof v === "string" && /^[=+\-@\t\r]/.test(s)) s = "'" + s;
    return /[",\n\r]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
  };
  const head = ["rank", "run_id", "point", "status"].concat(params, metrics, ["duration_s", "problem"]);
  const lines = [head.map(quote).join(",")];
  rows.forEach((r, i) => lines.push([i + 1, r.run_id, r.point, r.status].concat(params.map((p) => own(r.params, p)),
    metrics.map((m) => own(r.metrics, m)), [r.duration_s, r.problem]).map(quote).join(",")));
  return lines.join("\n") + "\n";
}

// What the page shows of a sweep for one metric: its ranking and the parallel axes.
function sweepModel(sweep, state) {
  const metricNames = Array.from(new Set(sweep.runs.flatMap((r) => Object.keys(r.metrics)))).sort();
  if (!state.metric) state.metric = sweep.metric || metricNames[0] || "";
  const maximize = state.metric === sweep.metric ? sweep.goal === "max" : false;
  const params = sweep.parameters;
  const mval = (r) => { const v = own(r.metrics, state.metric); return typeof v === "number" ? v : null; };
  const ranked = sweep.runs.slice().sort((a, b) => {
    const x = mval(a), y = mval(b);
    if ((x === null) !== (y === null)) return x === null ? 1 : -1;
    if (x === null) return a.point - b.point;
    return maximize ? y - x : x - y;
  });
  const axes = params.map((p) => Object.assign(makeAxis(p, sweep.runs.map((r) => own(r.params, p)), "param"),
    { value: (r) => own(r.params, p) }));
  if (state.metric) axes.push(Object.assign(makeAxis(state.metric, sweep.runs.map(mval), "metric"), { value: mval }));
  const values = sweep.runs.map(mval).filter((v) => v !== null);
  const best = values.length ? (maximize ? Math.max(...values) : Math.min(...values)) : 0;
  const worst = values.length ? (maximize ? Math.min(...values) : Math.max(...values)) : 0;
  return { metricNames, params, ranked, axes, best, worst };
}

function renderSweepTable(table, countLine, model, sweep, state, geometry) {
  const { params, metricNames, axes } = model;
  const rows = model.ranked.filter((r) => passes(r, axes, state.brush));
  const scheduled = !!sweep.scheduler;
  const head = el("tr", {}, ["#", "Run", "Point", "Status"].concat(scheduled ? ["Reached"] : [], params, metricNames,
    ["Started", "Duration", "Problem"])
    .map((h) => el("th", { text: h })));
  table.replaceChildren(el("thead", {}, head), el("tbody", {}, rows.slice(0, 500).map((r, i) => el("tr", { "data-run": r.run_id },
    el("td", { class: "num", text: i + 1 }), el("td", {}, runLink(r.run_id)), el("td", { class: "num", text: r.point }),
    el("td", {}, badge(r.status)),
    scheduled ? el("td", { class: "num reached", text: fmtNumber(r.reached), title: (r.decisions || []).join("\n") }) : [],
    params.map((p) => el("td", { class: "num", text: fmtNumber(own(r.params, p)) })),
    metricNames.map((m) => el("td", { class: "num metric", text: fmtNumber(own(r.metrics, m)) })),
    el("td", { class: "started", text: fmtTime(r.started) }),
    el("td", { class: "num", text: fmtDuration(r.duration_s) }), el("td", { class: "problem", text: r.problem || "" })))));
  countLine.textContent = `${rows.length} of ${sweep.runs.length} runs` + (rows.length > 500 ? " (the best 500 listed)" : "");
  window.mlw.sweep = { runs: sweep.runs.length, shown: rows.length, lines: geometry ? geometry.shown : 0,
    axes: axes.map((a) => ({ name: a.name, log: a.log, base: a.base, discrete: a.discrete,
      ticks: a.ticks.map(([t]) => t) })) };
}

// Brushing: a drag along an axis keeps the runs whose value lies in the dragged span; a click on
// an axis clears its brush. `geometry()` is the last drawing's; `changed(done)` redraws.
function attachBrushing(canvas, axes, state, geometry, changed) {
  const mine = generation;
  let drag = null;
  const axisAt = (x) => axes.findIndex((_, i) => Math.abs(geometry().xOf(i) - x) < 16);
  const frac = (y) => { const g = geometry(); return Math.min(1, Math.max(0, (g.bottom - y) / (g.bottom - g.top))); };
  canvas.addEventListener("mousedown", (e) => {
    const r = canvas.getBoundingClientRect();
    const i = axisAt(e.clientX - r.left);
    if (i >= 0) drag = { axis: axes[i].name, from: frac(e.clientY - r.top), moved: false };
  });
  window.addEventListener("mousemove", (e) => {
    if (!drag || mine !== generation) return;
    const to = frac(e.clientY - canvas.getBoundingClientRect().top);
    if (Math.abs(to - drag.from) > 0.01) drag.moved = true;
    if (drag.moved) { state.brush[drag.axis] = [Math.min(drag.from, to), Math.max(drag.from, to)]; changed(false); }
  });
  window.addEventListener("mouseup", () => {
    if (!drag || mine !== generation) return;
    if (!drag.moved) delete state.brush[drag.axis];
    drag = null;
    changed(true);
  });
}

async function showSweep(id, query) {
  window.mlw.page = "sweep";
  const mine = generation;
  const state = sweepState(query);
  const sweep = await getJson("api/sweeps/" + encodeURIComponent(id));
  if (mine !== generation) return;
  const model = sweepModel(sweep, state);
  const { metricNames, params, axes } = model;
  const counts = {};
  for (const r of sweep.runs) counts[r.status] = (counts[r.status] || 0) + 1;
  const go = () => { history.replaceState(null, "", sweepHash(id, state)); };
  const select = (idName, label, options, current, onchange) => el("label", { class: "muted" }, label + " ",
    el("select", { id: idName, onchange }, options.map(([v, t]) => el("option", { value: v, selected: v === current }, t))));
  const canvas = el("canvas", { id: "parallel", class: "parallel" });
  const countLine = el("p", { class: "muted", id: "brush-count" });
  const table = el("table", { id: "sweep-table" });
  const scatters = el("div", { class: "grid", id: "scatters" });
  const curves = el("div", { class: "panel chart", id: "curves" });
  const bestChart = el("div", { class: "panel chart", id: "best-so-far" });
  const recurve = () => { go(); drawCurves(curves, id, state, generation); };
  main.replaceChildren(
    el("h1", {}, "Sweep ", el("code", { text: sweep.sweep_id })),
    el("p", { class: "muted", text: `${sweep.method} over ${params.join(", ")} · ${sweep.points} points on ` +
      `${sweep.targets.join(", ")} · ${Object.entries(counts).map(([k, v]) => `${v} ${k}`).join(", ")}` +
      (sweep.early_stop ? ` · early stopping: ${sweep.early_stop}` : "") }),
    el("div", { class: "filters" },
      select("s-metric", "Metric", metricNames.map((m) => [m, m]), state.metric, (e) => { state.metric = e.target.value; go(); route(); }),
      el("button", { id: "csv", onclick: () => {
        const rows = model.ranked.filter((r) => passes(r, axes, state.brush));
        const blob = new Blob([sweepCsv(rows, params, metricNames)], { type: "text/csv" });
        const a = el("a", { href: URL.createObjectURL(blob), download: sweep.sweep_id + ".csv" });
        document.body.append(a); a.click(); a.remove();
      } }, "Export CSV"),
      el("button", { id: "clear-brush", onclick: () => { state.brush = {}; go(); redraw(); } }, "Clear brushes")),
    ...scheduleSection(sweep),
    el("h2", {}, `Best ${state.metric || "value"} so far`), bestChart,
    el("h2", {}, "Parallel coordinates ", el("span", { class: "note", text: "drag along an axis to filter" })),
    el("div", { class: "panel" }, canvas, countLine),
    el("h2", {}, "Runs, best first"), el("div", { class: "panel" }, table),
    el("h2", {}, `${state.metric || "metric"} against each parameter`), scatters,
    el("h2", {}, "Curves"),
    el("div", { class: "filters" },
      select("s-group", "Group by", [["", "none"]].concat(params.map((p) => [p, p])), state.group,
        (e) => { state.group = e.target.value; recurve(); }),
      el("label", { class: "muted" }, "Smoothing ", el("input", { id: "s-smooth", type: "range", min: 0, max: 0.95, step: 0.05,
        value: state.smooth, onchange: (e) => { state.smooth = +e.target.value; recurve(); } })),
      el("label", { class: "muted" }, el("input", { id: "s-logy", type: "checkbox", checked: state.logy,
        onchange: (e) => { state.logy = e.target.checked; recurve(); } }), " log y")),
    curves);

  let geometry;
  function redraw() {
    geometry = drawParallel(canvas, sweep.runs, axes, state.brush, model.best, model.worst);
    renderSweepTable(table, countLine, model, sweep, state, geometry);
  }
  attachBrushing(canvas, axes, state, () => geometry, (done) => { if (done) go(); redraw(); });
  redraw();
  const metricAxis = axes.find((a) => a.kind === "metric");
  if (metricAxis) {
    for (const ax of axes.filter((a) => a.kind === "param")) {
      const c = el("canvas", { class: "scatter", "data-param": ax.name });
      scatters.append(el("div", { class: "panel chart" }, c));
      drawScatter(c, sweep.runs, ax, metricAxis);
    }
  }
  drawBestSoFar(bestChart, sweep);
  performance.mark("mlw-sweep-ready");
  document.body.dataset.ready = "sweep";
  // The curves read every run's metrics: drawn after the rest of the page is usable.
  await drawCurves(curves, id, state, mine);
  if (mine === generation) document.body.dataset.curves = "drawn";
}
