// kbgraph inspect: progressive enhancement only; every page works without this file.
"use strict";

// Source view: bring the first highlighted line into view and give it focus.
function showHighlight() {
  const first = document.querySelector("table.source tr.hl");
  if (!first) return;
  first.scrollIntoView({ block: "center" });
  const anchor = first.querySelector("a");
  if (anchor) anchor.focus({ preventScroll: true });
}

// Tables of class "sortable": a button in each header sorts by that column.
function makeSortable(table) {
  const heads = table.querySelectorAll("thead th");
  heads.forEach((th, column) => {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = th.textContent;
    th.textContent = "";
    th.appendChild(button);
    button.addEventListener("click", () => {
      const ascending = th.getAttribute("aria-sort") !== "ascending";
      heads.forEach((other) => other.removeAttribute("aria-sort"));
      th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      const body = table.tBodies[0];
      const rows = Array.from(body.rows);
      const key = (row) => {
        const cell = row.cells[column];
        const scored = cell && cell.querySelector("[data-value]");
        if (scored) return parseFloat(scored.dataset.value);
        return cell ? cell.textContent.trim() : "";
      };
      rows.sort((a, b) => {
        const x = key(a), y = key(b);
        const order = typeof x === "number" && typeof y === "number" ? x - y
          : String(x).localeCompare(String(y), undefined, { numeric: true });
        return ascending ? order : -order;
      });
      rows.forEach((row) => body.appendChild(row));
    });
  });
}

// Inputs with data-filter="ID": show only the rows of table ID whose text contains theirs.
function makeFilter(input) {
  const table = document.getElementById(input.dataset.filter);
  if (!table) return;
  input.addEventListener("input", () => {
    const needle = input.value.trim().toLowerCase();
    for (const row of table.tBodies[0].rows) {
      row.hidden = needle !== "" && !row.textContent.toLowerCase().includes(needle);
    }
  });
}

// After the browser's own jump to #L<n>, so that the cited lines end up centred.
window.addEventListener("load", showHighlight);

document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("table.sortable").forEach(makeSortable);
  document.querySelectorAll("input[data-filter]").forEach(makeFilter);
});
