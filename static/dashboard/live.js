// Activity live updates. The gateway's ledger notifies the organisation's dashboards
// through a WebSocket (/ws/activity/); on each event the page re-reads itself and
// swaps the totals and rows in place (no reload). If the socket cannot connect or
// drops, the page falls back to re-reading every FALLBACK_MS.
(function () {
  "use strict";
  var region = document.getElementById("live-region");
  var status = document.getElementById("live-status");
  if (!region) return;
  var FALLBACK_MS = 10000;
  var onFirstPage = region.getAttribute("data-page") === "1";
  var pending = null;
  var fallbackTimer = null;

  // The "All columns" switch, remembered in this browser.
  var allColumns = document.getElementById("all-columns");
  var applyColumns = function () {
    var table = document.getElementById("activity");
    if (table && allColumns) table.classList.toggle("all-columns", allColumns.checked);
  };
  if (allColumns) {
    allColumns.checked = window.localStorage.getItem("ullm-all-columns") === "1";
    allColumns.addEventListener("change", function () {
      window.localStorage.setItem("ullm-all-columns", allColumns.checked ? "1" : "0");
      applyColumns();
    });
    applyColumns();
  }

  var rowIds = function (root) {
    var ids = {};
    root.querySelectorAll("#live-rows tr[data-request-id], #live-rows tr[data-rejected-id]").forEach(function (tr) {
      ids[tr.getAttribute("data-request-id") || tr.getAttribute("data-rejected-id")] = true;
    });
    return ids;
  };

  var refresh = function () {
    pending = null;
    fetch(window.location.href, { headers: { "X-Requested-With": "live" }, credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        if (!html) return;
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("live-region");
        if (!fresh) return;
        var before = rowIds(region);
        var totalsBox = document.getElementById("totals-box");
        var totalsOpen = totalsBox ? totalsBox.open : null;
        region.innerHTML = fresh.innerHTML;
        totalsBox = document.getElementById("totals-box");
        if (totalsBox && totalsOpen !== null) totalsBox.open = totalsOpen;
        region.querySelectorAll("#live-rows tr").forEach(function (tr) {
          var id = tr.getAttribute("data-request-id") || tr.getAttribute("data-rejected-id");
          if (id && !before[id]) tr.classList.add("fresh");
        });
        applyColumns();
      })
      .catch(function () { /* next event or tick tries again */ });
  };
  var schedule = function () {
    if (!onFirstPage) return;  // older pages do not move under the reader
    if (pending === null) pending = setTimeout(refresh, 300);
  };
  var setStatus = function (text, on) {
    if (!status) return;
    status.textContent = text;
    status.classList.toggle("on", !!on);
  };
  var fallback = function () {
    if (fallbackTimer !== null || !onFirstPage) return;
    setStatus("auto-refresh every " + FALLBACK_MS / 1000 + " s", false);
    fallbackTimer = setInterval(refresh, FALLBACK_MS);
  };

  if (!onFirstPage) return;
  if (!("WebSocket" in window)) { fallback(); return; }
  var scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
  var socket;
  try {
    socket = new WebSocket(scheme + window.location.host + "/ws/activity/");
  } catch (e) {
    fallback();
    return;
  }
  socket.addEventListener("open", function () {
    if (fallbackTimer !== null) { clearInterval(fallbackTimer); fallbackTimer = null; }
    setStatus("live", true);
    document.documentElement.setAttribute("data-live", "socket");
  });
  socket.addEventListener("message", schedule);
  socket.addEventListener("close", fallback);
  socket.addEventListener("error", fallback);
})();
