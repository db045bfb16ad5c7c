// The workshop console. It draws; it decides nothing. It reads this instance's API
// (settings, locks, holds) and asks the launcher's control for what only the launcher
// can do: labs, sales, faults. Everything refreshes about once a second.
"use strict";

const root = document.getElementById("console");
const CONTROL = root.dataset.control;          // "" when not started by `lockshop up`
const TOKEN_REQUIRED = root.dataset.tokenRequired === "yes";
const TOKEN_KEY = "lockshop-admin-token";
const view = {state: null, labRun: null, lockWindow: 30, pids: new Map()};
// Every word a person reads goes through the catalog (the shop's i18n.js): _("English").
const {_} = i18n;

// --- talking to the shop and to the control -------------------------------------

function token() { return sessionStorage.getItem(TOKEN_KEY) || ""; }
function instructor() { return !TOKEN_REQUIRED || token() !== ""; }

// How long a look (a GET) may take. A paused instance, or a slowed link, would keep
// one unanswered forever, and the refresh loop waits for each in turn: it gives up on
// that one, says so, and asks again at the next tick. An action (a POST) may take as
// long as it takes: a restart waits for the instance to answer.
const LOOK_TIMEOUT_MS = 10_000;

async function call(url, options) {
  // The control is another origin: it learns the page's language from this header.
  const headers = {"Content-Type": "application/json",
                   "Accept-Language": document.documentElement.lang || "en"};
  if (token()) headers.Authorization = `Bearer ${token()}`;
  const look = !options || !options.method || options.method === "GET";
  const signal = look ? AbortSignal.timeout(LOOK_TIMEOUT_MS) : undefined;
  let response;
  try {
    response = await fetch(url, {...options, headers, signal});
  } catch (error) {
    if (error.name === "TimeoutError") {
      throw new Error(_("no answer in %(seconds)s s", {seconds: LOOK_TIMEOUT_MS / 1000}));
    }
    throw error;
  }
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(body.message || body.error || `${response.status} ${response.statusText}`);
  return body;
}
const shopApi = (path, options) => call(path, options);
const control = (path, options) => call(CONTROL + path, options);
const post = body => ({method: "POST", body: JSON.stringify(body || {})});

function say(text, bad) {
  const message = document.getElementById("message");
  message.textContent = text;
  message.className = bad ? "notice bad" : "notice";
  message.hidden = !text;
}

// Run an action from a button: say what happened, never leave an error uncaught.
async function act(what, action) {
  say(_("%(what)s…", {what}));
  try {
    await action();
    say(_("%(what)s: done", {what}));
  } catch (error) {
    say(_("%(what)s: %(error)s", {what, error: error.message}), true);
  }
}

const button = (label, onclick, extra) => element("button", {type: "button", onclick, ...extra}, label);

// --- role ---------------------------------------------------------------------------

function showRole() {
  document.body.classList.toggle("student", !instructor());
  document.getElementById("role").textContent = instructor()
    ? _("instructor: every button is yours") : _("student: read-only, and the shop's buy pages");
}
const tokenForm = document.getElementById("token-form");
if (tokenForm) {
  tokenForm.addEventListener("submit", event => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, document.getElementById("token").value);
    showRole();
  });
}

// --- cluster: instances, servers, settings ------------------------------------------

// What each fault button says; the control's URLs keep the English names.
const ACTIONS = {pause: i18n.N_("pause"), resume: i18n.N_("resume"), kill: i18n.N_("kill"),
                 restart: i18n.N_("restart"), "expire-session": i18n.N_("expire-session"),
                 stop: i18n.N_("stop"), start: i18n.N_("start")};

function drawCluster(state) {
  // With 'lockshop up --hosts' every part is a host of its own: an instance can be cut
  // off from every server (Redis, Redlock's five, ZooKeeper) while the others reach them.
  const lan = state.network;
  const serverHosts = lan ? Object.keys(lan.hosts).filter(h => !h.startsWith("shop-")) : [];
  const cutOff = i => lan ? [button(_("cut off"), () => act(_("cut %(name)s off from the servers", {name: i.name}),
    () => control("/control/network/partition", post({from: [i.name], to: serverHosts}))
      .then(refreshState)), {"data-action": "cut-off"}),
    button(_("slow"), () => act(_("slow what %(name)s sends", {name: i.name}),
      () => control("/control/network/slow", post({host: i.name, ...linkForm()}))
        .then(refreshState)), {"data-action": "slow"})] : [];
  const instances = document.querySelector("#instances tbody");
  instances.replaceChildren(...state.instances.map(i => element("tr", {"data-instance": i.name},
    element("td", {}, i.name),
    element("td", {}, element("span", {class: `badge ${i.state}`}, _(i.state))),
    element("td", {}, element("a", {href: i.url + "/console"}, i.url)),
    element("td", {class: "act"},
      ...["pause", "resume", "kill", "restart", "expire-session"].map(action =>
        button(_(ACTIONS[action]), () => act(_("%(action)s %(name)s", {action: _(ACTIONS[action]), name: i.name}),
          () => control(`/control/instances/${i.name}/${action}`, post()).then(refreshState)),
          {"data-action": action})), ...cutOff(i)))));
  const network = document.getElementById("network");
  network.hidden = !lan;
  if (lan) {
    const slow = Object.entries(lan.slow).map(([host, link]) =>
      `${host} → ${link.to.join(", ")}: ${link.delay_ms} ms ± ${link.jitter_ms}, ` +
      _("%(percent)s%% lost", {percent: link.loss_percent}));
    document.getElementById("cut-links").textContent =
      lan.cut.length || slow.length
        ? [lan.cut.length ? _("cut: %(links)s", {links: lan.cut.join(", ")}) : "",
           slow.length ? _("slow: %(links)s", {links: slow.join("; ")}) : ""].filter(Boolean).join(" · ")
        : _("every link works, at full speed");
  }
  const servers = document.querySelector("#servers tbody");
  servers.replaceChildren(...state.servers.map(s => element("tr", {"data-server": s.name},
    element("td", {}, s.name),
    element("td", {}, element("span", {class: `badge ${s.state}`}, _(s.state))),
    element("td", {class: "act"}, ...["stop", "start"].map(action =>
      button(_(ACTIONS[action]), () => act(_("%(action)s %(name)s", {action: _(ACTIONS[action]), name: s.name}),
        () => control(`/control/servers/${s.name}/${action}`, post()).then(refreshState)),
        {"data-action": action}))))));
}

// What 'slow' asks for: the figures of the network panel's form.
function linkForm() {
  const form = new FormData(document.getElementById("link"));
  return {delay_ms: Number(form.get("delay_ms")), jitter_ms: Number(form.get("jitter_ms")),
          loss_percent: Number(form.get("loss_percent"))};
}

document.getElementById("heal").addEventListener("click", () =>
  act(_("heal every link"), () => control("/control/network/heal", post()).then(refreshState)));

document.getElementById("settings").addEventListener("submit", event => {
  event.preventDefault();
  const form = new FormData(event.target);
  const change = {strategy: form.get("strategy"), job_guard: form.get("job_guard"),
                  business_delay_ms: Number(form.get("business_delay_ms")),
                  job_interval_ms: Number(form.get("job_interval_ms"))};
  act(_("change the settings"), async () => {
    const now = await shopApi("/api/admin/settings", {method: "PUT", body: JSON.stringify(change)});
    document.getElementById("current-settings").textContent =
      _("strategy %(strategy)s, delay %(delay)s ms, jobs every %(interval)s ms (%(guard)s)",
        {strategy: now.strategy, delay: now.business_delay_ms, interval: now.job_interval_ms,
         guard: now.job_guard});
  });
});
document.getElementById("reset").addEventListener("click", () =>
  act(_("reset the products"), () => shopApi("/api/admin/reset", post())));

// --- the live sale --------------------------------------------------------------------

document.getElementById("sale-form").addEventListener("submit", event => {
  event.preventDefault();
  const form = new FormData(event.target);
  const sale = {strategy: form.get("strategy"), product: form.get("product"),
                buyers: Number(form.get("buyers")), seconds: Number(form.get("seconds")),
                business_delay_ms: Number(form.get("business_delay_ms"))};
  act(_("start a sale under %(strategy)s", {strategy: sale.strategy}), () => control("/control/sales", post(sale)).then(refreshSales));
});

async function refreshSales() {
  const {sales} = await control("/control/sales");
  const lastTwo = sales.slice(-2);
  const container = document.getElementById("sales");
  container.replaceChildren(...lastTwo.map(drawSale));
}

function drawSale(sale) {
  const samples = sale.samples;
  const at = key => samples.map(s => [s.t, s[key]]);
  const panel = element("div", {class: "sale", "data-sale": sale.sale, "data-state": sale.state,
                                "data-strategy": sale.request.strategy, "data-samples": samples.length});
  const verdict = sale.state === "running" ? element("p", {class: "verdict running"}, _("running…"))
    : sale.state === "failed" ? element("p", {class: "verdict bad"}, _("stopped: %(problem)s", {problem: sale.problem}))
    : element("p", {class: `verdict ${sale.audit.correct ? "ok" : "bad"}`},
        sale.audit.correct ? _("Audit: correct") : _("Audit: NOT correct"));
  const last = samples.length ? samples[samples.length - 1] : {};
  const final = sale.audit ? totals(sale.audit) : last;
  panel.append(
    element("h3", {}, _("Sale %(number)s: %(strategy)s", {number: sale.sale, strategy: sale.request.strategy})),
    element("p", {class: "muted"}, _("%(buyers)s buyers, %(seconds)s s, delay %(delay)s ms, on %(instances)s",
      {buyers: sale.request.buyers, seconds: sale.request.seconds,
       delay: sale.request.business_delay_ms, instances: sale.instances.join(", ")})),
    verdict,
    element("p", {class: "figures"},
      element("span", {}, _("oversold") + " "), element("strong", {class: "oversold"}, String(final.oversold ?? 0)),
      element("span", {}, " · " + _("lost updates") + " "), element("strong", {class: "lost"}, String(final.lost_updates ?? 0)),
      element("span", {}, " · " + _("double-booked seats") + " "), element("strong", {}, String(final.double_booked_seats ?? 0)),
      sale.locust ? element("span", {}, " · " + _("Locust: %(requests)s requests, %(failures)s failures, p95 %(p95)s ms",
        {requests: sale.locust.requests, failures: sale.locust.failures, p95: sale.locust.p95_ms})) : null));
  const charts = element("div", {class: "charts"});
  const chart = () => { const c = element("div", {class: "chart-box"}); charts.append(c); return c; };
  const xMax = sale.request.seconds + 2;
  lineChart(chart(), _("stock remaining"), [{name: _("stock"), points: at("stock")}], {xMax});
  lineChart(chart(), _("orders/s per instance"), sale.instances.map(name => ({
    name, points: samples.map(s => [s.t, s.orders_per_second[name] ?? null])})), {xMax});
  lineChart(chart(), _("oversold and lost updates"), [
    {name: _("oversold"), points: at("oversold"), colour: "#D55E00"},
    {name: _("lost updates"), points: at("lost_updates"), colour: "#56B4E9"}], {xMax});
  lineChart(chart(), _("lock wait p95 (ms)"), [{name: "p95", points: at("lock_wait_p95_ms")}], {xMax});
  lineChart(chart(), _("Locust requests/s"), [
    {name: _("requests"), points: at("locust_requests_per_second")},
    {name: _("failures"), points: at("locust_failures_per_second"), colour: "#D55E00"}], {xMax});
  panel.append(charts);
  return panel;
}

function totals(audit) {
  const sum = key => audit.products.reduce((total, p) => total + p[key], 0);
  return {oversold: sum("oversold"), lost_updates: sum("lost_updates"),
          double_booked_seats: sum("double_booked_seats")};
}

// --- the lock view ----------------------------------------------------------------------

document.getElementById("window").addEventListener("change", event => {
  view.lockWindow = Number(event.target.value);
});

function whoIs(owner) {
  // An owner is host:pid:thread; every instance says its pid with its holds.
  const pid = Number(String(owner).split(":")[1]);
  return view.pids.get(pid) || (pid ? `pid ${pid}` : owner);
}

function describeHolder(holder) {
  const parts = [whoIs(holder.owner)];
  if (holder.token) parts.push(_("token %(token)s", {token: holder.token.split(":")[0].slice(0, 12)}));
  if (holder.node) parts.push(_("node %(node)s", {node: holder.node.split("/").pop()}));
  if (holder.since) parts.push(_("since %(time)s", {time: new Date(holder.since * 1000).toLocaleTimeString()}));
  if (holder.expires_in_ms !== undefined) {
    parts.push(holder.expires_in_ms === null ? _("no expiry")
      : _("expires in %(ms)s ms", {ms: holder.expires_in_ms}));
  }
  if (holder.servers) parts.push(_("on %(count)s servers", {count: holder.servers}));
  return parts.join(", ");
}

async function refreshLocks() {
  // The lock view says the strategy too: no second request (and /api/strategies would
  // probe every backend, every second, to say which are available).
  const answer = await shopApi("/api/locks");
  document.getElementById("current-settings").textContent = _("strategy %(strategy)s", {strategy: answer.strategy});
  const rows = answer.locks.map(l => element("tr", {"data-lock": l.lock},
    element("td", {}, element("a", {href: `/products/${l.product_id}`}, l.lock)),
    element("td", {class: "muted"}, l.view ? l.view.where : (l.problem || _("%(strategy)s: in each process only", {strategy: answer.strategy}))),
    element("td", {}, l.view ? (l.view.holders.map(describeHolder).join("; ") || _("nobody"))
                             : (l.held_here.length ? `${answer.instance} (${l.held_here.length})` : "–")),
    element("td", {}, l.view ? (l.view.waiting.map(w => whoIs(w.owner)).join(", ") || "–") : "–")));
  document.querySelector("#lock-table tbody").replaceChildren(...rows);
  document.getElementById("wakeups").textContent =
    _("Herd wake-ups on %(instance)s under %(strategy)s since it started: %(count)s (waiters woken by a release: under zk_simple every waiter wakes, under zk_fair only the next).",
      {instance: answer.instance, strategy: answer.strategy, count: answer.herd_wakeups});
  const since = Date.now() / 1000 - view.lockWindow;
  const timeline = CONTROL ? await control(`/control/holds?since=${since}`)
    : await shopApi(`/api/locks/holds?since=${since}`).then(own => ({
        now: own.now, sources: [{name: own.instance, pid: own.pid, holds: own.holds}], overlaps: []}));
  for (const source of timeline.sources) if (source.pid) view.pids.set(source.pid, source.name);
  const red = new Set(timeline.overlaps.flatMap(o => o.holds.map(h => `${h.source}#${h.id}`)));
  const rowsToDraw = timeline.sources.filter(s => s.holds.length || s.name !== "labs");
  holdTimeline(document.getElementById("timeline"), rowsToDraw, red, timeline.now - view.lockWindow, timeline.now);
  const overlapText = document.getElementById("overlaps");
  overlapText.textContent = timeline.overlaps.length
    ? _("%(count)s overlap(s): two holders of one lock at once, the longest %(ms)s ms",
        {count: timeline.overlaps.length,
         ms: Math.max(...timeline.overlaps.map(o => o.seconds * 1000)).toFixed(0)})
    : _("No two holds of one lock overlapped in this window.");
  overlapText.className = timeline.overlaps.length ? "overlap-text" : "muted";
  overlapText.dataset.overlaps = timeline.overlaps.length;
}

// --- labs --------------------------------------------------------------------------------

async function loadLabs() {
  const {articles} = await control("/control/labs");
  const list = document.getElementById("lab-list");
  // One fold per article, the first one open: 43 labs would not fit on one screen.
  list.replaceChildren(...articles.map((group, index) => element("details",
    {class: "article", "data-article": group.article, open: index === 0 ? "open" : null},
    element("summary", {}, _("%(article)s %(title)s (%(count)s labs)",
      {article: group.article, title: group.title, count: group.labs.length})),
    element("ul", {}, ...group.labs.map(lab => element("li", {"data-lab": lab.id},
      button(_("Run"), () => act(_("run lab %(id)s", {id: lab.id}), async () => {
        view.labRun = (await control(`/control/labs/${lab.id}/run`, post())).run;
        await refreshLabRun();
      }), {class: "act", disabled: lab.missing ? "disabled" : null}),
      element("strong", {}, ` ${lab.id} `), lab.title,
      element("span", {class: "muted"}, ` ~${lab.seconds} s` +
        (lab.needs.length ? _(", needs %(parts)s", {parts: lab.needs.join(", ")}) : "")),
      lab.missing ? element("span", {class: "bad"}, " " + _("cannot run here: %(why)s", {why: lab.missing})) : null))))));
}

async function refreshLabRun() {
  if (!view.labRun) return;
  const run = await control(`/control/labs/runs/${view.labRun}`);
  const record = run.record;
  const halves = ["broken", "fix", "measure"].filter(half => record.versions[half] ||
                                                         record.steps.some(s => s.half === half));
  const verdictClass = record.verdict === "holds" ? "ok" : record.verdict === "running" ? "running" : "bad";
  const panel = document.getElementById("lab-run");
  panel.replaceChildren(
    element("h3", {}, `${record.id} ${record.title}`),
    element("p", {class: "muted"}, _("articles %(articles)s", {articles: record.articles.join(", ") || "–"})),
    ...halves.map(half => element("div", {class: `half ${half}`, "data-half": half},
      element("h4", {}, `${_(half)}: ${record.versions[half] || ""}`),
      element("ol", {}, ...record.steps.filter(s => s.half === half).map(step =>
        element("li", {class: step.agrees ? "agrees" : "differs"},
          element("div", {}, step.action),
          element("div", {class: "expected"}, _("expected: %(text)s", {text: step.expected})),
          element("div", {class: "observed"}, _("observed: %(text)s", {text: step.observed}) + " " +
                  (step.agrees ? "✓" : _("✗ differs")))))))),
    element("p", {class: `verdict ${verdictClass}`, id: "lab-verdict", "data-verdict": record.verdict},
      record.verdict === "running" ? _("running…")
        : `${_(record.verdict)}${record.reason ? ": " + record.reason : ""} (${record.seconds} s)`));
}

// --- exercises and the room board ---------------------------------------------------------
// Names and messages come from students: every cell is text (element() appends strings
// as text nodes), never HTML.

async function loadExercises() {
  const {exercises} = await control("/control/exercises");
  view.exercises = exercises;
  document.getElementById("exercise-list").replaceChildren(...exercises.map(exercise =>
    element("li", {"data-exercise": exercise.id},
      element("strong", {}, exercise.title),
      element("span", {class: "muted"}, ` (${exercise.backend}; ${exercise.lessons.join(" ")}; ` +
                                         `${exercise.articles.join(", ")})`),
      element("div", {}, exercise.asks),
      element("code", {}, `./run exercise start ${exercise.id}`))));
}

async function refreshRoom() {
  if (!view.exercises) return;
  const board = await control("/control/room");
  const code = view.state && view.state.room_code;
  document.getElementById("room-code").textContent = code ? _("Room code: %(code)s", {code}) : "";
  // A room opened with --room-without-limits: its instructor must know what does not hold.
  const limits = view.state && view.state.room_limits;
  const unlimited = document.getElementById("room-limits");
  unlimited.hidden = !(limits && limits.problem);
  if (limits && limits.problem) {
    unlimited.textContent = _("This room opened without its memory, process and total CPU " +
      "time limits: a student's program can take this machine down. Why: %(why)s",
      {why: limits.problem});
  }
  // What the room graded counts; what a student's own machine reported is shown apart,
  // under it, and never as passed by the room.
  const latest = new Map(board.results.map(r => [`${r.name}\u0000${r.exercise}\u0000${r.source}`, r]));
  const said = result => {
    const when = new Date(result.at * 1000).toLocaleTimeString();
    // The first broken lesson, as the command line names it (the diagnosed cause first).
    return result.passed ? _("passed %(when)s", {when}) : `${result.broken_lesson || _("failed")} ${when}`;
  };
  const cell = (name, exercise) => {
    const graded = latest.get(`${name}\u0000${exercise.id}\u0000room`);
    const reported = latest.get(`${name}\u0000${exercise.id}\u0000self-reported`);
    if (!graded && !reported) return element("td", {class: "muted"}, "–");
    return element("td", {class: graded ? (graded.passed ? "ok" : "bad") : "muted"},
      graded ? element("div", {class: "room-graded"}, said(graded)) : null,
      reported ? element("div", {class: "self-reported"},
                         _("self-reported: %(result)s", {result: said(reported)})) : null);
  };
  const name = encodeURIComponent;
  const actions = student => element("td", {class: "act"},
    button(_("free this name"), () => act(_("free the name %(name)s", {name: student}),
      () => control(`/room/api/students/${name(student)}/free`, post()).then(refreshRoom))),
    button(_("remove"), () => confirm(_("Remove %(name)s, their sources and their results?", {name: student}))
      && act(_("remove %(name)s and their results", {name: student}),
             () => control(`/room/api/students/${name(student)}`, {method: "DELETE"}).then(refreshRoom))));
  document.getElementById("room-board").replaceChildren(
    element("tr", {}, element("th", {}, _("student")),
            ...view.exercises.map(e => element("th", {}, e.id)), element("th", {class: "act"})),
    ...board.students.map(student => element("tr", {"data-student": student},
      element("td", {}, student), ...view.exercises.map(e => cell(student, e)), actions(student))));
  document.getElementById("room-empty").hidden = board.students.length > 0;
}

// States and verdicts the control sends in English, said through the catalog.
i18n.N_("up"); i18n.N_("paused"); i18n.N_("down");
i18n.N_("holds"); i18n.N_("does not hold"); i18n.N_("skipped"); i18n.N_("measure");
i18n.N_("broken"); i18n.N_("fix");

// --- the refresh loop -------------------------------------------------------------------

async function refreshState() {
  view.state = await control("/control/state");
  drawCluster(view.state);
  if (view.state.lab && !view.labRun) view.labRun = view.state.lab.run;
}

async function tick() {
  // Each look is named by the panel it draws, as the page titles it.
  const steps = [[_("Locks"), refreshLocks]];
  if (CONTROL) steps.push([_("Cluster"), refreshState], [_("Live sale"), refreshSales],
                          [_("Labs"), refreshLabRun], [_("Exercises"), refreshRoom]);
  const problems = [];
  for (const [panel, step] of steps) {
    try {
      await step();
    } catch (error) {
      // An instance may be paused or restarting: show it, and try again next tick.
      problems.push(`${panel}: ${error.message}`);
    }
  }
  const problem = document.getElementById("refresh-problem");
  problem.textContent = problems.length ? _("Could not refresh: %(problems)s", {problems: problems.join("; ")}) : "";
  problem.hidden = !problems.length;
  setTimeout(tick, 1000);
}

// Start once the catalog is here (or failed: then English), so nothing is drawn twice.
i18n.ready.then(() => {
  showRole();
  if (CONTROL) {
    loadLabs().catch(error => say(_("could not list the labs: %(error)s", {error: error.message}), true));
    loadExercises().catch(error => say(_("could not list the exercises: %(error)s", {error: error.message}), true));
  } else {
    document.getElementById("no-control").hidden = false;
    for (const id of ["cluster", "sale", "labs", "exercises"]) {
      document.getElementById(id).classList.add("unavailable");
    }
  }
  tick();
});
