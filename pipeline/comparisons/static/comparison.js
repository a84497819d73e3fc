// One comparison page of the static report: editable targets, price book and cost tier, the table read off both
// frontiers, the interactive chart (vendored Chart.js) and a CSV download. Data come from the page's
// <script type="application/json" id="page-data"> element, written by pipeline/comparisons/report.py.
//
// The reading rules (spline, clamping, brackets, cell_basis and notes, intervals, sentences, Python's number
// formats) are frontier-rules.js's, loaded before this script and shared with the explorer page: one copy of the
// pipeline's rules in JavaScript, bound here to the constants DATA carries (gap, sparse and tie ratios, the repeat
// spread limit), never a second literal.
(function () {
  "use strict";
  var DATA = JSON.parse(document.getElementById("page-data").textContent);
  var FR = window.FrontierRules, R = FR.create(DATA);
  var fmt = FR.fmt, fmtG = FR.fmtG, el = FR.el;
  var state = {book: DATA.default_book, tier: "hyperscaler", targets: DATA.default_targets.slice()};
  var BAND = DATA.band_display;

  function evaluate(book, key, target) { return R.evaluate(DATA.books[book].sides[key], DATA.labels[key], target); }

  function sentencesAt(c) { return R.sentencesAt(c, DATA.labels, BAND); }

  function renderSentences(at) {
    var middle = at[Math.floor(at.length / 2)];
    sentencesAt(middle).forEach(function (s, i) { document.getElementById("sentence-" + (i + 1)).textContent = s; });
    var list = document.getElementById("target-sentences");
    list.replaceChildren.apply(list, at.map(function (c, i) {
      return el("li", R.targetSentence(c, DATA.labels, BAND), {"data-target-index": String(i + 1)});
    }));
  }

  function cells() {
    var sides = DATA.books[state.book].sides;
    return R.pairCells(sides.a, sides.b, DATA.labels, state.targets);
  }

  function renderTable(at) {
    var noted = FR.fillTable(document.getElementById("comparison-table"), at, DATA.labels, state.tier,
                             DATA.has_measured);
    var notes = document.getElementById("cell-notes");
    notes.textContent = noted.length ? "Not measured at the target: " + noted.join("; ") + "." : "";
    notes.hidden = !noted.length;
    var edited = state.targets.some(function (t, i) { return t !== DATA.default_targets[i]; }) ||
      state.book !== DATA.default_book;
    document.getElementById("headline-scope").hidden = !edited;
    document.getElementById("scope-book").textContent = state.book;
  }

  // --- CSV of the table: the comparisons mart's columns, one row per target and side ---------------------------
  function csvText(at) {
    var book = DATA.books[state.book], lines = [DATA.csv_columns.join(",")];
    at.forEach(function (c, i) {
      ["a", "b"].forEach(function (k) {
        var row = Object.assign({}, DATA.sides[k], c[k], {
          comparison_id: DATA.comparison_id, price_book: state.book, price_book_version: book.version,
          side: k, target_index: i + 1, target_intvty: c.target});
        lines.push(DATA.csv_columns.map(function (col) { return FR.csvField(row[col]); }).join(","));
      });
    });
    return lines.join("\n") + "\n";
  }

  // --- chart -------------------------------------------------------------------------------------------------
  var chart = null;
  function curve(key) {
    var side = DATA.books[state.book].sides[key], x = side.x, n = x.length;
    if (n < 2) return [];
    var sp = FR.spline(x, side.metrics.tput_per_gpu);
    var out = [];
    for (var i = 0; i <= 200; i++) {
      var v = x[0] + (x[n - 1] - x[0]) * i / 200;
      out.push({x: v, y: FR.evaluateRaw(sp, v)});
    }
    return out;
  }

  function chartData(at) {
    var sets = [];
    ["a", "b"].forEach(function (k, i) {
      var color = DATA.colors[i], side = DATA.books[state.book].sides[k];
      sets.push({type: "scatter", label: DATA.labels[k] + " runs", data: DATA.runs[k], backgroundColor: color + "55",
                 borderColor: color + "88", pointRadius: 3, order: 3});
      sets.push({type: "line", label: DATA.labels[k] + " frontier", data: curve(k), borderColor: color,
                 borderWidth: 2, pointRadius: 0, pointHitRadius: 0, order: 2});
      sets.push({type: "scatter", label: DATA.labels[k] + " frontier points",
                 data: side.x.map(function (x, j) { return Object.assign({x: x, y: side.metrics.tput_per_gpu[j]}, side.points[j]); }),
                 backgroundColor: color, borderColor: "#000", borderWidth: 1, pointRadius: 5, order: 1});
    });
    var ys = [];
    sets.forEach(function (s) { s.data.forEach(function (p) { ys.push(p.y); }); });
    var top = ys.length ? Math.max.apply(null, ys) : 1;
    at.forEach(function (c) {
      sets.push({type: "line", label: "target " + fmtG(c.target), data: [{x: c.target, y: 0}, {x: c.target, y: top}],
                 borderColor: "#495057", borderDash: [5, 4], borderWidth: 1, pointRadius: 0, pointHitRadius: 0,
                 order: 4, isTarget: true});
    });
    return {datasets: sets};
  }

  function tooltipLines(ctx) {
    var p = ctx.raw, lines = [ctx.dataset.label + ": " + fmt(p.y, 1, true) + " tok/s/GPU at " + fmt(p.x, 2, false) +
                              " tok/s/user"];
    if (p.file) lines.push("file: " + p.file);
    if (p.config) lines.push("config: " + p.config);
    if (p.date) lines.push("date: " + p.date);
    return lines;
  }

  function renderChart(at) {
    var canvas = document.getElementById("frontier-chart");
    if (typeof Chart === "undefined") return;
    if (chart) { chart.data = chartData(at); chart.update("none"); return; }
    chart = new Chart(canvas, {
      data: chartData(at),
      options: {
        animation: false, responsive: true, maintainAspectRatio: false, parsing: false,
        interaction: {mode: "nearest", intersect: true},
        scales: {x: {type: "linear", title: {display: true, text: DATA.x_label}},
                 y: {type: "linear", beginAtZero: true, title: {display: true, text: "Throughput (tok/s/GPU)"}}},
        plugins: {
          legend: {labels: {filter: function (item, data) { return !data.datasets[item.datasetIndex].isTarget; }}},
          tooltip: {filter: function (item) { return !item.dataset.isTarget && item.dataset.type === "scatter"; },
                    callbacks: {label: tooltipLines}},
        },
      },
    });
  }

  function render() {
    var at = cells();
    renderTable(at);
    renderSentences(at);
    renderChart(at);
    // for tests and the curious: the state, the cells shown, the CSV text, the evaluator and the sentence rule
    window.__comparison = {cells: at, csv: csvText(at), state: state, evaluate: evaluate, sentences: sentencesAt,
                           sentenceRule: R.sentenceRule, fmtG: fmtG, pyFixed: FR.pyFixed};
  }

  // --- controls ------------------------------------------------------------------------------------------------
  function setup() {
    var bookSelect = document.getElementById("price-book"), tierSelect = document.getElementById("cost-tier");
    Object.keys(DATA.books).sort().forEach(function (b) {
      var o = el("option", b + " (" + DATA.books[b].version + ")", {value: b});
      if (b === state.book) o.selected = true;
      bookSelect.appendChild(o);
    });
    ["hyperscaler", "neocloud", "rental"].forEach(function (t) { tierSelect.appendChild(el("option", t, {value: t})); });
    bookSelect.addEventListener("change", function () { state.book = bookSelect.value; render(); });
    tierSelect.addEventListener("change", function () { state.tier = tierSelect.value; render(); });
    state.targets.forEach(function (t, i) {
      var input = document.getElementById("target-" + (i + 1));
      input.value = String(t);
      input.addEventListener("input", function () {
        var v = Number(input.value);
        var ok = input.value.trim() !== "" && isFinite(v) && v > 0;
        input.setAttribute("aria-invalid", ok ? "false" : "true");
        if (ok) { state.targets[i] = v; render(); }
      });
    });
    document.getElementById("reset-targets").addEventListener("click", function () {
      state.targets = DATA.default_targets.slice();
      state.targets.forEach(function (t, i) { document.getElementById("target-" + (i + 1)).value = String(t); });
      render();
    });
    document.getElementById("download-csv").addEventListener("click", function () {
      FR.download(csvText(cells()), DATA.csv_name, "text/csv");
    });
    render();
  }

  setup();
})();
