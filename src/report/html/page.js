"use strict";
// Sortable, filterable, paged tables from the JSON islands; copy buttons. No framework.
(function () {
  var PAGE = 100;
  function text(v) { return v === null || v === undefined ? "" : String(v); }
  function cmp(a, b) {
    if (a === b) return 0;
    if (a === null || a === undefined) return 1;
    if (b === null || b === undefined) return -1;
    if (typeof a === "number" && typeof b === "number") return a - b;
    return String(a).localeCompare(String(b), undefined, { numeric: true });
  }
  function build(div) {
    var src = div.querySelector("script[type='application/json']");
    var data = JSON.parse(src.textContent);
    var state = { rows: data.rows, sort: -1, dir: 1, filter: "", page: 0 };
    var controls = document.createElement("div");
    controls.className = "controls";
    var input = document.createElement("input");
    input.type = "search";
    input.placeholder = "filter " + data.name + "…";
    input.setAttribute("aria-label", "filter " + data.name);
    var count = document.createElement("span");
    count.className = "note";
    controls.appendChild(input);
    controls.appendChild(document.createTextNode(" "));
    controls.appendChild(count);
    var table = document.createElement("table");
    var thead = table.createTHead();
    var hr = thead.insertRow();
    data.columns.forEach(function (c, i) {
      var th = document.createElement("th");
      th.textContent = c;
      th.addEventListener("click", function () {
        state.dir = state.sort === i ? -state.dir : 1;
        state.sort = i;
        state.page = 0;
        render();
      });
      hr.appendChild(th);
    });
    var tbody = table.createTBody();
    var pager = document.createElement("div");
    pager.className = "pager note";
    div.appendChild(controls);
    div.appendChild(table);
    div.appendChild(pager);
    input.addEventListener("input", function () {
      state.filter = input.value.toLowerCase();
      state.page = 0;
      render();
    });
    function render() {
      var rows = data.rows;
      if (state.filter) {
        rows = rows.filter(function (r) {
          return r.some(function (v) { return text(v).toLowerCase().indexOf(state.filter) >= 0; });
        });
      }
      if (state.sort >= 0) {
        var k = state.sort, d = state.dir;
        rows = rows.slice().sort(function (a, b) { return d * cmp(a[k], b[k]); });
      }
      Array.prototype.forEach.call(hr.children, function (th, i) {
        th.className = i === state.sort ? (state.dir > 0 ? "asc" : "desc") : "";
      });
      var pages = Math.max(1, Math.ceil(rows.length / PAGE));
      state.page = Math.min(state.page, pages - 1);
      tbody.textContent = "";
      rows.slice(state.page * PAGE, (state.page + 1) * PAGE).forEach(function (r) {
        var tr = tbody.insertRow();
        r.forEach(function (v) {
          var td = tr.insertCell(), t = text(v);
          td.textContent = t;
          if (t.length <= 64) td.className = "nw";
        });
      });
      count.textContent = rows.length + " of " + data.total + " rows";
      pager.textContent = "";
      if (pages > 1) {
        var prev = document.createElement("button");
        prev.textContent = "‹ previous";
        prev.disabled = state.page === 0;
        prev.addEventListener("click", function () { state.page--; render(); });
        var next = document.createElement("button");
        next.textContent = "next ›";
        next.disabled = state.page >= pages - 1;
        next.addEventListener("click", function () { state.page++; render(); });
        pager.appendChild(prev);
        pager.appendChild(document.createTextNode("page " + (state.page + 1) + " of " + pages));
        pager.appendChild(next);
      }
    }
    render();
  }
  Array.prototype.forEach.call(document.querySelectorAll("div.tbl[data-table]"), build);
  Array.prototype.forEach.call(document.querySelectorAll("button.copy"), function (b) {
    b.addEventListener("click", function () {
      var code = b.previousElementSibling;
      if (!code) return;
      var t = code.textContent;
      if (navigator.clipboard && navigator.clipboard.writeText) {
        navigator.clipboard.writeText(t).then(function () { b.textContent = "copied"; }, function () {});
      }
    });
  });
})();
