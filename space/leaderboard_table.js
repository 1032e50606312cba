// The leaderboard table of one variant, drawn from the JSON that space/leaderboard.py sends
// ({label, headers, datatypes, data, verified}); run by gr.HTML's js_on_load with `element`,
// `props` and `watch`.
// Every value is written with textContent or as an attribute, never parsed as HTML; a link cell
// links only to an http(s) address, a submission id to its page (?submission=<id>). Text cells
// are cut by CSS and carry their full text in `title`. A verified row's model name is followed by
// a badge element (.ss-verified: a filled pill), which no submitted text can draw.
// A click on a column header sorts by it (numbers best first, then the other way); empty cells
// stay last in both directions, ties keep the server's order (the rank). Rows are added PAGE at
// a time as the table scrolls, so a long leaderboard draws (and sorts) as fast as a short one.
const PAGE = 100;
const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: "base" });
const VERIFIED_TITLE = "Verified: a built-in baseline scored by the Space itself";
let sortName = null; // the sorted column's header, kept when a refresh adds or removes columns
let sortColumn = null;
let descending = false;
let query = "";
let parts = null;

function isEmpty(value) {
  return value === null || value === undefined || value === "";
}

function shown(value, kind) {
  if (isEmpty(value)) return "";
  if (kind === "number") return Number(value).toFixed(1);
  return String(value);
}

function compare(a, b, kind) {
  if (kind === "number" || kind === "rank") return a - b;
  return collator.compare(String(a), String(b));
}

function order(table) {
  const rows = table.data.map((_, i) => i);
  const needle = query.trim().toLowerCase();
  const kept = needle
    ? rows.filter((i) => table.data[i].some((v) => !isEmpty(v) && String(v).toLowerCase().includes(needle)))
    : rows;
  if (sortColumn === null) return kept;
  const kind = table.datatypes[sortColumn];
  return kept.sort((i, j) => {
    const a = table.data[i][sortColumn];
    const b = table.data[j][sortColumn];
    if (isEmpty(a) || isEmpty(b)) return isEmpty(a) === isEmpty(b) ? i - j : isEmpty(a) ? 1 : -1;
    const c = compare(a, b, kind);
    return c === 0 ? i - j : descending ? -c : c;
  });
}

function cell(table, row, col) {
  const kind = table.datatypes[col];
  const value = table.data[row][col];
  const td = document.createElement("td");
  const header = table.headers[col];
  if (kind === "number" || kind === "rank") {
    td.className = "ss-num";
    td.textContent = shown(value, kind);
  } else if (kind === "link") {
    if (/^https?:\/\//i.test(value || "")) {
      const a = document.createElement("a");
      a.href = value;
      a.textContent = "link";
      a.title = value;
      a.target = "_blank";
      a.rel = "noopener noreferrer nofollow ugc";
      td.append(a);
    }
  } else if (kind === "submission") {
    const a = document.createElement("a");
    a.href = `?submission=${encodeURIComponent(value)}`;
    a.textContent = value;
    a.title = "This submission's page: its breakdown, metadata and predictions";
    td.append(a);
  } else {
    const text = document.createElement("span");
    text.className = "ss-clip";
    text.textContent = shown(value, kind);
    if (!isEmpty(value)) text.title = String(value);
    td.append(text);
    if (header === "Model" && table.verified[row]) {
      const badge = document.createElement("span");
      badge.className = "ss-verified";
      badge.textContent = "verified";
      badge.title = VERIFIED_TITLE;
      td.append(badge);
    }
  }
  if (header === "Rank") td.classList.add("ss-rank");
  if (header === "Model") td.classList.add("ss-model");
  return td;
}

function addRows(table, count) {
  const { body, rows } = parts;
  const fragment = document.createDocumentFragment();
  const end = Math.min(rows.length, body.children.length + count);
  for (let i = body.children.length; i < end; i++) {
    const tr = document.createElement("tr");
    for (let col = 0; col < table.headers.length; col++) tr.append(cell(table, rows[i], col));
    fragment.append(tr);
  }
  body.append(fragment);
}

function drawBody(table) {
  const rows = order(table);
  parts.rows = rows;
  parts.body.replaceChildren();
  addRows(table, PAGE);
  parts.count.textContent = rows.length === table.data.length ? "" : `${rows.length} shown`;
  parts.heads.forEach((th, col) => {
    const state = col === sortColumn ? (descending ? "descending" : "ascending") : "none";
    th.setAttribute("aria-sort", state);
    th.querySelector(".ss-arrow").textContent = state === "descending" ? " ▼" : state === "ascending" ? " ▲" : "";
  });
}

function sortBy(table, col) {
  const kind = table.datatypes[col];
  if (sortColumn === col) descending = !descending;
  else descending = kind === "number";
  sortColumn = col;
  sortName = table.headers[col];
  drawBody(table);
}

function draw() {
  const host = element.querySelector(".ss-lb") || element;
  const table = props.value;
  if (!table || !Array.isArray(table.headers)) {
    host.replaceChildren();
    parts = null;
    return;
  }
  sortColumn = table.headers.indexOf(sortName);
  if (sortColumn < 0) sortColumn = null;
  const bar = document.createElement("div");
  bar.className = "ss-lb-bar";
  const label = document.createElement("span");
  label.className = "ss-lb-label";
  label.textContent = table.label || "";
  const count = document.createElement("span");
  const search = document.createElement("input");
  search.type = "search";
  search.placeholder = "Search...";
  search.setAttribute("aria-label", "Search the table");
  search.value = query;
  search.addEventListener("input", () => {
    query = search.value;
    drawBody(table);
  });
  bar.append(label, count, search);

  const scroll = document.createElement("div");
  scroll.className = "ss-lb-scroll";
  const grid = document.createElement("table");
  grid.setAttribute("aria-label", table.label || "");
  const head = document.createElement("thead");
  const headRow = document.createElement("tr");
  const heads = table.headers.map((name, col) => {
    const th = document.createElement("th");
    th.scope = "col";
    const kind = table.datatypes[col];
    if (kind === "number" || kind === "rank") th.classList.add("ss-num");
    if (name === "Rank") th.classList.add("ss-rank");
    if (name === "Model") th.classList.add("ss-model");
    const button = document.createElement("button");
    button.type = "button";
    button.title = `Sort by ${name}`;
    button.textContent = name;
    const arrow = document.createElement("span");
    arrow.className = "ss-arrow";
    arrow.setAttribute("aria-hidden", "true");
    button.append(arrow);
    button.addEventListener("click", () => sortBy(table, col));
    th.append(button);
    headRow.append(th);
    return th;
  });
  head.append(headRow);
  const body = document.createElement("tbody");
  grid.append(head, body);
  scroll.append(grid);
  scroll.addEventListener("scroll", () => {
    if (scroll.scrollTop + 2 * scroll.clientHeight >= scroll.scrollHeight) addRows(table, PAGE);
  });
  host.replaceChildren(bar, scroll);
  parts = { body, heads, count, rows: [] };
  drawBody(table);
}

watch("value", draw);
draw();
