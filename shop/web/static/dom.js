// How the pages' scripts build what they show: element("td", {class: "n"}, text).
//
// The console's page loads it from here; the room's page gets it at /room/dom.js.
// Children that are strings become text nodes, never parsed as HTML: a name, a
// message or a lock's source that a student sent is shown as the characters it
// is, whatever it holds. Attributes named on... are listeners.
function element(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes || {})) {
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (value !== false && value !== null && value !== undefined) node.setAttribute(key, value);
  }
  node.append(...children.filter(child => child !== null && child !== undefined));
  return node;
}
