// The console's charts: line charts drawn by uPlot (static/vendor/uplot, kept in the
// project: a room may have no internet), and a timeline of holds drawn as plain SVG.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
// Okabe and Ito's palette: told apart by colour-blind readers too, and on a projector.
const COLOURS = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#D55E00", "#56B4E9"];
// Chinese glyphs need a CJK font; ./run installs WenQuanYi Zen Hei. Words come from the
// catalog (the shop's i18n.js, loaded before this file): i18n._("English").
const FONT_FAMILY = "system-ui, 'WenQuanYi Zen Hei', 'Noto Sans CJK SC', sans-serif";

function svgElement(name, attributes, text) {
  const element = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes || {})) element.setAttribute(key, value);
  if (text !== undefined) element.textContent = text;
  return element;
}

// Every chart drawn and not yet destroyed. The console replaces a sale's panel every
// second; a chart whose panel left the page is destroyed, so that its listeners and
// canvas go with it. Not at once: a panel is drawn before it is put on the page, so the
// sweep waits for the end of the task that draws.
const drawn = new Set();
let sweepPlanned = false;

function forgetChartsNoLongerShown() {
  sweepPlanned = false;
  for (const chart of drawn) {
    if (!chart.root.isConnected) {
      chart.observer.disconnect();
      chart.destroy();
      drawn.delete(chart);
    }
  }
}

// series: [{name, points: [[x, y], ...], colour?}], x in seconds, y may be null;
// options.xMax: where the x axis ends. Draws into `container`, replacing what was there.
function lineChart(container, title, series, options) {
  if (!sweepPlanned) {
    sweepPlanned = true;
    setTimeout(forgetChartsNoLongerShown, 0);
  }
  const xs = [...new Set(series.flatMap(s => s.points.map(p => p[0])))].sort((a, b) => a - b);
  const columns = series.map(s => {
    const at = new Map(s.points.map(p => [p[0], p[1]]));
    return xs.map(x => (at.has(x) ? at.get(x) : null));
  });
  const xMax = Math.max(1, (options && options.xMax) || 0, ...xs);
  const font = `14px ${FONT_FAMILY}`;
  const axis = {font, labelFont: `bold 14px ${FONT_FAMILY}`, stroke: "#333",
                grid: {stroke: "#e5e7eb", width: 1}, ticks: {stroke: "#9ca3af", width: 1}};
  container.setAttribute("role", "img");
  container.setAttribute("aria-label", title);
  container.replaceChildren();
  const chart = new uPlot({
    title,
    width: Math.max(280, container.clientWidth || 360),
    height: 230,
    scales: {x: {time: false, range: [0, xMax]},
             y: {range: (u, min, max) => [0, Math.max(1, max || 0) * 1.05]}},
    axes: [{...axis, label: i18n._("seconds"), values: (u, ticks) => ticks.map(t => `${t}`)},
           {...axis, size: 56}],
    series: [{label: i18n._("s")}, ...series.map((s, index) => ({
      label: s.name,
      stroke: s.colour || COLOURS[index % COLOURS.length],
      width: 3,
      spanGaps: false,
      points: {show: xs.length < 3},
      value: (u, value) => (value === null || value === undefined ? "–"
                                                                  : String(Math.round(value * 10) / 10)),
    }))],
    legend: {live: true},
    cursor: {drag: {x: false, y: false}},
    // The legend says the latest figures, and the ones under the cursor while it points:
    // uPlot blanks it when the cursor is away, after it draws and when the cursor leaves.
    hooks: {ready: [showLatest], setCursor: [u => { if (u.cursor.idx == null) showLatest(u); }]},
  }, [xs, ...columns], container);
  // The panel may be laid out after it is drawn, and windows are resized: follow the box.
  chart.observer = new ResizeObserver(() => {
    const width = Math.max(280, container.clientWidth);
    if (width && Math.abs(width - chart.width) > 4) chart.setSize({width, height: 230});
  });
  chart.observer.observe(container);
  drawn.add(chart);
  return chart;
}

function showLatest(chart) {
  const count = chart.data[0].length;
  if (count) chart.setLegend({idx: count - 1});
}

// rows: [{name, holds: [{id, lock, acquired, released, owner, fencing_token}]}];
// red: the ids, per row, of holds that overlapped another hold of the same lock.
function holdTimeline(container, rows, red, from, to) {
  const width = 760, rowHeight = 34, left = 90, right = 10, top = 18;
  const height = top + rowHeight * rows.length + 18;
  const x = t => left + (width - left - right) * (Math.min(Math.max(t, from), to) - from) / (to - from);
  const svg = svgElement("svg", {viewBox: `0 0 ${width} ${height}`, class: "timeline",
                                 role: "img", "aria-label": i18n._("holds per instance over time")});
  for (let second = Math.ceil(from); second <= to; second += Math.max(1, Math.round((to - from) / 10))) {
    svg.append(svgElement("line", {x1: x(second), y1: top - 4, x2: x(second), y2: height - 16, class: "grid"}));
    svg.append(svgElement("text", {x: x(second), y: height - 4, class: "tick", "text-anchor": "middle"},
                          `${Math.round(second - to)} s`));
  }
  rows.forEach((row, index) => {
    const rowTop = top + index * rowHeight;
    // An instance's row is its name; the labs' row is a word, said in the reader's language.
    const rowName = row.name === "labs" ? i18n._("labs") : row.name;
    svg.append(svgElement("text", {x: 4, y: rowTop + rowHeight / 2 + 4, class: "row-name"}, rowName));
    // Holds open at once in one row (locks of different products, or many buyers
    // without a lock) share it in lanes: the first free lane, as many as it takes.
    const lanes = [], placed = [];
    for (const hold of row.holds) {
      const end = hold.released || to;
      if (end < from) continue;
      let lane = lanes.findIndex(laneEnd => laneEnd <= hold.acquired);
      if (lane === -1) { lane = lanes.length; lanes.push(0); }
      lanes[lane] = end;
      placed.push([hold, lane, end]);
    }
    const laneHeight = (rowHeight - 6) / Math.max(2, lanes.length);
    for (const [hold, lane, end] of placed) {
      const overlapped = red.has(`${row.name}#${hold.id}`);
      const bar = svgElement("rect", {
        x: x(hold.acquired), y: rowTop + 4 + lane * laneHeight,
        width: Math.max(2, x(end) - x(hold.acquired)), height: Math.max(0.5, laneHeight - 1),
        class: overlapped ? "hold overlap" : (hold.released ? "hold" : "hold open"),
        "data-lock": hold.lock});
      bar.append(svgElement("title", {}, i18n._("%(who)s held %(lock)s for %(ms)s ms",
        {who: row.name, lock: hold.lock, ms: ((end - hold.acquired) * 1000).toFixed(0)}) +
        (hold.fencing_token ? " " + i18n._("(fencing token %(token)s)", {token: hold.fencing_token}) : "") +
        (hold.released ? `, ${hold.ended}` : i18n._(", still held")) +
        (overlapped ? i18n._(": TWO HOLDERS") : "")));
      svg.append(bar);
    }
  });
  container.replaceChildren(svg);
}
