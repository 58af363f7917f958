// The live tree: snapshots over SSE (api/stream), drawn as a collapsible tree, and the
// actions (cancel a request or a task, close a session) behind a confirmation.
// Everything from the server is put in the page as text, never as markup.
//
// The page holds still: each snapshot patches the tree by key (a row, its buttons and
// its text stay the same elements while what they show changes), and no snapshot is
// drawn while a pointer is pressed or text in the page is selected; the last one waits
// and is drawn when the press or the selection ends. So a button under a person's
// pointer is the button they release on, however long they hold it.
"use strict";

const csrf = document.querySelector('meta[name="csrf"]').content;
const tree = document.getElementById("tree");
const statusLine = document.getElementById("status");
const filters = document.getElementById("filters");
const dialog = document.getElementById("confirm");
// Nodes the user folded, by key: kept across redraws.
const toggled = new Set();
let source = null;
let lastTree = null;
// A snapshot that came while the page was held, drawn when it is let go.
let waiting = null;
let pressed = false;
// The row the user picked (by key): kept in the address, shown marked, scrolled to once.
let picked = null;
let scrolledTo = null;
// The request whose story is open (see console.js): kept in the address too.
let storyLink = null;

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

function setText(node, text) {
  const value = text === undefined || text === null ? "" : String(text);
  if (node.textContent !== value) node.textContent = value;
}

function age(seconds) {
  if (seconds === null || seconds === undefined) return "";
  if (seconds < 1) return `${Math.round(seconds * 1000)} ms`;
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m ${String(Math.floor(seconds % 60)).padStart(2, "0")}s`;
  const hours = Math.floor(minutes / 60);
  return `${hours}h ${String(minutes % 60).padStart(2, "0")}m`;
}

function shorten(id, length = 12) {
  const text = String(id);
  return text.length > length + 2 ? text.slice(0, length) + "…" : text;
}

function slowThreshold() {
  const value = Number(filters.elements.slow_ms.value);
  return value > 0 ? value / 1000 : 5;
}

function isFolded(key) {
  return toggled.has(key);
}

// --- holding still -------------------------------------------------------------------

// Text selected in the page, not in the filters (typing there must not stop the page).
function selecting() {
  const selection = document.getSelection();
  if (!selection || selection.isCollapsed || selection.rangeCount === 0) return false;
  return !filters.contains(selection.anchorNode);
}

// A press is a press for a few seconds at most: a release the page never heard of (let
// go outside the window) must not stop it for good.
const LONGEST_PRESS = 5000;
function held() {
  return (pressed !== false && Date.now() - pressed < LONGEST_PRESS) || selecting();
}

function show(data) {
  if (held()) {
    waiting = data;
    statusLine.className = "status paused";
    statusLine.textContent = "held while you click or select";
    return;
  }
  waiting = null;
  statusLine.className = "status live";
  statusLine.textContent = `live · ${new Date().toLocaleTimeString()}`;
  render(data);
}

function letGo() {
  // After the click this release makes has been dispatched, not before it.
  setTimeout(() => {
    if (waiting && !held()) show(waiting);
  }, 0);
}

document.addEventListener("pointerdown", () => { pressed = Date.now(); }, true);
document.addEventListener("pointerup", () => { pressed = false; letGo(); }, true);
document.addEventListener("pointercancel", () => { pressed = false; letGo(); }, true);
document.addEventListener("selectionchange", () => { if (!selecting()) letGo(); });

// --- the tree, patched by key ----------------------------------------------------------
//
// A spec says what one node shows: {key, kind, title, badge, meta, seconds, slow,
// buttons, children, attrs, section, tip, id} or {key, more}; an id's title is the
// whole id, cut short on screen and selected whole by one click. patchList makes a list's items
// match the specs, reusing the item of each key.

function patchList(list, specs) {
  const existing = new Map();
  for (const child of list.children) existing.set(child.dataset.key, child);
  specs.forEach((spec, index) => {
    let item = existing.get(spec.key);
    existing.delete(spec.key);
    if (!item) item = spec.more === undefined ? newItem(spec.key) : el("li", "more");
    item.dataset.key = spec.key;
    if (spec.more !== undefined) setText(item, spec.more);
    else patchItem(item, spec);
    if (list.children[index] !== item) list.insertBefore(item, list.children[index] || null);
  });
  for (const gone of existing.values()) gone.remove();
}

function newItem(key) {
  const item = el("li");
  const row = el("div", "node");
  const toggle = el("span", "toggle");
  toggle.addEventListener("click", () => {
    if (!toggle.classList.contains("can-fold")) return;
    const own = item.dataset.key;
    if (toggled.has(own)) toggled.delete(own);
    else toggled.add(own);
    if (lastTree) render(lastTree);
  });
  const title = el("span", "title");
  // A request's title opens its story (what it opens is read when it is pressed).
  const openTitle = (event) => {
    if (!title.open) return;
    event.stopPropagation();
    title.open();
  };
  title.addEventListener("click", openTitle);
  title.addEventListener("keydown", (event) => { if (event.key === "Enter") openTitle(event); });
  row.append(
    toggle, el("span", "kind"), title, el("span", "badge"),
    el("span", "metas"), el("span", "spacer"), el("span", "age"), el("span", "buttons"),
  );
  row.addEventListener("click", (event) => {
    if (event.target.closest("button, .toggle, .title.link")) return;
    picked = picked === item.dataset.key ? null : item.dataset.key;
    saveLink();
    if (lastTree) render(lastTree);
  });
  item.dataset.key = key;
  item.append(row);
  return item;
}

function patchItem(item, spec) {
  const row = item.firstChild;
  const [toggle, kind, title, badge, metas, , ageBox, buttons] = row.children;
  const hasChildren = Boolean(spec.children && spec.children.length);
  const folded = hasChildren && isFolded(spec.key);
  row.className = "node" + (spec.section ? " section" : "") + (spec.slow ? " slow" : "") +
    (spec.key === picked ? " picked" : "");
  if (spec.key === picked && scrolledTo !== picked) {
    scrolledTo = picked;
    requestAnimationFrame(() => row.scrollIntoView({ block: "center" }));
  }
  for (const [name, value] of Object.entries(spec.attrs || {})) {
    if (row.getAttribute(name) !== value) row.setAttribute(name, value);
  }
  if (row.title !== (spec.tip || "")) row.title = spec.tip || "";
  toggle.classList.toggle("can-fold", hasChildren);
  setText(toggle, hasChildren ? (folded ? "▸" : "▾") : "·");
  if (hasChildren) {
    toggle.setAttribute("role", "button");
    toggle.setAttribute("aria-label", "fold or unfold");
  }
  setText(kind, spec.kind);
  title.className = "title" + (spec.id ? " id" : "") + (spec.open ? " link" : "");
  title.open = spec.open || null;
  if (spec.open) {
    title.setAttribute("role", "link");
    title.tabIndex = 0;
    title.title = "Open its story";
  } else if (title.hasAttribute("role")) {
    title.removeAttribute("role");
    title.removeAttribute("tabindex");
    title.removeAttribute("title");
  }
  setText(title, spec.title);
  badge.hidden = !spec.badge;
  badge.className = spec.badge ? `badge ${spec.badge}` : "badge";
  setText(badge, spec.badge ? spec.badge.replace("_", " ") : "");
  patchMeta(metas, spec.meta || []);
  setText(ageBox, spec.seconds === undefined ? "" : age(spec.seconds));
  patchButtons(buttons, spec.buttons || []);
  let list = item.children[1];
  if (hasChildren && !folded) {
    if (!list) item.append((list = el("ul")));
    patchList(list, spec.children);
  } else if (list) {
    list.remove();
  }
}

// Meta parts are text or a progress value ({progress, total}); each keeps its element.
function patchMeta(box, parts) {
  const wanted = parts.filter((part) => part !== null && part !== undefined && part !== "");
  while (box.children.length > wanted.length) box.lastChild.remove();
  wanted.forEach((part, index) => {
    const kind = typeof part === "object" ? "progress-wrap" : "meta";
    let child = box.children[index];
    if (!child || child.className !== kind) {
      const made = kind === "meta" ? el("span", "meta") : progressBar();
      if (child) child.replaceWith(made);
      else box.append(made);
      child = made;
    }
    if (kind === "meta") setText(child, part);
    else patchProgress(child, part);
  });
}

function progressBar() {
  const wrap = el("span", "progress-wrap");
  const bar = el("span", "progress");
  bar.append(el("i"));
  wrap.append(bar, el("span", "progress-text"));
  return wrap;
}

function patchProgress(wrap, { progress, total }) {
  const [bar, text] = wrap.children;
  const fill = bar.firstChild;
  let fraction = null;
  if (progress !== null && progress !== undefined) {
    if (total) fraction = Math.min(1, progress / total);
    else if (progress <= 1) fraction = progress;
  }
  bar.classList.toggle("unknown", fraction === null);
  fill.style.width = fraction === null ? "" : `${Math.max(2, fraction * 100)}%`;
  let shown = "";
  if (progress !== null && progress !== undefined) {
    if (total) shown = `${progress} of ${total}`;
    else shown = progress <= 1 ? `${Math.round(progress * 100)}%` : `${progress}`;
  }
  setText(text, shown);
  text.hidden = !shown;
  if (progress === null || progress === undefined) text.removeAttribute("data-progress");
  else text.setAttribute("data-progress", String(progress));
}

// A button keeps its element while its label stays; what it asks and does is read when
// it is pressed, so a snapshot drawn meanwhile changes nothing under the pointer.
function patchButtons(box, specs) {
  while (box.children.length > specs.length) box.lastChild.remove();
  specs.forEach((spec, index) => {
    let button = box.children[index];
    if (!button || button.textContent !== spec.label) {
      const made = el("button", "danger", spec.label);
      made.type = "button";
      made.addEventListener("click", () => {
        const { title, text, action, body } = made.action;
        confirmThen(title, text, () => act(action, body));
      });
      if (button) button.replaceWith(made);
      else box.append(made);
      button = made;
    }
    button.action = spec;
  });
}

function button(label, title, text, action, body) {
  return { label, title, text, action, body };
}

// --- what each node shows ----------------------------------------------------------------

function progressParts(item) {
  const parts = [];
  if (item.progress !== null && item.progress !== undefined) {
    parts.push({ progress: item.progress, total: item.total ?? null });
  }
  if (item.message) parts.push(item.message);
  return parts;
}

function requestNode(session, request) {
  const threshold = slowThreshold();
  const label = request.name ? `${request.method} ${request.name}` : request.method;
  const meta = [`#${request.id}`, ...progressParts(request)];
  if (request.deadline_in !== null) meta.push(`deadline in ${age(request.deadline_in)}`);
  const client = session.client || "an unnamed client";
  const buttons = request.cancelled
    ? []
    : [button("Cancel", "Cancel this request?",
        `${label} (request ${request.id} of ${client}, session ${shorten(session.id)}) ` +
        "stops now; its client is answered with an error.",
        "cancel-request", { session: session.id, request: request.id })];
  return {
    key: `request:${session.id}:${request.id}`,
    kind: "request",
    title: label,
    badge: request.cancelled ? "cancelled" : "running",
    meta,
    seconds: request.age,
    slow: request.age >= threshold,
    buttons,
    attrs: { "data-request": String(request.id), "data-session": session.id },
    open: () => openStory({ session: session.id, request: request.id }),
  };
}

function taskNode(task, session) {
  const meta = [];
  if (task.ttl_left !== null) meta.push(`kept ${age(task.ttl_left)} more`);
  if (task.message) meta.push(task.message);
  if (task.principal) meta.push(task.principal);
  const terminal = ["completed", "failed", "cancelled"].includes(task.status);
  const where = session
    ? ` of ${session.client || "an unnamed client"}, session ${shorten(session.id)}`
    : task.principal ? ` of ${task.principal}` : "";
  const buttons = terminal
    ? []
    : [button("Cancel", "Cancel this task?",
        `Task ${task.id}${where} is cancelled as tasks/cancel would.`,
        "cancel-task", { task: task.id })];
  return {
    key: `task:${task.id}`,
    kind: "task", title: task.id, id: true, badge: task.status, meta,
    seconds: task.age, buttons, attrs: { "data-task": task.id }, tip: task.id,
    open: () => openStory({ task: task.id }),
  };
}

// A stream the client never opened (the GET stream of a client that never asked for it)
// is not shown at all; the others only when asked for.
function streamOpened(stream) {
  return stream.attached || stream.pending || stream.buffered || stream.last_event_id;
}

function streamNode(sessionId, stream) {
  const meta = [stream.attached ? "connected" : "waiting for its client to come back"];
  if (stream.pending) meta.push(`${stream.pending} ${stream.pending === 1 ? "answer" : "answers"} to come`);
  if (stream.buffered) meta.push(`${stream.buffered} queued to send`);
  return {
    key: `stream:${sessionId}:${stream.id}`,
    kind: "stream",
    title: stream.kind === "GET" ? "server messages (GET)" : "a response (POST)",
    meta,
    tip: stream.last_event_id ? `last event sent: ${stream.last_event_id}` : "",
  };
}

function sessionNode(session) {
  const children = session.requests.map((r) => requestNode(session, r));
  if (session.more.requests) {
    children.push({ key: `more:requests:${session.id}`, more: `… and ${session.more.requests} more requests` });
  }
  children.push(...session.tasks.map((t) => taskNode(t, session)));
  if (session.more.tasks) {
    children.push({ key: `more:tasks:${session.id}`, more: `… and ${session.more.tasks} more tasks` });
  }
  if (filters.elements.streams.checked) {
    children.push(...session.streams.filter(streamOpened).map((s) => streamNode(session.id, s)));
    if (session.more.streams) {
      children.push({ key: `more:streams:${session.id}`, more: `… and ${session.more.streams} more streams` });
    }
  }
  const meta = [session.transport, session.client || "unnamed client"];
  if (session.revision) meta.push(session.revision);
  if (session.principal) meta.push(session.principal);
  if (session.requests.length) {
    meta.push(`${session.requests.length} running`);
  } else if (session.idle !== null) {
    meta.push(`idle for ${age(session.idle)}`);
  }
  // Only HTTP sessions can be closed from here (they have an idle time).
  const buttons = session.idle === null || session.state === "closing"
    ? []
    : [button("Close", "Close this session?",
        `Session ${shorten(session.id)} of ${session.client || "an unnamed client"}: its requests ` +
        "get the grace period, then the session is gone; the client must start a new one.",
        "close-session", { session: session.id })];
  return {
    key: `session:${session.id}`,
    kind: "session", title: session.id, id: true, badge: session.state, meta,
    seconds: session.age, children, buttons, attrs: { "data-session-id": session.id },
    tip: session.id,
  };
}

function statelessNode(flight, listen) {
  const label = flight.name ? `${flight.method} ${flight.name}` : flight.method;
  const meta = [`#${flight.id}`];
  if (!listen) meta.push(...progressParts(flight));
  if (flight.principal) meta.push(flight.principal);
  const who = flight.principal ? ` of ${flight.principal}` : "";
  const buttons = flight.cancelled
    ? []
    : [button(listen ? "End" : "Cancel", listen ? "End this listen stream?" : "Cancel this request?",
        `${label} (request ${flight.id}${who}, no session) stops now; its client is answered with an error.`,
        "cancel-stateless", { key: flight.key })];
  return {
    key: `stateless:${flight.key}`,
    kind: listen ? "listen" : "request", title: label,
    badge: flight.cancelled ? "cancelled" : "running", meta, seconds: flight.age,
    slow: !listen && flight.age >= slowThreshold(), buttons,
    attrs: { "data-request": String(flight.id), "data-stateless": String(flight.key) },
    open: listen ? null : () => openStory({ key: flight.key, request: flight.id }),
  };
}

function section(key, title, children, meta) {
  return { key, kind: "", title, meta, children, section: true };
}

// The cards: a feature nobody uses (no listen streams, no worker processes, no tasks)
// has no card.
function cards(data) {
  const counts = data.counts;
  const workers = data.workers.busy + data.workers.idle;
  return [
    ["sessions", counts.sessions, true],
    ["awake", counts.awake, true],
    ["requests", counts.requests + counts.stateless, true],
    ["tasks running", counts.tasks_running, counts.tasks_running || counts.tasks_stored],
    ["streams", counts.streams, filters.elements.streams.checked],
    ["connections", counts.connections, true],
    ["listens", counts.listens, counts.listens],
    ["workers busy", `${data.workers.busy}/${workers}`, workers || data.workers.started],
  ].filter(([, , used]) => used);
}

function renderCounts(data) {
  const box = document.getElementById("counts");
  const existing = new Map();
  for (const card of box.children) existing.set(card.dataset.key, card);
  cards(data).forEach(([label, value], index) => {
    let card = existing.get(label);
    existing.delete(label);
    if (!card) {
      card = el("div", "count");
      card.dataset.key = label;
      card.append(el("b"), el("span", null, label));
    }
    setText(card.firstChild, value);
    if (box.children[index] !== card) box.insertBefore(card, box.children[index] || null);
  });
  for (const gone of existing.values()) gone.remove();
}

// Find: a part of an id, a client's name or a principal, in what the tree lists.
function finding() {
  return filters.elements.find.value.trim().toLowerCase();
}

function found(wanted, ...values) {
  return values.some((value) => value !== null && value !== undefined &&
    String(value).toLowerCase().includes(wanted));
}

function sessionFound(wanted, session) {
  return !wanted || found(wanted, session.id, session.client, session.principal) ||
    session.requests.some((r) => found(wanted, r.id)) ||
    session.tasks.some((t) => found(wanted, t.id));
}

// What /readyz answers: ready, starting, draining, or not ready and why (the store's
// check). A server with no HTTP listener has no readiness to show.
const READINESS = { ready: "ready", starting: "starting", draining: "draining", unavailable: "not ready" };
function renderReadiness(readiness) {
  const badge = document.getElementById("readiness");
  badge.hidden = !readiness;
  if (!readiness) return;
  const word = READINESS[readiness.state] || readiness.state;
  badge.className = `readiness ${readiness.state}`;
  setText(badge, readiness.why ? `${word}: ${readiness.why}` : word);
}

function render(data) {
  lastTree = data;
  const wanted = finding();
  renderReadiness(data.readiness);
  setText(document.getElementById("replica"),
    `${data.replica.id} · pid ${data.replica.pid} · up ${age(data.replica.uptime)}`);
  renderCounts(data);
  const top = [];
  const plugins = data.plugins.map((plugin) => ({
    key: `plugin:${plugin.name}`,
    kind: "server", title: plugin.prefix ? `${plugin.name} (${plugin.prefix}_)` : plugin.name,
    badge: plugin.state,
    meta: [
      plugin.in_flight !== null ? `${plugin.in_flight} in flight` : null,
      plugin.waiting ? `${plugin.waiting} waiting` : null,
      plugin.total !== null ? `${plugin.total} served` : null,
      plugin.max_concurrent ? `limit ${plugin.max_concurrent}` : null,
      plugin.error,
    ],
  }));
  top.push(section("plugins", "Servers", plugins));
  const sessions = data.sessions.items.filter((s) => sessionFound(wanted, s)).map(sessionNode);
  const hidden = data.sessions.total - data.sessions.shown;
  if (hidden > 0) {
    sessions.push({
      key: "more:sessions",
      more: `… and ${hidden} more sessions (${data.sessions.hidden_requests} requests in them)`,
    });
  }
  top.push(section("sessions", "Sessions", sessions, [`${data.sessions.total} listed of ${data.counts.sessions}`]));
  const flightFound = (f) => !wanted || found(wanted, f.id, f.principal);
  const stateless = [
    ...data.stateless.requests.filter(flightFound).map((f) => statelessNode(f, false)),
    ...data.stateless.listens.filter(flightFound).map((f) => statelessNode(f, true)),
  ];
  if (data.stateless.more) stateless.push({ key: "more:stateless", more: `… and ${data.stateless.more} more requests` });
  if (stateless.length) top.push(section("stateless", "Stateless requests (2026-07-28)", stateless));
  const tasks = data.tasks.items
    .filter((t) => !wanted || found(wanted, t.id, t.principal))
    .map((t) => taskNode(t, null));
  if (data.tasks.more) tasks.push({ key: "more:tasks", more: `… and ${data.tasks.more} more tasks` });
  if (tasks.length) top.push(section("tasks", "Tasks (tasks extension)", tasks));
  if (data.workers.started) {
    top.push(section("workers", "Worker processes", [], [
      `${data.workers.pools} pools`, `${data.workers.busy} busy`, `${data.workers.idle} idle`,
      `${data.workers.started} started`, `${data.workers.killed} killed`,
    ]));
  }
  patchList(tree, top);
  const filtered = ["tool", "client", "slow_ms", "find"].some((name) => filters.elements[name].value);
  document.getElementById("empty").hidden = !(filtered && sessions.length === 0 && stateless.length === 0);
}

// The replicas sharing a store: asked for beside the tree, at most every 2 seconds,
// since each replica's summary is renewed about that often.
let replicasAsked = 0;
async function refreshReplicas() {
  const now = Date.now();
  if (now - replicasAsked < 2000) return;
  replicasAsked = now;
  const response = await fetch("api/replicas", { credentials: "same-origin" }).catch(() => null);
  if (!response || !response.ok) return;
  const data = await response.json().catch(() => null);
  if (data) renderReplicas(data);
}

function renderReplicas(data) {
  const note = document.getElementById("replicas-note");
  const table = document.getElementById("replicas-table");
  // One process has no replicas to list: the section is not shown at all.
  document.getElementById("replicas").hidden = !data.shared;
  if (!data.shared) {
    note.textContent = "one process (no shared store)";
    table.hidden = true;
    return;
  }
  const items = Array.isArray(data.replicas) ? data.replicas : [];
  note.textContent = data.unavailable
    ? "the shared store cannot be reached"
    : `${items.length} sharing the store`;
  table.hidden = items.length === 0;
  table.tBodies[0].replaceChildren(...items.map((item) => {
    const counts = item.counts || {};
    const row = el("tr", item.replica === data.self ? "self" : null);
    row.append(
      el("td", null, item.replica === data.self ? `${item.replica} (this one)` : item.replica),
      el("td", null, `${item.host} / ${item.pid}`),
      el("td", null, counts.sessions),
      el("td", null, (counts.requests || 0) + (counts.stateless || 0)),
      el("td", null, `${counts.tasks_running || 0} running, ${counts.tasks_stored || 0} stored`),
      el("td", null, age(item.age)),
    );
    return row;
  }));
}

// What ended lately and what operators did: asked for beside the tree, at most every
// 2 seconds, and redrawn only when it changed.
let historyAsked = 0;
let historyShown = "";
async function refreshHistory(force) {
  const now = Date.now();
  if (!force && now - historyAsked < 2000) return;
  historyAsked = now;
  const params = new URLSearchParams({ limit: "100" });
  for (const name of ["tool", "client", "find", "outcome"]) {
    const value = filters.elements[name].value.trim();
    if (value) params.set(name, value);
  }
  const response = await fetch(`api/history?${params}`, { credentials: "same-origin" }).catch(() => null);
  if (!response || !response.ok) return;
  const text = await response.text().catch(() => "");
  if (text === historyShown || held()) return;
  historyShown = text;
  renderHistory(JSON.parse(text));
}

function clock(at) {
  return new Date(at * 1000).toLocaleTimeString();
}

function cell(text, className) {
  return el("td", className, text === null || text === undefined ? "" : text);
}

function outcomeText(item) {
  if (item.outcome === "error") return item.error === "tool" ? "failed (tool error)" : "failed";
  return item.outcome;
}

function whyText(item) {
  if (item.cancelled_by) return `cancelled by ${item.cancelled_by}`;
  return item.detail || "";
}

function renderHistory(data) {
  const note = document.getElementById("history-note");
  note.textContent = data.kept
    ? `the last ${data.items.length} that match, of up to ${data.size} kept`
    : "not kept in this process";
  // Replicas sharing a store: each row names its replica; a store out of reach leaves
  // this replica's own, said so.
  const shared = data.shared;
  if (shared) {
    note.textContent += shared.unavailable
      ? "; this replica's only: the shared history is unavailable"
      : "; of every replica";
  }
  document.getElementById("history-table").tBodies[0].replaceChildren(...data.items.map((item) => {
    const row = el("tr");
    row.dataset.request = String(item.request ?? "");
    row.append(
      cell(clock(item.at)),
      cell(outcomeText(item), `outcome-${item.outcome.replace(" ", "-")}`),
      cell(item.name ? `${item.method} ${item.name}` : item.method),
      cell(item.request, "id"),
      cell(item.session, "id"),
      cell(shared && item.replica !== shared.self ? `${item.client ?? ""} on ${item.replica}` : item.client),
      cell(item.principal),
      cell(item.seconds < 0.01 ? `${(item.seconds * 1000).toFixed(2)} ms` : age(item.seconds)),
      cell(whyText(item)),
      // Another replica's request: the story it shared through the store.
      storyCell(item, shared && item.replica !== shared.self ? item.replica : null),
    );
    return row;
  }));
  document.getElementById("audit-table").tBodies[0].replaceChildren(...(data.audit || []).map((entry) => {
    const row = el("tr");
    const on = Object.entries(entry.target || {}).map(([k, v]) => `${k} ${v}`).join(", ");
    row.append(
      cell(clock(entry.at)), cell(entry.action), cell(on, "id"), cell(entry.who),
      cell(shared && entry.replica !== shared.self ? `${entry.from} on ${entry.replica}` : entry.from),
      cell(entry.result),
    );
    return row;
  }));
}

// The filters live in the address too, so that a link reopens the same view.
const linked = ["tool", "client", "find", "slow_ms", "outcome", "over"];
function saveLink() {
  const params = new URLSearchParams();
  for (const name of linked) {
    const value = filters.elements[name].value.trim();
    if (value) params.set(name, value);
  }
  if (filters.elements.streams.checked) params.set("streams", "1");
  if (!filters.elements.live.checked) params.set("live", "0");
  if (picked) params.set("pick", picked);
  if (storyLink) params.set("story", storyLink);
  const q = params.toString();
  window.history.replaceState(null, "", q ? `?${q}` : window.location.pathname);
}

function loadLink() {
  const params = new URLSearchParams(window.location.search);
  for (const name of linked) {
    const value = params.get(name);
    if (value !== null) filters.elements[name].value = value.slice(0, 200);
  }
  filters.elements.streams.checked = params.get("streams") === "1";
  filters.elements.live.checked = params.get("live") !== "0";
  picked = params.get("pick");
  storyLink = (params.get("story") || "").slice(0, 600) || null;
}

function query() {
  const params = new URLSearchParams();
  for (const name of ["tool", "client", "slow_ms"]) {
    const value = filters.elements[name].value.trim();
    if (value) params.set(name, value);
  }
  return params.toString();
}

function connect() {
  if (source) source.close();
  source = null;
  if (!filters.elements.live.checked) {
    statusLine.className = "status paused";
    statusLine.textContent = "paused";
    return;
  }
  const q = query();
  source = new EventSource(`api/stream?interval=0.5${q ? "&" + q : ""}`);
  source.addEventListener("tree", (event) => {
    show(JSON.parse(event.data));
    if (!held()) {
      refreshReplicas();
      refreshHistory(false);
      refreshRates(false);
    }
  });
  source.addEventListener("error", async () => {
    statusLine.className = "status down";
    statusLine.textContent = "reconnecting…";
    const probe = await fetch("api/tree", { credentials: "same-origin" }).catch(() => null);
    if (probe && probe.status === 401) window.location.href = "login";
  });
}

function confirmThen(title, text, then) {
  document.getElementById("confirm-title").textContent = title;
  document.getElementById("confirm-text").textContent = text;
  dialog.returnValue = "";
  dialog.onclose = () => { if (dialog.returnValue === "ok") then(); };
  dialog.showModal();
}

function toast(text, bad) {
  const box = document.getElementById("toast");
  box.textContent = text;
  box.className = bad ? "toast bad" : "toast";
  box.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { box.hidden = true; }, 4000);
}

async function act(action, body) {
  const response = await fetch(`api/actions/${action}`, {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json", "X-Admin-CSRF": csrf },
    body: JSON.stringify(body),
  }).catch(() => null);
  if (!response) return toast("The server did not answer.", true);
  const answer = await response.json().catch(() => ({}));
  if (response.ok) toast(`Done: ${action.replace("-", " ")}.`, false);
  else toast(answer.error || "Nothing to do: it has already ended.", true);
}

let typing = null;
filters.addEventListener("input", (event) => {
  saveLink();
  if (event.target.name === "streams") {
    if (lastTree) render(lastTree);
    return;
  }
  if (event.target.name === "find") {
    if (lastTree) render(lastTree);
    refreshHistory(true);
    return;
  }
  clearTimeout(typing);
  typing = setTimeout(() => {
    connect();
    refreshHistory(true);
  }, 300);
});
filters.addEventListener("submit", (event) => event.preventDefault());
document.getElementById("expand").addEventListener("click", () => {
  toggled.clear();
  if (lastTree) render(lastTree);
});
document.getElementById("collapse").addEventListener("click", () => {
  for (const session of lastTree ? lastTree.sessions.items : []) toggled.add(`session:${session.id}`);
  toggled.add("plugins");
  if (lastTree) render(lastTree);
});
filters.elements.outcome.addEventListener("input", () => {
  saveLink();
  refreshHistory(true);
});
// Started once every script of the page has run (console.js adds the rates and the
// request's story).
document.addEventListener("DOMContentLoaded", () => {
  loadLink();
  connect();
  refreshReplicas();
  refreshHistory(true);
  refreshRates(true);
  if (storyLink) openStoryLink(storyLink);
});
