// The Sluice web console: the tables, a table's timeline, the changes of a
// window and the live changes of a table, from the console's JSON API.
// Every value is written with textContent: nothing a table holds is read
// as HTML.
"use strict";

const $ = (sel) => document.querySelector(sel);
const state = { table: null, live: null, liveColumns: null };

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
}

// api fetches a JSON API path; a failure throws {code, message}, the gRPC
// code name of the service's answer.
async function api(path) {
  const resp = await fetch(path, { credentials: "same-origin", headers: { Accept: "application/json" } });
  let body;
  try { body = await resp.json(); } catch (e) {
    throw { code: resp.status === 401 ? "Unauthenticated" : "Unknown", message: `HTTP ${resp.status}` };
  }
  if (!resp.ok) throw body.error || { code: "Unknown", message: `HTTP ${resp.status}` };
  return body;
}

function showError(err) {
  const box = $("#error");
  if (!err) { box.hidden = true; return; }
  box.querySelector(".code").textContent = err.code || "Unknown";
  box.querySelector(".message").textContent = err.message || String(err);
  box.hidden = false;
}

function fmtTime(ms) { return new Date(ms).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z"); }

function fmtValue(raw) {
  if (raw === null || raw === undefined) return el("span", { class: "null" }, "null");
  if (typeof raw === "object") return document.createTextNode(JSON.stringify(raw));
  return document.createTextNode(String(raw));
}

// --- Tables ---------------------------------------------------------------

async function loadTables() {
  const [session, list] = await Promise.all([api("/api/session"), api("/api/tables")]);
  $("#who").textContent = session.auth ? `signed in as ${session.principal}` : "authentication off";
  const ul = $("#tables");
  ul.replaceChildren();
  for (const t of list.tables) {
    const a = el("a", { href: `#table=${encodeURIComponent(t.name)}`, "data-table": t.name }, t.name,
      el("small", {}, `${t.format} · commit ${t.commit_seq}`));
    a.classList.toggle("selected", t.name === state.table);
    ul.append(el("li", {}, a));
  }
  if (list.tables.length === 0) ul.append(el("li", { class: "note" }, "No table you may read."));
}

// --- Timeline -------------------------------------------------------------

async function loadTimeline(table) {
  const body = $("#timeline tbody");
  body.replaceChildren();
  const tl = await api(`/api/snapshots?table=${encodeURIComponent(table)}`);
  const num = (v) => el("td", { class: "num" }, v === null || v === undefined ? "" : String(v));
  for (const s of tl.snapshots.slice().reverse()) {
    const tr = el("tr", { "data-snapshot": String(s.snapshot) },
      el("td", { class: "num" }, String(s.commit_seq)), el("td", {}, String(s.snapshot)),
      el("td", {}, fmtTime(s.timestamp_ms)), el("td", {}, s.operation), num(s.added_records),
      num(s.deleted_records), el("td", {}, s.strategy || ""), num(s.files), num(s.records_read));
    tr.addEventListener("click", () => {
      const f = $("#window");
      f.from.value = s.parent === null || s.parent === undefined ? "" : String(s.parent);
      f.to.value = String(s.snapshot);
      showChanges();
    });
    body.append(tr);
  }
  let note = tl.truncated ? "The newest commits only. " : "";
  if (tl.plan_error) note += `No plan: ${tl.plan_error.code}: ${tl.plan_error.message}`;
  $("#timeline-note").textContent = note;
}

// --- Changes --------------------------------------------------------------

function headRow(columns) {
  return el("tr", {}, el("th", {}, "op"), el("th", {}, "snapshot"), el("th", {}, "committed"),
    ...columns.map((c) => el("th", {}, c)));
}

// changeRow draws one change: an insert's after-image, a delete's
// before-image, an update's images zipped column by column with the
// changed cells showing the old and the new value.
function changeRow(r) {
  const tr = el("tr", { "data-op": r.op, "data-snapshot": String(r.snapshot) },
    el("td", { class: "op" }, r.op), el("td", {}, String(r.snapshot)), el("td", {}, r.ts.replace("T", " ")));
  const image = r.after || r.before || [];
  const changed = new Set(r.changed);
  image.forEach((_, i) => {
    if (r.before && r.after && changed.has(i)) {
      tr.append(el("td", { class: "value changed", "data-column": String(i) },
        el("span", { class: "old" }, fmtValue(r.before[i])), el("span", { class: "arrow" }, "→"),
        el("span", { class: "new" }, fmtValue(r.after[i]))));
    } else {
      tr.append(el("td", { class: "value", "data-column": String(i) }, fmtValue(image[i])));
    }
  });
  return tr;
}

let changesSeq = 0;

async function showChanges() {
  const seq = ++changesSeq; // a later request's answer wins, whatever lands last
  showError(null);
  const f = $("#window");
  const q = new URLSearchParams({ table: state.table });
  for (const k of ["from", "to", "filter"]) if (f[k].value.trim()) q.set(k, f[k].value.trim());
  location.replace(`#${q}`);
  for (const tr of document.querySelectorAll("#timeline tbody tr")) {
    tr.classList.toggle("selected", tr.dataset.snapshot === f.to.value.trim());
  }
  const note = $("#changes-note");
  note.textContent = "Reading…";
  const table = $("#changes");
  try {
    const res = await api(`/api/changes?${q}`);
    if (seq !== changesSeq) return;
    table.tHead.replaceChildren(headRow(res.columns));
    const body = table.tBodies[0];
    body.replaceChildren(...res.rows.map(changeRow));
    const from = res.from === null ? "the start of history" : `snapshot ${res.from}`;
    const to = res.to === null ? "the current snapshot" : `snapshot ${res.to}`;
    note.textContent = `${res.rows.length} change${res.rows.length === 1 ? "" : "s"} after ${from} up to ${to}` +
      (res.truncated ? ` (the first ${res.limit}: the window holds more)` : "") + ".";
    table.dataset.from = res.from || "";
    table.dataset.to = res.to || "";
    table.dataset.rows = String(res.rows.length);
  } catch (err) {
    if (seq !== changesSeq) return;
    note.textContent = "";
    table.tHead.replaceChildren();
    table.tBodies[0].replaceChildren();
    showError(err);
  }
}

// --- Live -----------------------------------------------------------------

function liveStatus(text) {
  const p = $("#live-status");
  p.hidden = !text;
  p.textContent = text || "";
}

function stopLive() {
  if (state.live) { state.live.close(); state.live = null; }
  $("#live-toggle").setAttribute("aria-pressed", "false");
  liveStatus("");
}

// startLive follows the table: each commit's changes are painted at the top
// as they arrive, in a block of their own.
function startLive() {
  stopLive();
  const table = state.table;
  const live = $("#live");
  live.hidden = false;
  for (const b of [...live.tBodies]) b.remove();
  $("#live-toggle").setAttribute("aria-pressed", "true");
  liveStatus("Opening the stream…");
  const es = new EventSource(`/api/live?table=${encodeURIComponent(table)}`);
  state.live = es;
  const blocks = new Map();
  es.addEventListener("start", (ev) => {
    const d = JSON.parse(ev.data);
    state.liveColumns = d.columns;
    live.tHead.replaceChildren(headRow(d.columns));
    live.dataset.ready = "true";
    liveStatus(`Following ${d.table}: new commits appear here as they land.`);
  });
  es.addEventListener("changes", (ev) => {
    const d = JSON.parse(ev.data);
    let block = blocks.get(d.snapshot);
    if (!block) {
      block = el("tbody", { class: "commit fresh", "data-snapshot": String(d.snapshot) },
        el("tr", {}, el("th", { colspan: String(3 + state.liveColumns.length) },
          `commit ${d.commit_seq} · snapshot ${d.snapshot} · ${fmtTime(d.timestamp_ms)}`)));
      blocks.set(d.snapshot, block);
      live.insertBefore(block, live.tBodies[0] || null);
    }
    for (const r of d.rows) block.append(changeRow(r));
    if (d.complete) {
      block.dataset.complete = "true";
      loadTimeline(table).catch(showError);
      loadTables().catch(showError);
    }
  });
  es.addEventListener("error", (ev) => {
    if (ev.data) {
      const err = JSON.parse(ev.data);
      showError(err);
      es.close();
      $("#live-toggle").setAttribute("aria-pressed", "false");
      liveStatus(`The live stream ended: ${err.code}.`);
      if (err.code === "Unavailable" && state.live === es) setTimeout(() => state.live === es && startLive(), 2000);
    } else if (es.readyState === EventSource.CLOSED) {
      liveStatus("The live stream ended.");
    }
  });
}

// --- Navigation -----------------------------------------------------------

async function selectTable(table) {
  if (state.table !== table) stopLive();
  state.table = table;
  for (const a of document.querySelectorAll("#tables a")) a.classList.toggle("selected", a.dataset.table === table);
  $("#hint").hidden = true;
  $("#table-view").hidden = false;
  $("#table-name").textContent = table;
  $("#live").hidden = true;
  showError(null);
  try { await loadTimeline(table); } catch (err) { showError(err); }
}

async function route() {
  const q = new URLSearchParams(location.hash.slice(1));
  const table = q.get("table");
  if (!table) return;
  const f = $("#window");
  for (const k of ["from", "to", "filter"]) f[k].value = q.get(k) || "";
  await selectTable(table);
  await showChanges();
}

window.addEventListener("hashchange", () => {
  const q = new URLSearchParams(location.hash.slice(1));
  if (q.get("table") !== state.table) route();
});
// Leaving the page ends the live stream (and with it the service's follow
// stream) at once.
window.addEventListener("pagehide", stopLive);

document.addEventListener("DOMContentLoaded", async () => {
  $("#window").addEventListener("submit", (ev) => { ev.preventDefault(); showChanges(); });
  $("#live-toggle").addEventListener("click", () => (state.live ? stopLive() : startLive()));
  try { await loadTables(); } catch (err) { showError(err); return; }
  await route();
  document.body.dataset.ready = "true";
});
