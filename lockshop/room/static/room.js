// The room's page: a student joins, writes an exercise's lock in an editor, checks it on
// the instructor's machine, and reads each check as it completes.
//
// It only draws and sends: everything goes through the room's JSON API (data-api), the
// same one a script may use. Whatever a student or the server wrote (names, messages,
// sources, what a check observed) is put on the page with textContent, never as HTML.
// Every word of the page's own goes through the catalog (the shop's i18n.js): _("English").
import {pythonEditor} from "./vendor/codemirror/codemirror.js";

const root = document.getElementById("room");
const API = root.dataset.api;                       // "/room/api"
const LANGUAGE = i18n.language;                     // "zh_CN" or "en": the skeleton's words
const STUDENT_KEY = "lockshop-room-student";        // {secret, name}: the key to one's name
const SUBMISSION_KEY = "lockshop-room-submission-"; // + exercise: the last check, to resume
const SAVE_AFTER_MS = 800;                          // a pause in typing, then the source is kept
const POLL_MS = 1000;
const BOARD_MS = 5000;
const {_, ngettext} = i18n;

const view = {exercises: [], exercise: null, editor: null, saving: null, dirty: false,
              polling: null, boardTimer: null};

// --- talking to the room --------------------------------------------------------------

class Answer extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

function student() {
  try { return JSON.parse(localStorage.getItem(STUDENT_KEY) || "null"); } catch { return null; }
}

// One call of the API; the JSON (or the text) it answered, or an Answer error with the
// server's own message. A 401 with a key means the room no longer knows it: join again.
// `cache`: "no-store" for what changes under us; the board is revalidated by its ETag
// (an unchanged board is a 304 with no body: thirty browsers poll it).
async function call(path, {method = "GET", body, text = false, cache = "no-store", keepalive = false} = {}) {
  const headers = {};
  const me = student();
  if (me) headers["X-Student"] = me.secret;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(API + path, {method, headers, cache, keepalive,
                                        body: body === undefined ? undefined : JSON.stringify(body)});
  } catch (error) {
    throw new Answer(0, _("the instructor's machine does not answer (%(error)s)", {error: error.message}));
  }
  if (response.ok) {
    if (response.status === 204) return null;
    return text ? response.text() : response.json();
  }
  const answer = await response.json().catch(() => ({}));
  const message = answer.message || answer.error || `${response.status} ${response.statusText}`;
  if (response.status === 401 && me && path !== "/join") {
    forget(_("The room no longer knows this browser (%(message)s): join again.", {message}));
  }
  throw new Answer(response.status, message);
}

function problem(text) {
  const box = document.getElementById("problem");
  box.textContent = text || "";
  box.hidden = !text;
}

// --- joining --------------------------------------------------------------------------

function forget(why) {
  localStorage.removeItem(STUDENT_KEY);
  stopPolling();
  showJoin();
  document.getElementById("join-error").textContent = why || "";
}

function showJoin() {
  for (const id of ["write", "board", "tabs", "who"]) document.getElementById(id).hidden = true;
  document.getElementById("join").hidden = false;
  document.body.dataset.view = "join";
  const code = new URLSearchParams(location.search).get("code");
  if (code) document.getElementById("join-code").value = code;
}

async function join(event) {
  event.preventDefault();
  const form = event.target;
  const error = document.getElementById("join-error");
  const code = form.code.value.trim();
  const name = form.name.value.trim();
  error.textContent = "";
  form.querySelector("button").disabled = true;
  try {
    const answer = await call("/join", {method: "POST", body: {code, name}});
    localStorage.setItem(STUDENT_KEY, JSON.stringify({secret: answer.student, name: answer.name || name}));
    await enter();
  } catch (failure) {
    error.textContent = failure.message;  // the room's own words: a wrong code, a name taken
  } finally {
    form.querySelector("button").disabled = false;
  }
}

async function enter() {
  // The room may have let the name go (the instructor freed it, or this is another
  // room): a 401 here forgets the key and shows the join form again.
  const me = {...student(), ...(await call("/me"))};
  document.getElementById("join").hidden = true;
  document.getElementById("tabs").hidden = false;
  document.getElementById("who").hidden = false;
  document.getElementById("who-name").textContent = me.name;
  await loadExercises();
  route();
}

// --- the exercises ----------------------------------------------------------------------

async function loadExercises() {
  const answer = await call("/exercises");
  view.exercises = Array.isArray(answer) ? answer : (answer.exercises || []);
  const list = document.getElementById("exercise-list");
  list.replaceChildren(...view.exercises.map(exercise => element("li", {},
    element("a", {href: `#write/${encodeURIComponent(exercise.id)}`, "data-exercise": exercise.id},
            element("span", {class: "number"}, String(exercise.id)), " ", String(exercise.title || "")))));
}

async function openExercise(id) {
  if (view.exercise && String(view.exercise.id) === String(id) && view.editor) return;
  await saveNow();
  stopPolling();
  const exercise = view.exercises.find(e => String(e.id) === String(id));
  if (!exercise) { document.getElementById("choose").hidden = false; return; }
  view.exercise = exercise;
  for (const link of document.querySelectorAll("#exercise-list a")) {
    link.classList.toggle("current", link.dataset.exercise === String(id));
  }
  document.getElementById("choose").hidden = true;
  document.getElementById("exercise-body").hidden = false;
  document.getElementById("exercise-title").textContent = _("Exercise %(id)s: %(title)s",
                                                             {id: exercise.id, title: exercise.title || ""});
  document.getElementById("exercise-asks").textContent = exercise.asks || "";
  document.getElementById("exercise-file").textContent = exercise.file || "";
  document.getElementById("exercise-lessons").textContent = (exercise.lessons || []).length
    ? _("lessons %(lessons)s", {lessons: exercise.lessons.join(", ")}) : "";
  document.getElementById("result").hidden = true;
  const source = await sourceOf(exercise.id);
  showEditor(source);
  const last = localStorage.getItem(SUBMISSION_KEY + exercise.id);
  if (last) follow(last, {quietIfGone: true});
}

// The student's source as the room keeps it; the skeleton, in the page's language, if
// they have none yet.
async function sourceOf(id) {
  try {
    const kept = await call(`/sources/${encodeURIComponent(id)}`);
    const source = typeof kept === "string" ? kept : kept && kept.source;
    if (typeof source === "string" && source !== "") { saved(_("Kept on the instructor's machine.")); return source; }
  } catch (failure) {
    if (failure.status !== 404) throw failure;
  }
  saved("");
  return skeleton(id);
}

function skeleton(id) {
  return call(`/exercises/${encodeURIComponent(id)}/skeleton?lang=${encodeURIComponent(LANGUAGE)}`,
              {text: true});
}

function showEditor(source) {
  const parent = document.getElementById("editor");
  if (view.editor) view.editor.destroy();
  parent.replaceChildren();
  view.dirty = false;
  view.editor = pythonEditor(parent, source, () => { view.dirty = true; saveSoon(); });
}

function currentSource() { return view.editor ? view.editor.state.doc.toString() : ""; }

// --- keeping the source on the server -----------------------------------------------------

function saved(text, bad) {
  const status = document.getElementById("saved");
  status.textContent = text;
  status.className = bad ? "bad" : "muted";
}

function saveSoon() {
  saved(_("Editing…"));
  clearTimeout(view.saving);
  view.saving = setTimeout(saveNow, SAVE_AFTER_MS);
}

// `leaving`: the page is going away; the request outlives it (keepalive).
async function saveNow(leaving = false) {
  clearTimeout(view.saving);
  if (!view.dirty || !view.exercise) return true;
  view.dirty = false;
  saved(_("Saving…"));
  try {
    await call(`/sources/${encodeURIComponent(view.exercise.id)}`,
               {method: "PUT", body: {source: currentSource()}, keepalive: leaving});
    saved(_("Kept on the instructor's machine."));
    return true;
  } catch (failure) {
    view.dirty = true;
    saved(_("Not kept: %(message)s", {message: failure.message}), true);
    return false;
  }
}

async function restoreSkeleton() {
  if (!view.exercise) return;
  if (!confirm(_("Replace your code with the skeleton? What you wrote is lost."))) return;
  showEditor(await skeleton(view.exercise.id));
  view.dirty = true;
  await saveNow();
}

// --- checking ---------------------------------------------------------------------------

async function check() {
  if (!view.exercise) return;
  const button = document.getElementById("check");
  button.disabled = true;
  try {
    await saveNow();
    showResult(_("Sending…"));
    const answer = await call("/submissions", {method: "POST",
                                               body: {exercise: view.exercise.id, source: currentSource()}});
    localStorage.setItem(SUBMISSION_KEY + view.exercise.id, answer.id);
    follow(answer.id);
  } catch (failure) {
    showResult(_("Not sent: %(message)s", {message: failure.message}), "bad");
  } finally {
    button.disabled = false;
  }
}

function stopPolling() {
  clearTimeout(view.polling);
  view.polling = null;
}

// Ask after a submission until it is done: the place in the queue, then each check.
function follow(id, {quietIfGone = false} = {}) {
  stopPolling();
  const exercise = view.exercise;
  const poll = async () => {
    if (view.exercise !== exercise) return;
    let submission;
    try {
      submission = await call(`/submissions/${encodeURIComponent(id)}`);
    } catch (failure) {
      if (failure.status === 404 && quietIfGone) {
        localStorage.removeItem(SUBMISSION_KEY + exercise.id);
        return;
      }
      if (failure.status === 401 || failure.status === 404) {
        showResult(failure.message, "bad");
        return;
      }
      // The machine is busy or restarting: say so, and ask again.
      document.getElementById("result-state").textContent =
        _("No answer yet (%(message)s); asking again.", {message: failure.message});
      view.polling = setTimeout(poll, POLL_MS * 3);
      return;
    }
    if (view.exercise !== exercise) return;
    drawSubmission(submission);
    if (submission.state === "queued" || submission.state === "running") {
      view.polling = setTimeout(poll, POLL_MS);
    }
  };
  poll();
}

function showResult(state, kind) {
  const box = document.getElementById("result");
  box.hidden = false;
  box.dataset.state = kind || "sending";
  document.getElementById("result-state").textContent = state;
  document.getElementById("checks").replaceChildren();
  document.getElementById("verdict").textContent = "";
}

function drawSubmission(submission) {
  const box = document.getElementById("result");
  box.hidden = false;
  box.dataset.state = submission.state;
  const checks = submission.checks || [];
  let state = "";
  if (submission.state === "queued") {
    state = submission.position
      ? _("Waiting: place %(place)s in the queue.", {place: submission.position})
      : _("Waiting in the queue.");
  } else if (submission.state === "running") {
    state = _("Running the checks: %(count)s done so far.", {count: checks.length});
  } else if (submission.state === "failed") {
    state = _("The grading did not finish.");
  } else {
    state = ngettext("%(count)s check ran.", "%(count)s checks ran.", checks.length, {count: checks.length});
  }
  document.getElementById("result-state").textContent = state;
  document.getElementById("checks").replaceChildren(...checks.map(drawCheck));
  const verdict = document.getElementById("verdict");
  verdict.className = "verdict";
  verdict.replaceChildren();
  if (submission.state === "done") {
    const passed = submission.passed === true;
    verdict.classList.add(passed ? "passed" : "failed");
    verdict.append(element("strong", {}, passed ? `✓ ${_("Passed")}` : `✗ ${_("Not yet")}`));
    if (submission.message) verdict.append(" ", String(submission.message));
  } else if (submission.state === "failed") {
    verdict.classList.add("failed");
    verdict.append(element("strong", {}, `✗ ${_("Stopped")}`), " ",
                   String(submission.message || _("interrupted, check again")));
  }
}

// A check as the command line prints it (CheckResult.lines in lockshop/exercises/results.py),
// mark for mark: ✓, ✗, or – for a check whose lesson does not apply to this lock (neither
// passed nor failed); the lesson and the action; what was expected and observed; for a –,
// why it does not apply; for a ✗, the diagnosis when the grader found the cause, the lesson
// to study (the cause first) and the hint.
function drawCheck(check) {
  const applies = check.applies !== false;
  const passed = applies && check.passed === true;
  const failed = applies && !passed;
  const mark = !applies ? "–" : passed ? "✓" : "✗";
  const state = !applies ? "not-applicable" : passed ? "passed" : "failed";
  const said = {"not-applicable": _("does not apply"), passed: _("passed"), failed: _("failed")}[state];
  const line = (label, value) => (value === undefined || value === null || value === "") ? null
    : element("div", {class: "line"}, element("span", {class: "label"}, label), " ", String(value));
  const seconds = typeof check.seconds === "number" ? `  (${check.seconds} s)` : "";
  return element("li", {class: `check ${state}`, "data-lesson": check.lesson || "",
                        "data-mark": mark, "data-cause": check.cause || ""},
    element("div", {class: "head"},
      element("span", {class: "mark", "aria-label": said}, mark),
      " ", element("span", {class: "lesson"}, String(check.lesson || "")),
      " ", element("span", {class: "action"}, String(check.action || ""))),
    line(_("expected"), check.expected),
    line(_("observed"), check.observed === undefined ? undefined : `${check.observed}${seconds}`),
    applies ? null : line(_("does not apply"), check.hint),
    failed && check.cause ? line(_("why"), check.diagnosis) : null,
    failed ? line(_("lesson"), lessonOf(check)) : null,
    failed ? line(_("hint"), check.hint) : null);
}

// The lesson to study, "C12 (A0, A2): what the lesson teaches": the diagnosed cause when
// there is one, else the check's own lesson, as the command line says it.
function lessonOf(check) {
  const lesson = check.cause || check.lesson || "";
  const title = check.cause ? check.cause_title : check.lesson_title;
  const articles = (check.cause ? check.cause_articles : check.articles) || [];
  if (!title) return lesson || null;
  return `${lesson}${articles.length ? ` (${articles.join(", ")})` : ""}: ${title}`;
}

// --- the board ---------------------------------------------------------------------------

async function drawBoard() {
  let board;
  try {
    board = await call("/board", {cache: "no-cache"});
    problem("");
  } catch (failure) {
    problem(_("Could not read the board: %(message)s", {message: failure.message}));
    return;
  }
  const results = board.results || [];
  const exercises = view.exercises.map(e => String(e.id));
  const me = (student() || {}).name;
  fillBoard("board-room", board.students || [], exercises,
            results.filter(r => r.source !== "self-reported"), me);
  const self = results.filter(r => r.source === "self-reported");
  const selfNames = [...new Set(self.map(r => r.name))];
  fillBoard("board-self", selfNames, exercises, self, me);
  document.getElementById("board-self").hidden = self.length === 0;
  document.getElementById("board-none-self").hidden = self.length !== 0;
}

function fillBoard(id, names, exercises, results, me) {
  const table = document.getElementById(id);
  const cell = new Map(results.map(r => [`${r.name}\u0000${r.exercise}`, r]));
  table.tHead.replaceChildren(element("tr", {}, element("th", {}, _("student")),
    ...exercises.map(e => element("th", {class: "exercise"}, e))));
  table.tBodies[0].replaceChildren(...names.map(name => element("tr", {class: name === me ? "me" : null},
    element("th", {scope: "row"}, String(name)),
    ...exercises.map(e => {
      const result = cell.get(`${name}\u0000${e}`);
      if (!result) return element("td", {class: "none"}, "·");
      // The first broken lesson, as the command line names it (the diagnosed cause first).
      return element("td", {class: result.passed ? "passed" : "failed",
                            title: result.broken_lesson ? String(result.broken_lesson) : null},
                     result.passed ? "✓" : `✗ ${result.broken_lesson || ""}`.trim());
    }))));
}

// --- where we are ---------------------------------------------------------------------------

function route() {
  if (!student()) { showJoin(); return; }
  const [where, id] = location.hash.replace(/^#/, "").split("/");
  const board = where === "board";
  document.getElementById("write").hidden = board;
  document.getElementById("board").hidden = !board;
  document.getElementById("tab-write").classList.toggle("current", !board);
  document.getElementById("tab-board").classList.toggle("current", board);
  document.body.dataset.view = board ? "board" : "write";
  clearInterval(view.boardTimer);
  if (board) {
    drawBoard();
    view.boardTimer = setInterval(() => { if (!document.hidden) drawBoard(); }, BOARD_MS);
  } else if (id) {
    openExercise(decodeURIComponent(id)).catch(failure => problem(failure.message));
  }
}

async function start() {
  await i18n.ready;
  document.getElementById("join-form").addEventListener("submit", join);
  document.getElementById("leave").addEventListener("click", () => {
    if (confirm(_("Leave? This browser forgets the key to your name; ask the instructor to free it to join again.")))
      forget("");
  });
  document.getElementById("check").addEventListener("click", check);
  document.getElementById("restore").addEventListener("click", restoreSkeleton);
  window.addEventListener("hashchange", route);
  // The language switch reloads the page: in the other language, on the same exercise.
  for (const link of document.querySelectorAll(".languages a")) {
    link.addEventListener("click", () => { link.hash = location.hash; });
  }
  // A closing tab keeps the last keystrokes too.
  window.addEventListener("pagehide", () => { if (view.dirty) saveNow(true); });
  if (!student()) { showJoin(); return; }
  try {
    await enter();
  } catch (failure) {
    if (student()) problem(failure.message);
  }
}

start();
