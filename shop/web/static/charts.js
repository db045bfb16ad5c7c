// Plain SVG charts for the console: a line chart and a timeline of holds.
// No library: a workshop room may have no internet, and these are small.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const COLOURS = ["#2563eb", "#d97706", "#059669", "#7c3aed", "#db2777", "#0891b2"];

function svgElement(name, attributes, text) {
  const element = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes || {})) element.setAttribute(key, value);
  if (text !== undefined) element.textContent = text;
  return element;
}

// series: [{name, points: [[x, y], ...]}]; draws into `container`, replacing what was there.
function lineChart(container, title, series, options) {
  const width = 360, height = 150, left = 40, right = 8, top = 22, bottom = 22;
  const xs = series.flatMap(s => s.points.map(p => p[0]));
  const ys = series.flatMap(s => s.points.map(p => p[1])).filter(y => y !== null);
  const xMax = Math.max(1, (options && options.xMax) || 0, ...xs);
  const yMax = Math.max(1, ...ys);
  const x = value => left + (width - left - right) * value / xMax;
  const y = value => top + (height - top - bottom) * (1 - value / yMax);
  const svg = svgElement("svg", {viewBox: `0 0 ${width} ${height}`, class: "chart",
                                 role: "img", "aria-label": title});
  svg.append(svgElement("text", {x: left, y: 14, class: "title"}, title));
  svg.append(svgElement("line", {x1: left, y1: y(0), x2: width - right, y2: y(0), class: "axis"}));
  svg.append(svgElement("text", {x: left - 4, y: y(yMax) + 4, class: "tick", "text-anchor": "end"},
                        String(Math.round(yMax * 10) / 10)));
  svg.append(svgElement("text", {x: left - 4, y: y(0) + 4, class: "tick", "text-anchor": "end"}, "0"));
  svg.append(svgElement("text", {x: width - right, y: height - 6, class: "tick", "text-anchor": "end"},
                        `${Math.round(xMax)} s`));
  series.forEach((s, index) => {
    const colour = s.colour || COLOURS[index % COLOURS.length];
    const points = s.points.filter(p => p[1] !== null);
    if (points.length) {
      svg.append(svgElement("polyline", {
        points: points.map(p => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" "),
        fill: "none", stroke: colour, "stroke-width": 2}));
    }
    const last = points.length ? Math.round(points[points.length - 1][1] * 10) / 10 : "–";
    svg.append(svgElement("text", {x: left + 6 + 100 * index, y: height - 6, class: "legend",
                                   fill: colour}, `${s.name}: ${last}`));
  });
  container.replaceChildren(svg);
}

// rows: [{name, holds: [{id, lock, acquired, released, owner, fencing_token}]}];
// red: the ids, per row, of holds that overlapped another hold of the same lock.
function holdTimeline(container, rows, red, from, to) {
  const width = 760, rowHeight = 34, left = 90, right = 10, top = 18;
  const height = top + rowHeight * rows.length + 18;
  const x = t => left + (width - left - right) * (Math.min(Math.max(t, from), to) - from) / (to - from);
  const svg = svgElement("svg", {viewBox: `0 0 ${width} ${height}`, class: "timeline",
                                 role: "img", "aria-label": "holds per instance over time"});
  for (let second = Math.ceil(from); second <= to; second += Math.max(1, Math.round((to - from) / 10))) {
    svg.append(svgElement("line", {x1: x(second), y1: top - 4, x2: x(second), y2: height - 16, class: "grid"}));
    svg.append(svgElement("text", {x: x(second), y: height - 4, class: "tick", "text-anchor": "middle"},
                          `${Math.round(second - to)} s`));
  }
  rows.forEach((row, index) => {
    const rowTop = top + index * rowHeight;
    svg.append(svgElement("text", {x: 4, y: rowTop + rowHeight / 2 + 4, class: "row-name"}, row.name));
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
      bar.append(svgElement("title", {}, `${row.name} held ${hold.lock}` +
        (hold.fencing_token ? ` (token ${hold.fencing_token})` : "") +
        ` for ${((end - hold.acquired) * 1000).toFixed(0)} ms` +
        (hold.released ? `, ${hold.ended}` : ", still held") + (overlapped ? ": TWO HOLDERS" : "")));
      svg.append(bar);
    }
  });
  container.replaceChildren(svg);
}
