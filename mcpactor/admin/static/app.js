// The live tree: snapshots over SSE (api/stream), drawn as a collapsible tree, and the
// actions (cancel a request or a task, close a session) behind a confirmation.
// Everything from the server is put in the page as text, never as markup.
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

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
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

function slowThreshold() {
  const value = Number(filters.elements.slow_ms.value);
  return value > 0 ? value / 1000 : 5;
}

function isFolded(key) {
  return toggled.has(key);
}

// One tree node: a row (toggle, kind, title, badges, meta, age, buttons) and children.
function node(key, { kind, title, badge, meta, seconds, slow, buttons, children, attrs }) {
  const item = el("li");
  const row = el("div", "node");
  if (attrs) for (const [name, value] of Object.entries(attrs)) row.setAttribute(name, value);
  const hasChildren = children && children.length > 0;
  const toggle = el("span", "toggle", hasChildren ? (isFolded(key) ? "▸" : "▾") : "·");
  if (hasChildren) {
    toggle.setAttribute("role", "button");
    toggle.setAttribute("aria-label", "fold or unfold");
    toggle.addEventListener("click", () => {
      if (toggled.has(key)) toggled.delete(key);
      else toggled.add(key);
      if (lastTree) render(lastTree);
    });
  }
  row.append(toggle, el("span", "kind", kind), el("span", "title", title));
  if (badge) row.append(el("span", `badge ${badge}`, badge.replace("_", " ")));
  for (const part of meta || []) {
    if (part instanceof Node) row.append(part);
    else if (part) row.append(el("span", "meta", part));
  }
  row.append(el("span", "spacer"));
  if (seconds !== undefined) row.append(el("span", "age", age(seconds)));
  if (slow) row.classList.add("slow");
  for (const button of buttons || []) row.append(button);
  item.append(row);
  if (hasChildren && !isFolded(key)) {
    const list = el("ul");
    list.append(...children);
    item.append(list);
  }
  return item;
}

function section(key, title, children, meta) {
  const item = node(key, { kind: "", title, meta, children });
  item.firstChild.classList.add("section");
  return item;
}

function more(count, what) {
  const item = el("li", "more", `… and ${count} more ${what}`);
  return item;
}

function progressBar(progress) {
  const wrap = el("span", "progress-wrap");
  const bar = el("span", "progress");
  const fill = el("i");
  bar.append(fill);
  if (progress === null || progress === undefined) {
    bar.classList.add("unknown");
    wrap.append(bar);
    return wrap;
  }
  if (progress <= 1) fill.style.width = `${Math.max(2, progress * 100)}%`;
  else bar.classList.add("unknown");
  const text = el("span", "progress-text", progress <= 1 ? `${Math.round(progress * 100)}%` : progress);
  text.setAttribute("data-progress", String(progress));
  wrap.append(bar, text);
  return wrap;
}

function actionButton(label, title, text, action, body) {
  const button = el("button", "danger", label);
  button.type = "button";
  button.addEventListener("click", () => confirmThen(title, text, () => act(action, body)));
  return button;
}

function requestNode(sessionId, request) {
  const threshold = slowThreshold();
  const label = request.name ? `${request.method} ${request.name}` : request.method;
  const meta = [`#${request.id}`, progressBar(request.progress)];
  if (request.deadline_in !== null) meta.push(`deadline in ${age(request.deadline_in)}`);
  const buttons = request.cancelled
    ? []
    : [actionButton("Cancel", "Cancel this request?",
        `${label} (request ${request.id}) stops now; its client is answered with an error.`,
        "cancel-request", { session: sessionId, request: request.id })];
  return node(`request:${sessionId}:${request.id}`, {
    kind: "request",
    title: label,
    badge: request.cancelled ? "cancelled" : "running",
    meta,
    seconds: request.age,
    slow: request.age >= threshold,
    buttons,
    attrs: { "data-request": String(request.id), "data-session": sessionId },
  });
}

function taskNode(task) {
  const meta = [];
  if (task.ttl_left !== null) meta.push(`ttl ${age(task.ttl_left)} left`);
  if (task.message) meta.push(task.message);
  if (task.principal) meta.push(task.principal);
  const terminal = ["completed", "failed", "cancelled"].includes(task.status);
  const buttons = terminal
    ? []
    : [actionButton("Cancel", "Cancel this task?",
        `Task ${task.id} is cancelled as tasks/cancel would.`, "cancel-task", { task: task.id })];
  return node(`task:${task.id}`, {
    kind: "task", title: task.id.slice(0, 12) + "…", badge: task.status, meta,
    seconds: task.age, buttons, attrs: { "data-task": task.id },
  });
}

function streamNode(sessionId, stream) {
  const meta = [
    stream.attached ? "attached" : "detached",
    `${stream.pending} owed`,
    `${stream.buffered} buffered`,
  ];
  if (stream.last_event_id) meta.push(`last event ${stream.last_event_id}`);
  return node(`stream:${sessionId}:${stream.id}`, {
    kind: "stream", title: `${stream.kind} ${stream.id}`, meta,
  });
}

function sessionNode(session) {
  const children = session.requests.map((r) => requestNode(session.id, r));
  if (session.more.requests) children.push(more(session.more.requests, "requests"));
  children.push(...session.tasks.map(taskNode));
  if (session.more.tasks) children.push(more(session.more.tasks, "tasks"));
  children.push(...session.streams.map((s) => streamNode(session.id, s)));
  if (session.more.streams) children.push(more(session.more.streams, "streams"));
  const meta = [session.transport, session.client || "unnamed client"];
  if (session.revision) meta.push(session.revision);
  if (session.principal) meta.push(session.principal);
  if (session.idle !== null) meta.push(`idle ${age(session.idle)}`);
  // Only HTTP sessions can be closed from here (they have an idle time).
  const buttons = session.idle === null || session.state === "closing"
    ? []
    : [actionButton("Close", "Close this session?",
        "Its requests get the grace period, then the session is gone; the client must start a new one.",
        "close-session", { session: session.id })];
  const shortId = session.id.length > 14 ? session.id.slice(0, 12) + "…" : session.id;
  return node(`session:${session.id}`, {
    kind: "session", title: shortId, badge: session.state, meta,
    seconds: session.age, children, buttons, attrs: { "data-session-id": session.id },
  });
}

function statelessNode(flight, listen) {
  const label = flight.name ? `${flight.method} ${flight.name}` : flight.method;
  const meta = [`#${flight.id}`];
  if (!listen) meta.push(progressBar(flight.progress));
  if (flight.principal) meta.push(flight.principal);
  const buttons = flight.cancelled
    ? []
    : [actionButton(listen ? "End" : "Cancel", listen ? "End this listen stream?" : "Cancel this request?",
        `${label} stops now; its client is answered with an error.`,
        "cancel-stateless", { key: flight.key })];
  return node(`stateless:${flight.key}`, {
    kind: listen ? "listen" : "request", title: label,
    badge: flight.cancelled ? "cancelled" : "running", meta, seconds: flight.age,
    slow: !listen && flight.age >= slowThreshold(), buttons,
    attrs: { "data-request": String(flight.id), "data-stateless": String(flight.key) },
  });
}

function render(data) {
  lastTree = data;
  document.getElementById("replica").textContent =
    `${data.replica.id} · pid ${data.replica.pid} · up ${age(data.replica.uptime)}`;
  const counts = document.getElementById("counts");
  counts.replaceChildren(...[
    ["sessions", data.counts.sessions], ["awake", data.counts.awake],
    ["requests", data.counts.requests + data.counts.stateless],
    ["tasks running", data.counts.tasks_running], ["streams", data.counts.streams],
    ["connections", data.counts.connections], ["listens", data.counts.listens],
    ["workers busy", `${data.workers.busy}/${data.workers.busy + data.workers.idle}`],
  ].map(([label, value]) => {
    const box = el("div", "count");
    box.append(el("b", null, value), el("span", null, label));
    return box;
  }));

  const top = [];
  top.push(section("plugins", "Servers", data.plugins.map((plugin) => node(`plugin:${plugin.name}`, {
    kind: "server", title: plugin.prefix ? `${plugin.name} (${plugin.prefix}_)` : plugin.name,
    badge: plugin.state,
    meta: [
      plugin.in_flight !== null ? `${plugin.in_flight} in flight` : null,
      plugin.waiting ? `${plugin.waiting} waiting` : null,
      plugin.total !== null ? `${plugin.total} served` : null,
      plugin.max_concurrent ? `limit ${plugin.max_concurrent}` : null,
      plugin.error,
    ],
  }))));
  const sessions = data.sessions.items.map(sessionNode);
  const hidden = data.sessions.total - data.sessions.shown;
  if (hidden > 0) {
    sessions.push(more(hidden, `sessions (${data.sessions.hidden_requests} requests in them)`));
  }
  top.push(section("sessions", "Sessions", sessions, [`${data.sessions.total} listed of ${data.counts.sessions}`]));
  const stateless = [
    ...data.stateless.requests.map((f) => statelessNode(f, false)),
    ...data.stateless.listens.map((f) => statelessNode(f, true)),
  ];
  if (data.stateless.more) stateless.push(more(data.stateless.more, "requests"));
  if (stateless.length) top.push(section("stateless", "Stateless requests (2026-07-28)", stateless));
  const tasks = data.tasks.items.map(taskNode);
  if (data.tasks.more) tasks.push(more(data.tasks.more, "tasks"));
  if (tasks.length) top.push(section("tasks", "Tasks (tasks extension)", tasks));
  if (data.workers.started) {
    top.push(section("workers", "Worker processes", [], [
      `${data.workers.pools} pools`, `${data.workers.busy} busy`, `${data.workers.idle} idle`,
      `${data.workers.started} started`, `${data.workers.killed} killed`,
    ]));
  }
  tree.replaceChildren(...top);
  const filtered = ["tool", "client", "slow_ms"].some((name) => filters.elements[name].value);
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
    statusLine.className = "status live";
    statusLine.textContent = `live · ${new Date().toLocaleTimeString()}`;
    render(JSON.parse(event.data));
    refreshReplicas();
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
filters.addEventListener("input", () => {
  clearTimeout(typing);
  typing = setTimeout(connect, 300);
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
connect();
refreshReplicas();
