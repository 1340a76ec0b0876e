// Sort a table.sortable by the column whose header is clicked (numbers by data-value, text by its text);
// without scripts the table reads in its built order.
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("thead th").forEach(function (th, col) {
    th.classList.add("sorter");
    th.addEventListener("click", function (event) {
      if (event.target.closest("a")) { return; }
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      var number = th.dataset.sort === "number", was = th.getAttribute("aria-sort");
      var down = was ? was === "ascending" : number;  // numbers first sort highest first, text A to Z
      rows.sort(function (a, b) {
        var x = a.cells[col], y = b.cells[col];
        var p = number ? parseFloat(x.dataset.value) : x.textContent.trim();
        var q = number ? parseFloat(y.dataset.value) : y.textContent.trim();
        var c = number ? p - q : p.localeCompare(q);
        return down ? -c : c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
      table.querySelectorAll("thead th").forEach(function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", down ? "descending" : "ascending");
    });
  });
});
