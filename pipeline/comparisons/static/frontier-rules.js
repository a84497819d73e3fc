// The report's one copy of the pipeline's reading rules in JavaScript, loaded by every page that reads a frontier
// at a target (the comparison pages, comparison.js, and the explorer, explorer.js): FrontierRules.create(C)
// returns the functions bound to the rules' constants C (gap_ratio, sparse_ratio, repeat_spread_limit, tie_ratio,
// metrics), which reach the page in its JSON, never as a second literal.
//
// The interpolation is the pipeline's, operation for operation, so a cell equals the Python value bit for bit:
// Steffen tangents as pipeline/frontiers/spline.py::steffen_tangents computes them, the cubic Hermite polynomial
// coefficients and Horner-like evaluation of scipy's CubicHermiteSpline/PPoly, then the comparison rule
// (interpolate(clamp=True)): the target clamped into the frontier's x-range, the value into the metric's
// [min, max] over the frontier points. Brackets, the sparse flag, cell_basis and the cell notes follow
// pipeline/comparisons/compare.py; the 95 % intervals (confidence.py) are splined the same way. The band, its
// default targets and phrase follow pipeline/comparisons/band.py; the sentences compare.py::sentences and headline
// and report.py::sentences: percentages rounded half up, tied below a ratio of C.tie_ratio, the ratio form at
// N >= 100, "within run-to-run noise" where both sides' intervals overlap; numbers formatted as Python's format()
// does (rounded half to even on the double's exact value). Every label reaches a page as textContent, never as
// markup. The trend rule (pipeline/comparisons/trends.py) reads the same spline inside the frontier's range and
// gives null outside it (trendValue): no clamping, no extrapolation.
(function () {
  "use strict";
  var TIERS = ["hyperscaler", "neocloud", "rental"];
  var SPLINED_CI = ["tput_per_gpu_ci_lo", "tput_per_gpu_ci_hi", "median_intvty_ci_lo", "median_intvty_ci_hi"];
  var TARGET_FRACTIONS = [0.25, 0.5, 0.75];  // band.py::TARGET_FRACTIONS

  // --- spline (pipeline/frontiers/spline.py) -------------------------------------------------------------------
  function sign(v) { return v < 0 ? -1.0 : 1.0; }

  function tangents(x, y) {
    var n = x.length, h = [], s = [], m = new Array(n).fill(0), i;
    for (i = 0; i < n - 1; i++) { h.push(x[i + 1] - x[i]); s.push((y[i + 1] - y[i]) / h[i]); }
    if (n > 2) {
      for (i = 1; i < n - 1; i++) {
        var h0 = h[i - 1], h1 = h[i], s0 = s[i - 1], s1 = s[i];
        var p = (s0 * h1 + s1 * h0) / (h0 + h1);
        m[i] = (sign(s0) + sign(s1)) * Math.min(Math.min(Math.abs(s0), Math.abs(s1)), 0.5 * Math.abs(p));
      }
    }
    m[0] = (3 * s[0] - m[1]) / 2;
    m[n - 1] = (3 * s[n - 2] - m[n - 2]) / 2;
    return m;
  }

  // Coefficients as scipy's CubicHermiteSpline sets them: c0 = t/dx, c1 = (slope - m_i)/dx - t, c2 = m_i, c3 = y_i.
  function spline(x, y) {
    var n = x.length, lo = Math.min.apply(null, y), hi = Math.max.apply(null, y);
    if (n === 1) return {x: x, y: y, lo: lo, hi: hi};
    var m = tangents(x, y), c = [];
    for (var i = 0; i < n - 1; i++) {
      var dx = x[i + 1] - x[i], slope = (y[i + 1] - y[i]) / dx;
      var t = (m[i] + m[i + 1] - 2 * slope) / dx;
      c.push([t / dx, (slope - m[i]) / dx - t, m[i], y[i]]);
    }
    return {x: x, y: y, c: c, lo: lo, hi: hi};
  }

  // PPoly evaluation: interval i with x[i] <= v < x[i+1] (the last one closed), s = v - x[i], then
  // ((c3 + c2·s) + c1·s²) + c0·s³ with s² = s·s and s³ = s²·s, the order scipy's evaluate_poly1 adds them.
  function evaluateRaw(sp, v) {
    var x = sp.x, n = x.length;
    if (n === 1) return sp.y[0];
    var i = n - 2;
    for (var k = 0; k < n - 1; k++) { if (v < x[k + 1]) { i = k; break; } }
    var c = sp.c[i], s = v - x[i], z = s * s;
    var res = c[3] + c[2] * s;
    res = res + c[1] * z;
    z = z * s;
    return res + c[0] * z;
  }

  function clip(v, lo, hi) { return Math.min(Math.max(v, lo), hi); }

  // --- Python's number formatting, exactly -----------------------------------------------------------------------
  // A double's exact decimal expansion (toPrecision(100) is exact for every double that can end on a tie at the
  // digits printed), as digits and the power of ten of the first one: v = 0.d1d2… × 10^(exp + 1).
  function decimalDigits(v) {
    var s = Math.abs(v).toPrecision(100), exp = 0, mant = s;
    if (s.indexOf("e") >= 0) { mant = s.split("e")[0]; exp = Number(s.split("e")[1]); }
    else { var dot = s.indexOf("."); exp = (dot < 0 ? s.length : dot) - 1; }
    var digits = mant.replace(".", "");
    var lead = digits.search(/[1-9]/);
    if (lead < 0) return {digits: "0", exp: 0};
    return {digits: digits.slice(lead), exp: exp - lead};
  }

  // keep the first n digits of a digit string, rounding half to even on the exact remainder (Python's rule);
  // returns {digits, carry} where carry means the kept digits overflowed (999 -> 1000).
  function roundDigits(digits, n) {
    while (digits.length < n + 1) digits += "0";
    var keep = digits.slice(0, n), next = digits.charAt(n), rest = digits.slice(n + 1);
    var last = n > 0 ? Number(keep.charAt(n - 1)) : 0;
    var up = next > "5" || (next === "5" && (/[1-9]/.test(rest) || last % 2 === 1));
    if (!up) return {digits: keep, carry: false};
    var out = keep.split(""), i = out.length - 1;
    while (i >= 0 && out[i] === "9") { out[i] = "0"; i--; }
    if (i < 0) return {digits: "1" + out.join(""), carry: true};
    out[i] = String(Number(out[i]) + 1);
    return {digits: out.join(""), carry: false};
  }

  // Python's format(v, ".{d}f"): fixed point with d decimals, rounded half to even on the exact value.
  function pyFixed(v, d) {
    var neg = v < 0 || (v === 0 && 1 / v < 0), dd = decimalDigits(v);
    var intDigits = dd.exp + 1, n = intDigits + d;  // digits kept, counted from the first significant one
    var kept;
    if (n < 0) kept = "0";
    else {
      var r = roundDigits(dd.digits, n);
      kept = r.digits === "" ? "0" : r.digits;
      if (r.carry) intDigits += 1;
    }
    var all = kept === "0" ? "" : kept, width = intDigits + d;
    if (all.length < width) all = new Array(width - all.length + 1).join("0") + all;  // leading zeros (v < 1)
    while (all.length < d + 1) all = "0" + all;
    var whole = all.slice(0, all.length - d).replace(/^0+(?=\d)/, ""), frac = all.slice(all.length - d);
    var text = (whole === "" ? "0" : whole) + (d > 0 ? "." + frac : "");
    return (neg ? "-" : "") + text;  // Python keeps the sign of a negative that rounds to zero: "-0.0"
  }

  // Python's format(v, "g"): 6 significant digits, fixed for exponents -4..5, else d.ddddde±XX; zeros trimmed.
  function fmtG(v) {
    v = Number(v);
    if (v === 0) return (1 / v < 0) ? "-0" : "0";
    if (!isFinite(v)) return v > 0 ? "inf" : v < 0 ? "-inf" : "nan";
    var dd = decimalDigits(v), r = roundDigits(dd.digits, 6), exp = dd.exp + (r.carry ? 1 : 0);
    var digits = r.digits.slice(0, 6), sign = v < 0 ? "-" : "";
    if (exp >= -4 && exp < 6) {
      var text = pyFixed(Math.abs(v), 5 - exp);
      if (text.indexOf(".") >= 0) text = text.replace(/0+$/, "").replace(/\.$/, "");
      return sign + text;
    }
    var mant = digits.charAt(0) + (digits.length > 1 ? "." + digits.slice(1) : "");
    if (mant.indexOf(".") >= 0) mant = mant.replace(/0+$/, "").replace(/\.$/, "");
    return sign + mant + "e" + (exp < 0 ? "-" : "+") + (Math.abs(exp) < 10 ? "0" : "") + Math.abs(exp);
  }

  // formatting like the Python page ("{:,.1f}", "${:.3f}", "{:,.0f}")
  function fmt(v, digits, commas) {
    if (v === null || v === undefined || !isFinite(v)) return "—";
    var text = pyFixed(v, digits);
    if (!commas) return text;
    var parts = text.split("."), neg = parts[0].charAt(0) === "-", whole = neg ? parts[0].slice(1) : parts[0];
    whole = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
    return (neg ? "-" : "") + whole + (parts.length > 1 ? "." + parts[1] : "");
  }

  // a value with its 95 % interval " [lo–hi]" when the cell has both ends (report.py::_cell)
  function withInterval(f, lo, hi) {
    return function (v, cell) {
      var text = f(v), a = cell[lo], b = cell[hi];
      return v === null || a === null || a === undefined || b === null || b === undefined ? text
        : text + " [" + f(a) + "–" + f(b) + "]";
    };
  }

  function roundHalfUp(v) { return Math.floor(v + 0.5); }

  // --- the band (pipeline/comparisons/band.py) ----------------------------------------------------------------
  // interactivity_band: the overlap of the two sides' ranges, or their union (is_union) when they do not overlap
  function interactivityBand(a, b) {
    var lo = Math.max(a[0], b[0]), hi = Math.min(a[1], b[1]);
    if (lo >= hi) return {lo: Math.min(a[0], b[0]), hi: Math.max(a[1], b[1]), isUnion: true};
    return {lo: lo, hi: hi, isUnion: false};
  }

  function displayedBand(lo, hi) { return [Math.ceil(lo), Math.floor(hi)]; }

  function defaultTargets(lo, hi) {
    return TARGET_FRACTIONS.map(function (f) { return roundHalfUp(lo + (hi - lo) * f); });
  }

  // band_phrase on the displayed band [d_lo, d_hi]
  function bandPhrase(target, display) {
    var lo = display[0], hi = display[1];
    var u = hi === lo ? 0.5 : (target - lo) / (hi - lo);
    if (u < 1 / 3) return "near the low end";
    if (u > 2 / 3) return "toward the upper edge";
    return "around the middle";
  }

  // confidence.py::intervals_apart: true when [aLo, aHi] and [bLo, bHi] do not overlap, null when a bound is missing
  function intervalsApart(aLo, aHi, bLo, bHi) {
    if ([aLo, aHi, bLo, bHi].some(function (v) { return v === null || v === undefined; })) return null;
    return aLo > bHi || bLo > aHi;
  }

  function create(C) {
    var SPARSE_RATIO = C.sparse_ratio, GAP_RATIO = C.gap_ratio, REPEAT_SPREAD_LIMIT = C.repeat_spread_limit;

    // compare.py::cell_basis
    function cellBasis(cell) {
      var lo = cell.bracket_lo_intvty, hi = cell.bracket_hi_intvty;
      if (lo === null || hi === null) return "clamped";
      if (lo === hi) return "measured";
      return cell.bracket_ratio > GAP_RATIO || cell.sparse_frontier ? "interpolated_gap" : "interpolated";
    }

    // compare.py::cell_note
    function cellNote(label, target, cell) {
      var lo = cell.bracket_lo_intvty, hi = cell.bracket_hi_intvty, basis = cell.cell_basis, parts = [];
      if (basis === "clamped" && hi === null && lo !== null) parts.push(label + " is outside its measured range: " +
        "its frontier ends at " + pyFixed(lo, 1) + " tok/s/user, below the " + fmtG(target) + " tok/s/user target");
      else if (basis === "clamped" && lo === null && hi !== null) parts.push(label + " is outside its measured " +
        "range: its frontier starts at " + pyFixed(hi, 1) + " tok/s/user, above the " + fmtG(target) +
        " tok/s/user target");
      else if (basis === "interpolated_gap") parts.push(label + "'s values are interpolated across a gap between " +
        pyFixed(lo, 1) + " and " + pyFixed(hi, 1) + " tok/s/user");
      var seen = [];
      [[lo, cell.bracket_lo_repeat_spread], [hi, cell.bracket_hi_repeat_spread]].forEach(function (p) {
        var x = p[0], spread = p[1];
        if (x === null || seen.indexOf(x) >= 0 || spread === null || spread === undefined ||
            !(spread > REPEAT_SPREAD_LIMIT)) return;
        seen.push(x);
        parts.push(label + "'s point at " + pyFixed(x, 1) + " tok/s/user averages repeats " +
                   roundHalfUp(spread * 100) + "% apart in tok/s/GPU");
      });
      return parts.length ? parts.join("; ") : null;
    }

    // every metric and interval of a side splined once, kept on the side object
    function sideSplines(side) {
      if (!side._splines) {
        var out = {};
        Object.keys(side.metrics).forEach(function (m) { out[m] = spline(side.x, side.metrics[m]); });
        Object.keys(side.ci || {}).forEach(function (c) { out[c] = spline(side.x, side.ci[c]); });
        Object.defineProperty(side, "_splines", {value: out, enumerable: false});
      }
      return side._splines;
    }

    // One side at one target, compare.py::_evaluate and _bracket: side = {x, metrics, ci, price_per_mtok,
    // prices_per_mtok, repeat_spread} (a frontier as the page data carries it), label its label.
    function evaluate(side, label, target) {
      var x = side.x, n = x.length, sp = sideSplines(side);
      var evaluated = clip(target, x[0], x[n - 1]);
      var cell = {evaluated_intvty: evaluated, target_clamped: evaluated !== target};
      C.metrics.forEach(function (m) {
        cell[m] = sp[m] ? clip(evaluateRaw(sp[m], evaluated), sp[m].lo, sp[m].hi) : null;
      });
      // the bracket (compare.py::_bracket): the last x <= target and the first x >= target, their ratio and spreads
      var below = x.filter(function (v) { return v <= target; }).length;
      var above = x.findIndex(function (v) { return v >= target; });
      var lo = below ? x[below - 1] : null, hi = above >= 0 ? x[above] : null;
      cell.bracket_lo_intvty = lo;
      cell.bracket_hi_intvty = hi;
      cell.bracket_ratio = lo === null || hi === null ? null : hi / lo;
      cell.bracket_lo_repeat_spread = lo === null ? null : side.repeat_spread[below - 1];
      cell.bracket_hi_repeat_spread = hi === null ? null : side.repeat_spread[above];
      var implied = side.price_per_mtok / cell.tput_per_gpu, splinedCost = cell.cost_per_mtok_hyperscaler;
      cell.implied_cost_per_mtok_hyperscaler = implied;
      cell.sparse_frontier = Math.max(implied, splinedCost) / Math.min(implied, splinedCost) > SPARSE_RATIO;
      cell.cell_basis = cellBasis(cell);
      cell.cell_note = cellNote(label, target, cell);
      // the 95 % intervals (confidence.py::side_intervals): splined and clamped as a metric; each tier's cost
      // interval is its price over the tok/s/GPU bounds
      SPLINED_CI.forEach(function (c) {
        cell[c] = sp[c] ? clip(evaluateRaw(sp[c], evaluated), sp[c].lo, sp[c].hi) : null;
      });
      var ciLo = cell.tput_per_gpu_ci_lo, ciHi = cell.tput_per_gpu_ci_hi;
      TIERS.forEach(function (t) {
        var price = side.prices_per_mtok[t], ok = price !== null && ciLo !== null && ciHi !== null && ciLo > 0;
        cell["cost_per_mtok_" + t + "_ci_lo"] = ok ? price / ciHi : null;
        cell["cost_per_mtok_" + t + "_ci_hi"] = ok ? price / ciLo : null;
      });
      return cell;
    }

    // both sides at each target, with confidence.py::difference_significant on both rows
    function pairCells(sideA, sideB, labels, targets) {
      return targets.map(function (t) {
        var a = evaluate(sideA, labels.a, t), b = evaluate(sideB, labels.b, t);
        a.difference_significant = b.difference_significant = intervalsApart(
          a.tput_per_gpu_ci_lo, a.tput_per_gpu_ci_hi, b.tput_per_gpu_ci_lo, b.tput_per_gpu_ci_hi);
        return {target: t, a: a, b: b};
      });
    }

    // The trend rule (trends.py::trends_at_target) on one day's frontier {x, metrics}: the metric's spline at the
    // target inside [x_first, x_last], null outside it or where a point lacks the metric (never clamped).
    function trendValue(day, metric, target) {
      var x = day.x, n = x.length, values = day.metrics[metric];
      if (!values || !(x[0] <= target && target <= x[n - 1])) return null;
      if (values.some(function (v) { return v === null; })) return null;
      if (!day._splines) Object.defineProperty(day, "_splines", {value: {}, enumerable: false});
      if (!day._splines[metric]) day._splines[metric] = spline(x, values);
      return evaluateRaw(day._splines[metric], target);
    }

    // compare.py::sentences, the one sentence rule: {cost, tput} for labels A and B, cells a and b, a cost tier and
    // the caveat (the cells' notes joined, or "")
    function sentenceRule(A, B, a, b, tier, caveat) {
      var suffix = caveat ? " (" + caveat + ")" : "", cost, tput;
      var onCost = tier === "hyperscaler" ? "cost per token" : "cost per token at " + tier + " prices";
      var atTier = tier === "hyperscaler" ? "" : " at " + tier + " prices";
      var costA = a["cost_per_mtok_" + tier], costB = b["cost_per_mtok_" + tier];
      if (costA === null || costA === undefined || costB === null || costB === undefined) {
        cost = "no " + tier + " price for one side";
      } else {
        var cheaper = costA <= costB ? A : B, pricier = costA <= costB ? B : A;
        var ratio = Math.max(costA, costB) / Math.min(costA, costB), n = roundHalfUp((ratio - 1) * 100);
        var apart = intervalsApart(a["cost_per_mtok_" + tier + "_ci_lo"], a["cost_per_mtok_" + tier + "_ci_hi"],
                                   b["cost_per_mtok_" + tier + "_ci_lo"], b["cost_per_mtok_" + tier + "_ci_hi"]);
        if (ratio < C.tie_ratio) cost = A + " and " + B + " are essentially tied on " + onCost;
        else if (apart === false) cost = A + " and " + B + " are within run-to-run noise (95 % intervals overlap) on " +
          onCost;
        else if (n < 100) cost = cheaper + " is " + n + "% cheaper per token" + atTier;
        else cost = cheaper + " is " + pyFixed(ratio, 1) + "× cheaper per token" + atTier + " (" + pricier +
          " costs " + n + "% more)";
      }
      var tputA = a.tput_per_gpu, tputB = b.tput_per_gpu;
      var faster = tputA >= tputB ? A : B, tputRatio = Math.max(tputA, tputB) / Math.min(tputA, tputB);
      if (tputRatio < C.tie_ratio) tput = A + " and " + B + " are essentially tied on tok/s/GPU";
      else if (intervalsApart(a.tput_per_gpu_ci_lo, a.tput_per_gpu_ci_hi, b.tput_per_gpu_ci_lo,
                              b.tput_per_gpu_ci_hi) === false) {
        tput = A + " and " + B + " are within run-to-run noise (95 % intervals overlap) on tok/s/GPU";
      } else tput = faster + " delivers " + roundHalfUp((tputRatio - 1) * 100) + "% more tok/s/GPU";
      return {cost: cost + suffix, tput: tput + suffix};
    }

    // "<cost>; <throughput>" at hyperscaler cost with the cells' notes said once at the end, as compare.headline
    // joins them
    function headlineAt(c, labels) {
      var caveat = [c.a.cell_note, c.b.cell_note].filter(function (n) { return n; }).join("; ");
      var said = sentenceRule(labels.a, labels.b, c.a, c.b, "hyperscaler", "");
      return said.cost + "; " + said.tput + (caveat ? " (" + caveat + ")" : "");
    }

    // report.py::_not_measured, by cell_basis
    function notMeasured(cell) {
      if (cell.cell_basis === "clamped") return " (not measured at this target)";
      return cell.cell_basis === "interpolated_gap" ? " (interpolated across a gap)" : "";
    }

    // the three sentences at one target (report.py::sentences) on the displayed band [lo, hi]
    function sentencesAt(c, labels, band) {
      var a = c.a, b = c.b;
      return [
        "At " + fmtG(c.target) + " tok/s/user, " + bandPhrase(c.target, band) + " of the " + band[0] + "–" +
          band[1] + " tok/s/user band where both sides have runs:",
        labels.a + " delivers " + fmt(a.tput_per_gpu, 1, true) + " tok/s/GPU at $" +
          fmt(a.cost_per_mtok_hyperscaler, 3, false) + " per million tokens" + notMeasured(a) + "; " + labels.b +
          " delivers " + fmt(b.tput_per_gpu, 1, true) + " tok/s/GPU at $" + fmt(b.cost_per_mtok_hyperscaler, 3, false) +
          notMeasured(b) + ".",
        headlineAt(c, labels) + ".",
      ];
    }

    // one line per target (report.py::target_sentence)
    function targetSentence(c, labels, band) {
      return "At " + fmtG(c.target) + " tok/s/user (" + bandPhrase(c.target, band) + "): " + headlineAt(c, labels) + ".";
    }

    return {cellBasis: cellBasis, cellNote: cellNote, evaluate: evaluate, pairCells: pairCells,
            trendValue: trendValue, sentenceRule: sentenceRule, headlineAt: headlineAt, sentencesAt: sentencesAt,
            targetSentence: targetSentence, notMeasured: notMeasured};
  }

  // The table's rows (report.py::_METRIC_ROWS with the chosen cost tier): label, column, cell text.
  function tableRows(tier, hasMeasured) {
    return [
      {label: "Throughput (tok/s/GPU)", col: "tput_per_gpu",
       f: withInterval(function (v) { return fmt(v, 1, true); }, "tput_per_gpu_ci_lo", "tput_per_gpu_ci_hi")},
      {label: "Cost ($/M tokens, " + tier + ")", col: "cost_per_mtok_" + tier,
       f: withInterval(function (v) { return v === null ? "—" : "$" + fmt(v, 3, false); },
                       "cost_per_mtok_" + tier + "_ci_lo", "cost_per_mtok_" + tier + "_ci_hi")},
      {label: "tok/s/MW (all-in power)", col: "tok_s_per_mw", f: function (v) { return fmt(v, 0, true); }},
      {label: "tok/s/MW (measured telemetry)", col: "measured_tok_s_per_mw", f: function (v) { return fmt(v, 0, true); },
       only: hasMeasured},
      {label: "Concurrency", col: "concurrency", f: function (v) { return fmt(v, 1, true); }},
    ].filter(function (r) { return r.only === undefined || r.only; });
  }

  function el(tag, text, attrs) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = text;
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    return e;
  }

  // The matched-interactivity table (metric rows × target × side) into a <table>; each cell keeps its full-precision
  // value in data-value and its note as a title. Returns the notes, "at <target> tok/s/user, <note>", in order.
  function fillTable(table, at, labels, tier, hasMeasured) {
    var head = el("tr");
    head.appendChild(el("th", "Metric"));
    at.forEach(function (c) {
      ["a", "b"].forEach(function (k) { head.appendChild(el("th", fmtG(c.target) + " tok/s/user · " + labels[k])); });
    });
    var thead = el("thead"), tbody = el("tbody");
    thead.appendChild(head);
    tableRows(tier, hasMeasured).forEach(function (r) {
      var tr = el("tr", null, {"data-metric": r.col});
      tr.appendChild(el("td", r.label));
      at.forEach(function (c, i) {
        ["a", "b"].forEach(function (k) {
          var v = c[k][r.col], td = el("td", r.f(v, c[k]), {"data-target-index": String(i + 1), "data-side": k,
                                                       "data-value": v === null ? "" : String(v)});
          if (c[k].cell_note) { td.className = "noted"; td.title = c[k].cell_note; }
          tr.appendChild(td);
        });
      });
      tbody.appendChild(tr);
    });
    table.replaceChildren(thead, tbody);
    var noted = [];
    at.forEach(function (c) {
      ["a", "b"].forEach(function (k) {
        if (c[k].cell_note) noted.push("at " + fmtG(c.target) + " tok/s/user, " + c[k].cell_note);
      });
    });
    return noted;
  }

  // --- CSV: a field as a spreadsheet reads it safely -----------------------------------------------------------
  function csvField(v) {
    if (v === null || v === undefined) return "";
    var text = typeof v === "boolean" ? (v ? "true" : "false") : String(v);
    if (typeof v === "string" && /^[=+\-@\t\r]/.test(text)) text = "'" + text;  // no formula in a spreadsheet
    return /[",\n\r]/.test(text) ? "\"" + text.replace(/"/g, "\"\"") + "\"" : text;
  }

  // a text file offered as a download (no request leaves the page: a blob: URL)
  function download(text, name, type) {
    var a = el("a", null, {href: URL.createObjectURL(new Blob([text], {type: type})), download: name});
    document.body.appendChild(a);
    a.click();
    a.remove();
  }

  window.FrontierRules = {
    TIERS: TIERS, create: create, spline: spline, evaluateRaw: evaluateRaw, clip: clip, pyFixed: pyFixed,
    fmtG: fmtG, fmt: fmt, roundHalfUp: roundHalfUp, interactivityBand: interactivityBand,
    displayedBand: displayedBand, defaultTargets: defaultTargets, bandPhrase: bandPhrase,
    intervalsApart: intervalsApart, tableRows: tableRows, fillTable: fillTable, el: el, csvField: csvField,
    download: download,
  };
})();
