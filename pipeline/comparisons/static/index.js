// The report index's filters (model, GPU, precision, kind): options from the list items' data attributes, set as
// textContent; a row shows when every chosen filter matches (GPU and precision match either side).
(function () {
  "use strict";
  var items = Array.prototype.slice.call(document.querySelectorAll("#comparison-list li"));
  var filters = [
    {id: "filter-model", attrs: ["data-model"]},
    {id: "filter-hw", attrs: ["data-hw-a", "data-hw-b"]},
    {id: "filter-precision", attrs: ["data-precision-a", "data-precision-b"]},
    {id: "filter-kind", attrs: ["data-kind"]},
  ];

  function values(item, attrs) { return attrs.map(function (a) { return item.getAttribute(a); }); }

  filters.forEach(function (f) {
    var select = document.getElementById(f.id), seen = {};
    items.forEach(function (item) { values(item, f.attrs).forEach(function (v) { seen[v] = true; }); });
    Object.keys(seen).sort().forEach(function (v) {
      var o = document.createElement("option");
      o.value = v;
      o.textContent = v;
      select.appendChild(o);
    });
    select.addEventListener("change", apply);
  });

  function apply() {
    var shown = 0;
    items.forEach(function (item) {
      var ok = filters.every(function (f) {
        var chosen = document.getElementById(f.id).value;
        return chosen === "" || values(item, f.attrs).indexOf(chosen) >= 0;
      });
      item.hidden = !ok;
      shown += ok ? 1 : 0;
    });
    document.getElementById("filter-count").textContent = shown + " of " + items.length + " comparisons shown";
  }

  apply();
})();
