// Usage charts (Chart.js, served locally). The data comes from the page's
// <script type="application/json" id="usage-data">; the tables show the same numbers.
(function () {
  "use strict";
  var node = document.getElementById("usage-data");
  if (!node || typeof Chart === "undefined") return;
  var data = JSON.parse(node.textContent);
  var palette = ["#3b5bdb", "#2b8a3e", "#e67700", "#c92a2a", "#862e9c", "#0b7285", "#5c940d", "#a61e4d"];
  // One colour per provider slug on every chart (billing/provider_colours.py).
  var providerColour = function (slug) { return data.providerColours[slug] || "#868e96"; };
  // Same rule as the tables: 2 decimals from $1, else 3 significant digits.
  var usd = function (value) {
    var v = Number(value);
    if (v === 0) return "$0";
    var abs = Math.abs(v);
    var text = abs >= 1
      ? abs.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 })
      : abs.toLocaleString("en-US", { maximumSignificantDigits: 3, minimumFractionDigits: 2, maximumFractionDigits: 12 });
    return (v < 0 ? "-$" : "$") + text;
  };
  Chart.defaults.font.family = getComputedStyle(document.body).fontFamily;
  Chart.defaults.color = "#344054";
  Chart.defaults.animation = false;

  new Chart(document.getElementById("chart-daily"), {
    type: "bar",
    data: {
      labels: data.days,
      datasets: [
        { label: "Spend", data: data.dailyCost, backgroundColor: palette[0] },
        { label: "Saved vs list", data: data.dailySaved, backgroundColor: palette[1] },
      ],
    },
    options: {
      maintainAspectRatio: false,
      plugins: {
        tooltip: { callbacks: {
          label: function (ctx) {
            return ctx.dataset.label + ": " + usd(ctx.parsed.y) + " · " + data.dailyCalls[ctx.dataIndex] + " calls";
          },
        } },
      },
      scales: { y: { beginAtZero: true, ticks: { callback: usd } }, x: { ticks: { maxRotation: 0, autoSkipPadding: 12 } } },
    },
  });

  new Chart(document.getElementById("chart-models"), {
    type: "bar",
    data: {
      labels: data.models,
      datasets: [{
        label: "Spend (USD)",
        data: data.modelCost,
        backgroundColor: data.models.map(function (_, i) { return palette[i % palette.length]; }),
      }],
    },
    options: {
      indexAxis: "y",
      maintainAspectRatio: false,
      plugins: { legend: { display: false }, tooltip: { callbacks: { label: function (ctx) { return usd(ctx.parsed.x); } } } },
      scales: { x: { beginAtZero: true, ticks: { callback: usd } } },
    },
  });

  new Chart(document.getElementById("chart-providers"), {
    type: "bar",
    data: {
      labels: data.providers,
      datasets: [{
        label: "Spend (USD)",
        data: data.providerCost,
        backgroundColor: data.providers.map(providerColour),
      }],
    },
    options: {
      indexAxis: "y",
      maintainAspectRatio: false,
      plugins: { legend: { display: false }, tooltip: { callbacks: { label: function (ctx) { return usd(ctx.parsed.x); } } } },
      scales: { x: { beginAtZero: true, ticks: { callback: usd } } },
    },
  });

  var ttftCanvas = document.getElementById("chart-ttft");
  if (!ttftCanvas) return;  // no streamed calls in the period: the table says so
  new Chart(ttftCanvas, {
    type: "bar",
    data: {
      labels: data.buckets,
      datasets: data.ttft.map(function (row) {
        return {
          label: row.provider,
          data: row.medians.map(function (ms) { return ms === null ? null : ms / 1000; }),
          backgroundColor: providerColour(row.provider),
        };
      }),
    },
    options: {
      maintainAspectRatio: false,
      plugins: { tooltip: { callbacks: { label: function (ctx) {
        var p90 = data.ttft[ctx.datasetIndex].p90s[ctx.dataIndex];
        return ctx.dataset.label + ": p50 " + ctx.parsed.y.toFixed(2) + " s, p90 " + (p90 / 1000).toFixed(2) + " s";
      } } } },
      scales: { y: { beginAtZero: true, title: { display: true, text: "p50 TTFT (s)" } } },
    },
  });
})();
