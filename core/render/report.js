// jobmon's HTML report: draws the plots from the JSON in #jobmon-data with uPlot.
// The data come from the job: they are only ever set as text (uPlot uses textContent).
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("jobmon-data").textContent);
  var HOST_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
                     "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
  var many = data.hosts.length > 1;
  // several nodes: a colour per node, a dash per definition (solid, dashed, dotted ...)
  var DASHES = [undefined, [6, 3], [2, 3], [10, 3, 2, 3], [1, 5]];
  var plots = {};

  function bytes(v) {
    if (v == null) return "–";
    var units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"], i = 0, a = Math.abs(v);
    while (a >= 1024 && i < units.length - 1) { a /= 1024; v /= 1024; i++; }
    return (i === 0 ? v.toFixed(0) : v.toFixed(a < 10 ? 2 : a < 100 ? 1 : 0)) + " " + units[i];
  }
  function tick(fmt) {   // 8 and 2.5 on an axis, not 8.00 and 2.50
    return function (u, ticks) {
      return ticks.map(function (v) {
        return fmt(v).replace(/(\.\d*?)0+(?=\D|$)/, "$1").replace(/\.(?=\D|$)/, "");
      });
    };
  }
  // A bytes axis speaks one unit, the binary one of its scale's top (B, KiB, MiB ...):
  // its ticks are steps of 1, 2, 5, 10 ... of that unit, and each tick says it
  var BYTE_UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  function unitOf(u, axisIdx) {
    var sc = u.scales[u.axes[axisIdx].scale];
    var top = Math.max(Math.abs(sc.min || 0), Math.abs(sc.max || 0)), i = 0;
    while (top >= 1024 && i < BYTE_UNITS.length - 1) { top /= 1024; i++; }
    return i;
  }
  function byteSteps(u, axisIdx) {
    var unit = Math.pow(1024, unitOf(u, axisIdx)), out = [];
    for (var p = unit === 1 ? 1 : 1e-3; p <= 1e4; p *= 10) out.push(p * unit, 2 * p * unit, 5 * p * unit);
    return out;
  }
  function byteTicks(suffix) {
    return function (u, ticks, axisIdx, space, incr) {
      var i = unitOf(u, axisIdx), unit = Math.pow(1024, i), digits = decimals(incr / unit);
      return ticks.map(function (v) {
        return (v / unit).toFixed(digits) + " " + BYTE_UNITS[i] + suffix;
      });
    };
  }
  function decimals(step) {   // the fewest that write every multiple of `step` exactly
    for (var d = 0; d < 3; d++)
      if (Math.abs(Math.round(step * Math.pow(10, d)) - step * Math.pow(10, d)) < 1e-6) return d;
    return 3;
  }
  var COUNT_STEPS = [];
  for (var p = 1; p <= 1e9; p *= 10) COUNT_STEPS.push(p, 2 * p, 5 * p);
  var STEPS = {"bytes": byteSteps, "bytes/s": byteSteps, "count": COUNT_STEPS};
  var TICKS = {"bytes": byteTicks(""), "bytes/s": byteTicks("/s")};

  // Times as the heading shows them: the writer's local time (data.zone: its UTC offset),
  // ISO 8601, the date under the first tick and wherever the day changes
  function pad(n) { return (n < 10 ? "0" : "") + n; }
  function local(t) { return new Date((t + data.zone) * 1000); }
  function day(d) { return d.getUTCFullYear() + "-" + pad(d.getUTCMonth() + 1) + "-" + pad(d.getUTCDate()); }
  function clock(d, digits) {
    var s = pad(d.getUTCHours()) + ":" + pad(d.getUTCMinutes()) + ":" + pad(d.getUTCSeconds());
    return digits ? s + "." + String(d.getUTCMilliseconds() + 1000).slice(1, 1 + digits) : s;
  }
  function timeTicks(u, ticks, axisIdx, space, incr) {
    var digits = decimals(incr), last = null;
    return ticks.map(function (t) {
      var d = local(t), date = day(d), text = clock(d, digits);
      if (date !== last) text += "\n" + date;
      last = date;
      return text;
    });
  }
  function timeValue(u, t) { return t == null ? "–" : day(local(t)) + " " + clock(local(t), 3); }
  var FORMATS = {
    "bytes": bytes,
    "bytes/s": function (v) { return v == null ? "–" : bytes(v) + "/s"; },
    "cores": function (v) { return v == null ? "–" : v.toFixed(2); },
    "%": function (v) { return v == null ? "–" : v.toFixed(1) + " %"; },
    "W": function (v) { return v == null ? "–" : v.toFixed(1) + " W"; },
    "count": function (v) { return v == null ? "–" : String(Math.round(v)); }
  };

  // A counter's change per second; the first sample's is over the time since the job
  // started (counters start at 0 there). A missing value leaves a gap.
  function rate(counter, t, e0) {
    var out = new Array(counter.length), lastV = 0, lastT = t.length ? t[0] - e0 : 0;
    var known = e0 != null && e0 > 0;
    for (var i = 0; i < counter.length; i++) {
      var v = counter[i];
      if (v == null) { out[i] = null; continue; }
      var dt = t[i] - lastT;
      out[i] = known && dt > 0 ? (v - lastV) / dt : null;
      lastV = v; lastT = t[i]; known = true;
    }
    return out;
  }

  // Fields added up sample by sample (a definition made of two others); a missing
  // value in any leaves a gap, a field the host lacks leaves the series out.
  function sum(parts) {
    if (parts.some(function (c) { return !c; })) return null;
    return parts[0].map(function (v, i) {
      var total = 0;
      for (var k = 0; k < parts.length; k++) {
        if (parts[k][i] == null) return null;
        total += parts[k][i];
      }
      return total;
    });
  }

  // One time axis for every plot: the sample times of all hosts. A host's values sit at
  // its own times; at the other hosts' they are undefined, which uPlot draws across (a
  // null, a missing sample, stays a gap).
  // Each host's start (its first sample's time less its elapsed time) is on the axis too:
  // a value over an interval ("interval" series) is drawn from there for its first sample.
  function start(h) {
    return h.t.length && h.e0 != null && h.e0 > 0 ? data.t0 + h.t[0] - h.e0 : null;
  }
  var axis = (function () {
    var xs = [];
    data.hosts.forEach(function (h) {
      if (start(h) != null) xs.push(start(h));
      h.t.forEach(function (t) { xs.push(data.t0 + t); });
    });
    xs.sort(function (a, b) { return a - b; });
    var x = xs.filter(function (v, i) { return i === 0 || v !== xs[i - 1]; });
    var index = new Map(x.map(function (v, i) { return [v, i]; }));
    return {x: x, at: data.hosts.map(function (h) {
      return h.t.map(function (t) { return index.get(data.t0 + t); });
    }), start: data.hosts.map(function (h) {
      return start(h) == null ? null : index.get(start(h));
    })};
  })();

  // A host's values at its own times; at the other hosts' (and its start) undefined, which
  // uPlot draws across. An interval's first value is also set at the host's start.
  function onAxis(values, hi, interval) {
    var at = axis.at[hi];
    var y = new Array(axis.x.length).fill(undefined);
    for (var i = 0; i < at.length; i++) y[at[i]] = values[i];
    if (interval && axis.start[hi] != null && values.length) y[axis.start[hi]] = values[0];
    return y;
  }
  // uPlot's paths: "interval" a step before each sample (its value over the interval it
  // ends), "peak" a step after (the mark held until a sample saw it rise)
  var PATHS = {interval: uPlot.paths.stepped({align: -1}),
               peak: uPlot.paths.stepped({align: 1})};

  // [x, y...] of one plot, and what each series shows
  function columns(plot) {
    var cols = [axis.x], series = [], n = axis.x.length;
    data.hosts.forEach(function (h, hi) {
      plot.series.forEach(function (s, si) {
        var col = s.sum ? sum(s.sum.map(function (f) { return h.cols[f]; })) : h.cols[s.field];
        if (!col) return;
        cols.push(onAxis(s.rate ? rate(col, h.t, h.e0) : col, hi, s.drawn === "interval"));
        series.push({drawn: s.drawn,
          label: many ? (h.host || "?") + " " + s.label : s.label,
          stroke: many ? HOST_COLORS[hi % HOST_COLORS.length] : s.color,
          dash: many ? DASHES[si % DASHES.length] : (s.dash || undefined),
          host: h.host, field: s.field, rate: s.rate
        });
      });
    });
    plot.levels.forEach(function (l) {
      var y = new Array(n).fill(undefined);
      y[0] = l.value; y[n - 1] = l.value;
      cols.push(y);
      series.push({label: l.label, stroke: l.color, dash: l.dash, level: true, value: l.value});
    });
    return {data: cols, series: series};
  }

  // a moment (an OOM kill) as a red line across the plot, labelled at its top
  function mark(u, marks) {
    (marks || []).forEach(function (m) {
      var x = u.valToPos(m.t, "x", true), ctx = u.ctx, top = u.bbox.top;
      if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) return;
      ctx.save();
      ctx.strokeStyle = ctx.fillStyle = "#d62728";
      ctx.lineWidth = 2 * devicePixelRatio;
      ctx.beginPath();
      ctx.moveTo(x, top);
      ctx.lineTo(x, top + u.bbox.height);
      ctx.stroke();
      ctx.font = (11 * devicePixelRatio) + "px sans-serif";
      ctx.fillText(m.label, x + 4 * devicePixelRatio, top + 12 * devicePixelRatio);
      ctx.restore();
    });
  }

  function width(el) {
    return Math.max(300, el.clientWidth - 18);
  }

  var lastDraw = 0;
  function drawn() { lastDraw = performance.now(); }   // the last plot to draw sets it last

  var syncing = false;
  function zoomOthers(u, key) {
    if (key !== "x" || syncing) return;
    syncing = true;
    var min = u.scales.x.min, max = u.scales.x.max;
    Object.keys(plots).forEach(function (id) {
      var o = plots[id];
      if (o !== u && (o.scales.x.min !== min || o.scales.x.max !== max))
        o.setScale("x", {min: min, max: max});
    });
    syncing = false;
  }

  data.plots.forEach(function (plot) {
    var el = document.getElementById("plot-" + plot.id);
    var c = columns(plot), fmt = FORMATS[plot.unit] || FORMATS.count;
    var series = [{value: timeValue}].concat(c.series.map(function (s) {
      var o = {label: s.label, stroke: s.stroke, dash: s.dash, width: s.level ? 1.5 : 1.25,
               // a gauge read at its samples shows them as dots where they are sparse
               // (uPlot's own rule), so a line between two is seen as a guess
               spanGaps: !!s.level, points: s.level || s.drawn ? {show: false} : {},
               // a level line's legend always says its level, wherever the cursor is
               value: function (u, v) { return fmt(s.level ? s.value : v); }};
      if (PATHS[s.drawn]) o.paths = PATHS[s.drawn];
      return o;
    }));
    var opts = {
      title: plot.title + " (" + plot.unit + ")",
      width: width(el), height: 220,
      series: series,
      scales: {y: {range: function (u, lo, hi) {
        return [Math.min(0, lo), hi > 0 ? hi * 1.05 : 1];   // from 0, a little headroom
      }}},
      axes: [{values: timeTicks, size: 54, space: 110},
             {size: 92, incrs: STEPS[plot.unit], values: TICKS[plot.unit] || tick(fmt)}],
      cursor: {sync: {key: "jobmon"}, points: {show: false}},
      legend: {live: true},
      hooks: {setScale: [zoomOthers], draw: [function (u) { mark(u, plot.marks); }, drawn]}
    };
    var u = new uPlot(opts, c.data, el);
    u.jobmonSeries = c.series;   // what each series shows (host, field), for readers
    u.jobmonMarks = plot.marks;  // the moments drawn across it (an OOM kill), for readers
    plots[plot.id] = u;
  });

  window.addEventListener("resize", function () {
    Object.keys(plots).forEach(function (id) {
      var el = document.getElementById("plot-" + id);
      plots[id].setSize({width: width(el), height: 220});
    });
  });
  window.jobmonPlots = plots;
  // how long the page took from navigation: every plot drawn into its canvas (drawnMs),
  // and the first frame that shows them (renderMs; tests wait for it)
  requestAnimationFrame(function () {
    var root = document.documentElement.dataset;
    root.drawnMs = lastDraw.toFixed(1);
    root.renderMs = performance.now().toFixed(1);
  });
})();
