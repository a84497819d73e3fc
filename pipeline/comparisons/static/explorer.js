// The explorer page of the static report: one workload, any number of sides overlaid (their Pareto frontiers and
// runs on any metric and axis, linear or log, 95 % intervals as error bars), the matched-interactivity table and
// sentences for any two chosen sides at typed targets, a trend chart of the chosen sides at a target over run dates
// with the regressions mart's marks, unofficial runs (python -m pipeline overlay) as points of their own, the view
// in the URL's hash, PNG and CSV exports. Data come from <script type="application/json" id="explorer-data">,
// written by pipeline/comparisons/explorer.py::explorer_data (its docstring gives the shape).
//
// Every reading of a frontier at a target (table, sentences, trend) is frontier-rules.js's, the script the
// comparison pages load: the pipeline's spline, cell rule and sentence rule, bound to the constants DATA carries.
// Labels reach the page as textContent, never as markup. No request leaves the page: exports are blob: and data:
// URLs.
(function () {
  "use strict";
  var DATA = JSON.parse(document.getElementById("explorer-data").textContent);
  var FR = window.FrontierRules, R = FR.create(DATA), el = FR.el, fmtG = FR.fmtG;
  var COLORS = ["#d9480f", "#1c7ed6", "#2b8a3e", "#862e9c", "#e67700", "#0b7285", "#c2255c", "#5c940d",
                "#364fc7", "#495057"];
  var SIDES = {};
  DATA.sides.forEach(function (s) { SIDES[s.id] = s; });
  var Y_LABELS = {}, X_LABELS = {};
  DATA.y_metrics.forEach(function (m) { Y_LABELS[m[0]] = m[1]; });
  DATA.x_axes.forEach(function (m) { X_LABELS[m[0]] = m[1]; });
  var state = null, chart = null, trendChart = null;

  // Each side's trend is a script of its own (``trend_src``, explorer.py's split_trends), loaded the first time
  // the side's trend is drawn; it hands the trend over through __explorerTrendLoaded and the page draws again.
  // A script that fails to load leaves the side without a trend, and the page says so under the chart.
  var trendsPending = 0, trendsFailed = [];
  window.__explorerTrendLoaded = function (index, trend) { DATA.sides[index].trend = trend; };
  function loadTrend(side) {
    if (side.trend || side.trendRequested || !side.trend_src) return;
    side.trendRequested = true;
    trendsPending += 1;
    var tag = document.createElement("script");
    tag.src = side.trend_src;
    tag.onload = tag.onerror = function () {
      trendsPending -= 1;
      if (!side.trend) {
        side.trend = {};
        trendsFailed.push(side.label + " (" + side.trend_src + ")");
      }
      render();
    };
    document.head.appendChild(tag);
  }

  function sidesOf(workload) { return DATA.sides.filter(function (s) { return s.workload === workload; }); }

  // the view a first visit opens: the workload with the most sides, its four sides with the most runs
  function defaultState() {
    var best = null;
    DATA.workloads.forEach(function (w) {
      if (best === null || sidesOf(w.key).length > sidesOf(best).length) best = w.key;
    });
    var chosen = best === null ? [] : sidesOf(best).slice().sort(function (a, b) {
      return b.side_runs - a.side_runs || (a.id < b.id ? -1 : 1);
    }).slice(0, 4).map(function (s) { return s.id; });
    return {workload: best, sides: chosen, y: "tput_per_gpu", x: "x_intvty", ys: "linear", xs: "linear",
            book: DATA.default_book, tier: "hyperscaler", runs: true, errors: true,
            a: chosen[0] || null, b: chosen[1] || null, targets: null, trend: DATA.trend_target};
  }

  // --- URL state: the hash holds the view, so a copied link reopens it ------------------------------------------
  function toHash(s) {
    var p = new URLSearchParams();
    p.set("w", s.workload || "");
    p.set("s", s.sides.join(","));
    p.set("y", s.y); p.set("x", s.x); p.set("ys", s.ys); p.set("xs", s.xs);
    p.set("book", s.book); p.set("tier", s.tier);
    p.set("runs", s.runs ? "1" : "0"); p.set("err", s.errors ? "1" : "0");
    if (s.a) p.set("a", s.a);
    if (s.b) p.set("b", s.b);
    if (s.targets) p.set("t", s.targets.join(","));
    p.set("trend", String(s.trend));
    return "#" + p.toString();
  }

  function positive(text) {
    var v = Number(text);
    return text !== null && String(text).trim() !== "" && isFinite(v) && v > 0 ? v : null;
  }

  // a hash read back, every value checked: an unknown workload, side, metric or book falls back to the default
  function fromHash(hash) {
    var s = defaultState();
    if (!hash || hash.length < 2) return s;
    var p = new URLSearchParams(hash.slice(1));
    var w = p.get("w");
    if (w && DATA.workloads.some(function (x) { return x.key === w; })) {
      s.workload = w;
      s.sides = [];
    }
    if (p.has("s")) {
      s.sides = p.get("s").split(",").filter(function (id) {
        return SIDES[id] && SIDES[id].workload === s.workload;
      });
    }
    if (Y_LABELS[p.get("y")]) s.y = p.get("y");
    if (X_LABELS[p.get("x")]) s.x = p.get("x");
    ["ys", "xs"].forEach(function (k) { if (p.get(k) === "linear" || p.get(k) === "logarithmic") s[k] = p.get(k); });
    if (DATA.books[p.get("book")] !== undefined) s.book = p.get("book");
    if (FR.TIERS.indexOf(p.get("tier")) >= 0) s.tier = p.get("tier");
    if (p.has("runs")) s.runs = p.get("runs") !== "0";
    if (p.has("err")) s.errors = p.get("err") !== "0";
    s.a = s.sides.indexOf(p.get("a")) >= 0 ? p.get("a") : s.sides[0] || null;
    s.b = s.sides.indexOf(p.get("b")) >= 0 && p.get("b") !== s.a ? p.get("b")
      : s.sides.filter(function (id) { return id !== s.a; })[0] || null;
    if (p.has("t")) {
      var t = p.get("t").split(",").map(positive);
      s.targets = t.length === 3 && t.every(function (v) { return v !== null; }) ? t : null;
    }
    var trend = positive(p.get("trend"));
    if (trend !== null) s.trend = trend;
    return s;
  }

  function writeHash() {
    var hash = toHash(state);
    if (location.hash !== hash) history.replaceState(null, "", hash);
  }

  // --- the pair's table (frontier-rules.js: compare.py's cells and sentences) --------------------------------------
  function frontierOf(id) { var s = SIDES[id]; return s && s.frontier[state.book]; }

  function pairReady() {
    return state.a && state.b && state.a !== state.b && frontierOf(state.a) && frontierOf(state.b);
  }

  function pairBand() {
    var band = FR.interactivityBand(SIDES[state.a].band, SIDES[state.b].band);
    return {band: band, display: FR.displayedBand(band.lo, band.hi), defaults: FR.defaultTargets(band.lo, band.hi)};
  }

  function labels() { return {a: SIDES[state.a].label, b: SIDES[state.b].label}; }

  function cells() {
    if (!pairReady()) return [];
    var targets = state.targets || pairBand().defaults;
    return R.pairCells(frontierOf(state.a), frontierOf(state.b), labels(), targets);
  }

  function csvText(at) {
    var lines = [DATA.csv_columns.join(",")];
    if (!at.length) return lines.join("\n") + "\n";
    var band = pairBand(), names = labels();
    at.forEach(function (c, i) {
      var said = R.sentenceRule(names.a, names.b, c.a, c.b, "hyperscaler",
                                [c.a.cell_note, c.b.cell_note].filter(function (n) { return n; }).join("; "));
      ["a", "b"].forEach(function (k) {
        var side = SIDES[state[k]], w = DATA.workloads.filter(function (x) { return x.key === side.workload; })[0];
        var row = Object.assign({}, c[k], {
          price_book: state.book, price_book_version: DATA.books[state.book], model: w.model, isl: w.isl,
          osl: w.osl, benchmark_type: w.benchmark_type, side: k, side_label: side.label, side_id: side.side_id,
          hw: side.hw, precision: side.precision, spec_decoding: side.spec_decoding, framework: side.framework,
          disagg: side.disagg, target_index: i + 1, target_intvty: c.target,
          band_phrase: FR.bandPhrase(c.target, band.display), cost_sentence: said.cost, tput_sentence: said.tput});
        lines.push(DATA.csv_columns.map(function (col) { return FR.csvField(row[col]); }).join(","));
      });
    });
    return lines.join("\n") + "\n";
  }

  function renderTable(at) {
    var table = document.getElementById("explorer-table"), notes = document.getElementById("cell-notes");
    var list = document.getElementById("target-sentences");
    if (!at.length) {
      table.replaceChildren();
      list.replaceChildren();
      notes.hidden = true;
      [1, 2, 3].forEach(function (i) {
        document.getElementById("sentence-" + i).textContent = i === 1 ? "Choose two sides to compare." : "";
      });
      return;
    }
    var names = labels(), band = pairBand();
    var noted = FR.fillTable(table, at, names, state.tier, at.some(function (c) {
      return c.a.measured_tok_s_per_mw !== null || c.b.measured_tok_s_per_mw !== null;
    }));
    notes.textContent = noted.length ? "Not measured at the target: " + noted.join("; ") + "." : "";
    notes.hidden = !noted.length;
    var middle = at[Math.floor(at.length / 2)];
    R.sentencesAt(middle, names, band.display).forEach(function (s, i) {
      document.getElementById("sentence-" + (i + 1)).textContent = s;
    });
    list.replaceChildren.apply(list, at.map(function (c, i) {
      return el("li", R.targetSentence(c, names, band.display), {"data-target-index": String(i + 1)});
    }));
    at.forEach(function (c, i) {  // the box being typed in keeps its text ("12." stays, not "12")
      var input = document.getElementById("target-" + (i + 1));
      if (document.activeElement !== input) input.value = String(c.target);
    });
  }

  // --- the frontier chart -----------------------------------------------------------------------------------------
  // a chosen side's colour, by its place among the chosen sides (the same in both charts and the side list)
  function colorOf(id) {
    var i = state.sides.indexOf(id);
    return i < 0 ? "#adb5bd" : COLORS[i % COLORS.length];
  }

  // a point's 95 % interval on the chosen axes: tok/s/GPU and each tier's cost (its price over the tok/s/GPU
  // bounds, confidence.py) on y, median interactivity on the frontier's axis on x
  function intervalOf(side, f, j) {
    var ci = f.point_ci, out = {};
    var lo = ci.tput_per_gpu_ci_lo[j], hi = ci.tput_per_gpu_ci_hi[j];
    if (lo !== null && hi !== null) {
      if (state.y === "tput_per_gpu") { out.yMin = lo; out.yMax = hi; }
      var tier = /^cost_per_mtok_(\w+)$/.exec(state.y);
      if (tier && f.prices_per_mtok[tier[1]] !== null && lo > 0) {
        out.yMin = f.prices_per_mtok[tier[1]] / hi; out.yMax = f.prices_per_mtok[tier[1]] / lo;
      }
    }
    var xl = ci.median_intvty_ci_lo[j], xh = ci.median_intvty_ci_hi[j];
    if (state.x === "x_intvty" && side.x_intvty_stat === "median_intvty" && xl !== null && xh !== null) {
      out.xMin = xl; out.xMax = xh;
    }
    return out;
  }

  function frontierSets(side) {
    var f = side.frontier[state.book], sets = [], c = colorOf(side.id);
    if (!f) return sets;
    if (state.runs && side.runs[state.book]) {
      var r = side.runs[state.book], pts = [];
      r[state.x].forEach(function (x, j) {
        var y = r[state.y] ? r[state.y][j] : null;
        if (x !== null && y !== null) pts.push({x: x, y: y, file: r.file[j], date: r.date[j], config: r.config[j]});
      });
      sets.push({type: "scatter", label: side.label + " runs", data: pts, backgroundColor: c + "55",
                 borderColor: c + "88", pointRadius: 3, order: 3, hideLegend: true});
    }
    var xs = f.axes[state.x] || [], ys = f.axes[state.y] || [], points = [];
    xs.forEach(function (x, j) {
      if (x === null || ys[j] === null || ys[j] === undefined) return;
      points.push(Object.assign({x: x, y: ys[j], n: f.repeat_n[j]}, f.points[j],
                                state.errors ? intervalOf(side, f, j) : {}));
    });
    var line;
    if (state.x === "x_intvty" && f.metrics[state.y] && f.x.length > 1) {
      var sp = FR.spline(f.x, f.metrics[state.y]), n = f.x.length;
      line = [];
      for (var k = 0; k <= 200; k++) {
        var v = f.x[0] + (f.x[n - 1] - f.x[0]) * k / 200;
        line.push({x: v, y: FR.evaluateRaw(sp, v)});
      }
    } else {
      line = points.map(function (p) { return {x: p.x, y: p.y}; });
    }
    sets.push({type: "line", label: side.label, data: line, borderColor: c, backgroundColor: c, borderWidth: 2,
               pointRadius: 0, pointHitRadius: 0, order: 2, sideId: side.id});
    sets.push({type: "scatter", label: side.label + " frontier points", data: points, backgroundColor: c,
               borderColor: "#000", borderWidth: 1, pointRadius: 5, order: 1, errorBars: true, hideLegend: true,
               errorColor: c});
    return sets;
  }

  function unofficialSet() {
    var u = DATA.unofficial[state.book];
    if (!u) return null;
    var pts = [];
    u.workload.forEach(function (w, j) {
      var x = u[state.x] ? u[state.x][j] : null, y = u[state.y] ? u[state.y][j] : null;
      if (w === state.workload && x !== null && y !== null && x !== undefined && y !== undefined) {
        pts.push({x: x, y: y, file: u.file[j], date: u.date[j], config: u.config[j], side: u.label[j]});
      }
    });
    return {type: "scatter", label: "unofficial", data: pts, pointStyle: "crossRot", pointRadius: 9,
            pointBorderWidth: 3, borderColor: "#000", backgroundColor: "#000", order: 0, unofficial: true};
  }

  // Chart.js draws no error bars of its own: each frontier point's interval as whiskers, drawn after the points
  var errorBarPlugin = {
    id: "errorBars",
    afterDatasetsDraw: function (ch) {
      var ctx = ch.ctx, xs = ch.scales.x, ys = ch.scales.y;
      ch.data.datasets.forEach(function (set, i) {
        if (!set.errorBars || !ch.isDatasetVisible(i)) return;
        ctx.save();
        ctx.strokeStyle = set.errorColor;
        ctx.lineWidth = 1.5;
        set.data.forEach(function (p) {
          var px = xs.getPixelForValue(p.x), py = ys.getPixelForValue(p.y);
          if (p.yMin !== undefined) {
            var a = ys.getPixelForValue(p.yMin), b = ys.getPixelForValue(p.yMax);
            ctx.beginPath(); ctx.moveTo(px, a); ctx.lineTo(px, b);
            ctx.moveTo(px - 5, a); ctx.lineTo(px + 5, a); ctx.moveTo(px - 5, b); ctx.lineTo(px + 5, b); ctx.stroke();
          }
          if (p.xMin !== undefined) {
            var l = xs.getPixelForValue(p.xMin), r = xs.getPixelForValue(p.xMax);
            ctx.beginPath(); ctx.moveTo(l, py); ctx.lineTo(r, py);
            ctx.moveTo(l, py - 5); ctx.lineTo(l, py + 5); ctx.moveTo(r, py - 5); ctx.lineTo(r, py + 5); ctx.stroke();
          }
        });
        ctx.restore();
      });
    },
  };
  // a white background, so the exported PNG is what the page shows (a canvas is transparent)
  var backgroundPlugin = {
    id: "whiteBackground",
    beforeDraw: function (ch) {
      var ctx = ch.ctx;
      ctx.save();
      ctx.globalCompositeOperation = "destination-over";
      ctx.fillStyle = "#fff";
      ctx.fillRect(0, 0, ch.width, ch.height);
      ctx.restore();
    },
  };

  function tooltipLines(ctx) {
    var p = ctx.raw, lines = [ctx.dataset.label + ": " + fmtG(p.y) + " at " + fmtG(p.x)];
    if (p.side) lines.push("side: " + p.side);
    if (p.n > 1) lines.push("mean of " + p.n + " repeats");
    if (p.yMin !== undefined) lines.push("95 % interval: " + fmtG(p.yMin) + "–" + fmtG(p.yMax));
    if (p.file) lines.push("file: " + p.file);
    if (p.config) lines.push("config: " + p.config);
    if (p.date) lines.push("date: " + p.date);
    return lines;
  }

  function axisTitle(key) {
    if (key !== "x_intvty") return X_LABELS[key];
    var w = DATA.workloads.filter(function (x) { return x.key === state.workload; })[0];
    return w ? w.x_label : X_LABELS[key];
  }

  function renderChart() {
    var sets = [];
    state.sides.forEach(function (id) {
      sets = sets.concat(frontierSets(SIDES[id]));
    });
    var u = unofficialSet();
    if (u) sets.push(u);
    var canvas = document.getElementById("explorer-chart");
    if (chart) chart.destroy();
    chart = new Chart(canvas, {
      data: {datasets: sets}, plugins: [errorBarPlugin, backgroundPlugin],
      options: {
        animation: false, responsive: true, maintainAspectRatio: false, parsing: false,
        interaction: {mode: "nearest", intersect: true},
        scales: {x: {type: state.xs, title: {display: true, text: axisTitle(state.x)}},
                 y: {type: state.ys, beginAtZero: state.ys === "linear", title: {display: true, text: Y_LABELS[state.y]}}},
        plugins: {
          legend: {labels: {filter: function (item, data) { return !data.datasets[item.datasetIndex].hideLegend; }}},
          tooltip: {filter: function (item) { return item.dataset.type === "scatter"; },
                    callbacks: {label: tooltipLines}},
        },
      },
    });
    var note = document.getElementById("chart-note");
    note.textContent = state.x === "x_intvty" ? "Frontiers drawn as the pipeline's spline between their points."
      : "Frontier points joined in frontier order, each at its run's value on this axis (the frontier is built on " +
        "the interactivity axis).";
  }

  // --- the trend chart (trends.py's rule through frontier-rules.js) ------------------------------------------------
  function trendMetric() { return DATA.trend_metrics.indexOf(state.y) >= 0 ? state.y : "tput_per_gpu"; }

  // a run date as a day number (days since 1970-01-01, UTC) and back: the trend's x-axis is linear in time, so
  // dates months apart are drawn months apart
  function dayNumber(iso) { var p = iso.split("-"); return Date.UTC(+p[0], +p[1] - 1, +p[2]) / 864e5; }
  function isoDate(day) { return new Date(Math.round(day) * 864e5).toISOString().slice(0, 10); }

  // Each side's line holds its own run dates only ({x: day number, y, date}): it joins consecutive dates the side
  // ran on and breaks where a day's frontier does not reach the target (y null: the trend rule's gap).
  function renderTrend() {
    var metric = trendMetric(), sets = [];
    state.sides.forEach(function (id) {
      var side = SIDES[id], c = colorOf(id), byDate = {};
      loadTrend(side);  // drawn again once loaded; until then the side's line is empty
      var values = ((side.trend || {})[state.book] || []).map(function (d) {
        byDate[d.date] = R.trendValue(d, metric, state.trend);
        return {x: dayNumber(d.date), y: byDate[d.date], date: d.date};
      });
      sets.push({type: "line", label: side.label, data: values, borderColor: c, backgroundColor: c, spanGaps: false,
                 pointRadius: 4, sideId: id});
      var marks = [];
      side.regressions.filter(function (g) { return g.price_book === state.book; }).forEach(function (g) {
        if (!(g.first_bad_date in byDate)) return;  // a change is marked on a date of the side's trend
        var y = byDate[g.first_bad_date];
        marks.push({x: dayNumber(g.first_bad_date), y: y === null ? 0 : y, date: g.first_bad_date,
                    info: g.direction + " (" + g.status + "): " + g.metric + " " + g.change + " at " +
                          fmtG(g.target_intvty) + " tok/s/user"});
      });
      if (marks.length) {
        sets.push({type: "line", label: side.label + " regressions", data: marks, showLine: false,
                   pointStyle: "triangle", pointRadius: 9, borderColor: "#000", backgroundColor: c,
                   regressionMarks: true});
      }
    });
    var notes = document.getElementById("trend-notes");
    notes.hidden = !trendsFailed.length;
    notes.textContent = trendsFailed.length ? "No trend could be loaded for: " + trendsFailed.join("; ") : "";
    var canvas = document.getElementById("trend-chart");
    if (trendChart) trendChart.destroy();
    trendChart = new Chart(canvas, {
      data: {datasets: sets}, plugins: [backgroundPlugin],
      options: {
        animation: false, responsive: true, maintainAspectRatio: false, parsing: false,
        scales: {x: {type: "linear", title: {display: true, text: "run date"},
                     ticks: {callback: function (v) { return isoDate(v); }, maxRotation: 0, autoSkipPadding: 12}},
                 y: {type: state.ys, beginAtZero: state.ys === "linear",
                     title: {display: true, text: Y_LABELS[metric] + " at " + fmtG(state.trend) + " tok/s/user"}}},
        plugins: {tooltip: {callbacks: {title: function (items) { return items.length ? items[0].raw.date : ""; },
                                        afterLabel: function (ctx) { return ctx.raw.info || ""; }}}},
      },
    });
  }

  // --- controls -----------------------------------------------------------------------------------------------
  function fillSelect(select, options, chosen) {
    select.replaceChildren.apply(select, options.map(function (o) {
      var opt = el("option", o[1], {value: o[0]});
      if (o[0] === chosen) opt.selected = true;
      return opt;
    }));
  }

  function renderControls() {
    fillSelect(document.getElementById("workload"), DATA.workloads.map(function (w) { return [w.key, w.label]; }),
               state.workload);
    fillSelect(document.getElementById("price-book"), Object.keys(DATA.books).sort().map(function (b) {
      return [b, b + " (" + DATA.books[b] + ")"];
    }), state.book);
    fillSelect(document.getElementById("cost-tier"), FR.TIERS.map(function (t) { return [t, t]; }), state.tier);
    fillSelect(document.getElementById("y-metric"), DATA.y_metrics, state.y);
    fillSelect(document.getElementById("x-axis"), DATA.x_axes, state.x);
    document.getElementById("y-scale").value = state.ys;
    document.getElementById("x-scale").value = state.xs;
    document.getElementById("show-runs").checked = state.runs;
    document.getElementById("show-errors").checked = state.errors;
    var list = document.getElementById("side-list");
    list.replaceChildren.apply(list, sidesOf(state.workload).map(function (s) {
      var box = el("input", null, {type: "checkbox", value: s.id, "data-side": s.id});
      box.checked = state.sides.indexOf(s.id) >= 0;
      var label = el("label", null, {"class": "side-choice"});
      var swatch = el("span", "■ ", {"class": "swatch"});
      swatch.style.color = colorOf(s.id);
      label.append(box, swatch, document.createTextNode(s.label + " (" + s.side_runs + " runs)"));
      return label;
    }));
    filterSides();
    var chosen = state.sides.map(function (id) { return [id, SIDES[id].label]; });
    fillSelect(document.getElementById("pair-a"), chosen, state.a);
    fillSelect(document.getElementById("pair-b"), chosen, state.b);
    var trend = document.getElementById("trend-target");
    if (document.activeElement !== trend) trend.value = String(state.trend);
  }

  // the side list narrowed to the labels holding every word typed in the filter (the chosen sides stay chosen)
  function filterSides() {
    var words = document.getElementById("side-filter").value.toLowerCase().split(/\s+/).filter(Boolean);
    document.querySelectorAll("#side-list label").forEach(function (label) {
      var text = label.textContent.toLowerCase();
      label.hidden = !words.every(function (w) { return text.indexOf(w) >= 0; });
    });
  }

  function render() {
    writeHash();
    renderControls();
    var at = cells();
    renderTable(at);
    renderChart();
    renderTrend();
    // for tests and the curious: the state, the table's cells, the CSV text and both charts
    window.__explorer = {state: state, cells: at, csv: csvText(at), chart: chart, trendChart: trendChart,
                         hash: toHash(state), rules: R, data: DATA, trendsPending: trendsPending};
  }

  function update(change) {
    Object.assign(state, change);
    if (state.sides.indexOf(state.a) < 0) state.a = state.sides.filter(function (id) { return id !== state.b; })[0] || null;
    if (state.sides.indexOf(state.b) < 0 || state.b === state.a) {
      state.b = state.sides.filter(function (id) { return id !== state.a; })[0] || null;
    }
    render();
  }

  function setup() {
    var on = function (id, event, f) { document.getElementById(id).addEventListener(event, f); };
    on("workload", "change", function (e) {
      var chosen = sidesOf(e.target.value).slice(0, 4).map(function (s) { return s.id; });
      update({workload: e.target.value, sides: chosen, a: null, b: null, targets: null});
    });
    on("price-book", "change", function (e) { update({book: e.target.value}); });
    on("cost-tier", "change", function (e) { update({tier: e.target.value}); });
    on("y-metric", "change", function (e) { update({y: e.target.value}); });
    on("x-axis", "change", function (e) { update({x: e.target.value}); });
    on("y-scale", "change", function (e) { update({ys: e.target.value}); });
    on("x-scale", "change", function (e) { update({xs: e.target.value}); });
    on("show-runs", "change", function (e) { update({runs: e.target.checked}); });
    on("show-errors", "change", function (e) { update({errors: e.target.checked}); });
    on("side-list", "change", function () {
      var chosen = Array.prototype.slice.call(document.querySelectorAll("#side-list input:checked"))
        .map(function (b) { return b.value; });
      update({sides: chosen});
    });
    on("side-filter", "input", filterSides);
    on("clear-sides", "click", function () { update({sides: []}); });
    on("pair-a", "change", function (e) { update({a: e.target.value, targets: null}); });
    on("pair-b", "change", function (e) { update({b: e.target.value, targets: null}); });
    [1, 2, 3].forEach(function (i) {
      on("target-" + i, "input", function (e) {
        var v = positive(e.target.value);
        e.target.setAttribute("aria-invalid", v === null ? "true" : "false");
        if (v === null) return;
        var targets = (state.targets || cells().map(function (c) { return c.target; })).slice();
        targets[i - 1] = v;
        update({targets: targets});
      });
    });
    on("reset-targets", "click", function () { update({targets: null}); });
    on("trend-target", "input", function (e) {
      var v = positive(e.target.value);
      if (v !== null) update({trend: v});
    });
    on("download-png", "click", function () {
      var a = el("a", null, {href: chart.toBase64Image("image/png"), download: "explorer-chart.png"});
      document.body.appendChild(a);
      a.click();
      a.remove();
    });
    on("download-csv", "click", function () { FR.download(csvText(cells()), "explorer-table.csv", "text/csv"); });
    on("copy-link", "click", function () {
      document.getElementById("link-text").textContent = location.href;
      if (navigator.clipboard) navigator.clipboard.writeText(location.href).catch(function () {});
    });
    window.addEventListener("hashchange", function () {
      if (location.hash !== toHash(state)) { state = fromHash(location.hash); render(); }
    });
    state = fromHash(location.hash);
    render();
  }

  setup();
})();
