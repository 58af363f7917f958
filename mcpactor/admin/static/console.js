// The operations console beside the live tree (app.js): rates and latency per tool and
// per client with a small chart each (api/rates), and a request's story (api/request)
// opened from the tree or the history, kept in the address so a link reopens it.
// Everything from the server is put in the page as text, never as markup.
"use strict";

// --- rates -------------------------------------------------------------------------------

let ratesAsked = 0;
let ratesShown = "";
async function refreshRates(force) {
  const now = Date.now();
  if (!force && now - ratesAsked < 2000) return;
  ratesAsked = now;
  const params = new URLSearchParams({ window: filters.elements.over.value || "60" });
  for (const name of ["tool", "client"]) {
    const value = filters.elements[name].value.trim();
    if (value) params.set(name, value);
  }
  const response = await fetch(`api/rates?${params}`, { credentials: "same-origin" }).catch(() => null);
  if (!response || !response.ok) return;
  const text = await response.text().catch(() => "");
  if (text === ratesShown || held()) return;
  ratesShown = text;
  renderRates(JSON.parse(text));
}

// The window is outside the filters' form (associated with it), so its own listener.
filters.elements.over.addEventListener("input", () => {
  saveLink();
  refreshRates(true);
});

function latency(seconds) {
  if (seconds === null || seconds === undefined) return "";
  if (seconds < 0.001) return `${(seconds * 1e6).toFixed(0)} µs`;
  if (seconds < 1) return `${(seconds * 1000).toFixed(seconds < 0.01 ? 2 : 1)} ms`;
  return `${seconds.toFixed(2)} s`;
}

function perSecond(value) {
  return value >= 100 ? value.toFixed(0) : value >= 1 ? value.toFixed(1) : value.toFixed(2);
}

const SVG = "http://www.w3.org/2000/svg";
// A line of the requests/s of each slot of the window, scaled to its highest.
function chart(values) {
  const width = 160;
  const height = 24;
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("class", "chart");
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  svg.setAttribute("role", "img");
  const top = Math.max(...values, 0);
  svg.setAttribute("aria-label", `requests/s per slot, highest ${perSecond(top)}`);
  const base = document.createElementNS(SVG, "line");
  base.setAttribute("x1", "0");
  base.setAttribute("x2", String(width));
  base.setAttribute("y1", String(height - 1));
  base.setAttribute("y2", String(height - 1));
  const line = document.createElementNS(SVG, "polyline");
  const step = values.length > 1 ? width / (values.length - 1) : width;
  line.setAttribute("points", values.map((value, index) => {
    const y = top > 0 ? height - 2 - (value / top) * (height - 4) : height - 2;
    return `${(index * step).toFixed(1)},${y.toFixed(1)}`;
  }).join(" "));
  svg.append(base, line);
  return svg;
}

function rateRow(label, row) {
  const tr = el("tr");
  tr.dataset.key = label;
  const chartCell = el("td");
  chartCell.append(chart(row.chart || []));
  tr.append(
    cell(label),
    cell(perSecond(row.rate), "number"),
    cell(row.error_rate ? perSecond(row.error_rate) : "0", row.error_rate ? "number errors" : "number"),
    cell(latency(row.p50), "number"),
    cell(latency(row.p95), "number"),
    cell(latency(row.p99), "number"),
    chartCell,
  );
  return tr;
}

function renderRates(data) {
  const note = document.getElementById("rates-note");
  if (!data.kept) {
    note.textContent = "not kept in this process";
  } else {
    const covered = Math.round(data.covered || 0);
    note.textContent = covered < data.window
      ? `over the ${covered} s counted so far, in slots of ${data.slot} s`
      : `in slots of ${data.slot} s`;
  }
  document.getElementById("rates-tools").tBodies[0].replaceChildren(...(data.tools || []).map(
    (row) => rateRow(row.name ? `${row.method} ${row.name}` : row.method, row)));
  document.getElementById("rates-clients").tBodies[0].replaceChildren(...(data.clients || []).map(
    (row) => rateRow(row.client, row)));
}

// --- a request's story -------------------------------------------------------------------

const storyDialog = document.getElementById("story");

// ``replica``: the other replica the request ran on (its story comes from the store).
function storyCell(item, replica = null) {
  const td = el("td");
  const task = item.method === "task";
  if (!task && (item.request === null || item.request === undefined)) return td;
  const open = el("button", "plain", "Details");
  open.type = "button";
  open.addEventListener("click", () => openStory(task ? { task: item.name } : {
    session: item.session, request: item.request, at: item.at, replica,
  }));
  td.append(open);
  return td;
}

// ``which``: {session, request} (running in a session), {key, request} (running without
// one) or {session, request, at} (ended); session may be null for ended ones.
function storyQuery(which) {
  const params = new URLSearchParams();
  for (const name of ["session", "request", "key", "at", "task", "replica"]) {
    const value = which[name];
    if (value !== null && value !== undefined && value !== "") params.set(name, String(value));
  }
  return params.toString();
}

function openStoryLink(text) {
  const params = new URLSearchParams(text);
  openStory(Object.fromEntries(params.entries()));
}

async function openStory(which) {
  const query = storyQuery(which);
  const response = await fetch(`api/request?${query}`, { credentials: "same-origin" }).catch(() => null);
  if (!response) return toast("The server did not answer.", true);
  if (!response.ok) return toast("That request is neither running nor kept any more.", true);
  const data = await response.json().catch(() => null);
  if (!data) return;
  storyLink = query;
  saveLink();
  renderStory(data);
  if (!storyDialog.open) storyDialog.showModal();
}

storyDialog.addEventListener("close", () => {
  storyLink = null;
  saveLink();
});

function fact(list, name, value) {
  if (value === null || value === undefined || value === "") return;
  list.append(el("dt", null, name), el("dd", null, value));
}

function storyOutcome(data) {
  if (data.state === "running") return data.cancelled ? "running, cancelled" : "running";
  const why = data.cancelled_by ? `, by ${data.cancelled_by}` : "";
  return `${outcomeText(data)}${why}`;
}

function renderTaskStory(data) {
  setText(document.getElementById("story-title"), `task ${data.task}`);
  const facts = document.getElementById("story-facts");
  facts.replaceChildren();
  fact(facts, "Status", data.status || data.outcome);
  fact(facts, "Task", data.task);
  fact(facts, "Message", data.message);
  fact(facts, "Session", data.session);
  fact(facts, "Client", data.client);
  fact(facts, "Principal", data.principal);
  if (data.age !== undefined) fact(facts, "Created", `${age(data.age)} ago`);
  if (data.ttl_left !== undefined && data.ttl_left !== null) fact(facts, "Kept for", age(data.ttl_left));
  if (data.at !== undefined) fact(facts, "Ended", new Date(data.at * 1000).toLocaleString());
  if (data.seconds !== undefined) fact(facts, "Took", latency(data.seconds));
  document.getElementById("story-request").hidden = true;
  document.getElementById("story-trace").hidden = true;
}

function renderStory(data) {
  if (data.kind === "task") return renderTaskStory(data);
  document.getElementById("story-request").hidden = false;
  const label = data.name ? `${data.method} ${data.name}` : data.method;
  setText(document.getElementById("story-title"), `${label} · request ${data.request}`);
  const facts = document.getElementById("story-facts");
  facts.replaceChildren();
  fact(facts, "Outcome", storyOutcome(data));
  fact(facts, "Request", data.request);
  fact(facts, "Session", data.session);
  fact(facts, "Client", data.client);
  fact(facts, "Principal", data.principal);
  fact(facts, "Replica", data.replica);
  fact(facts, "Revision", data.revision);
  if (data.state === "running") {
    fact(facts, "Running for", age(data.age));
    if (data.progress !== null && data.progress !== undefined) {
      fact(facts, "Progress", data.total ? `${data.progress} of ${data.total}` : String(data.progress));
    }
    fact(facts, "Progress message", data.message);
  } else {
    fact(facts, "Ended", `${new Date(data.at * 1000).toLocaleString()}`);
    fact(facts, "Took", latency(data.seconds));
    fact(facts, "Error", data.detail);
  }
  fact(facts, "Trace id", data.trace_id);
  const shown = data.arguments || {};
  const notes = [];
  if (shown.redacted) notes.push(`${shown.redacted} hidden`);
  if (shown.cut) notes.push("cut short");
  if (!data.kept) notes.push("no longer kept");
  setText(document.getElementById("story-arguments-note"), notes.length ? `(${notes.join(", ")})` : "");
  setText(document.getElementById("story-arguments"), shown.text ?? "");
  const logs = document.getElementById("story-logs");
  logs.replaceChildren(...(data.logs || []).map((line) => el("li", `level-${line.level}`,
    `${new Date(line.at * 1000).toLocaleTimeString()} ${line.level} ${line.logger}: ${line.message}`)));
  setText(document.getElementById("story-logs-note"), (data.logs || []).length ? "" : "(none logged)");
  const trace = document.getElementById("story-trace");
  const url = typeof data.trace_url === "string" && /^https?:\/\//.test(data.trace_url) ? data.trace_url : null;
  trace.hidden = !url;
  if (url) trace.href = url;
  else trace.removeAttribute("href");
}
