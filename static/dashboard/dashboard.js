// Small progressive enhancements for the dashboard; every page works without them.
(function () {
  "use strict";

  // <button data-copy="#element-id">: copy the element's text to the clipboard.
  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy]");
    if (!button) return;
    var source = document.querySelector(button.getAttribute("data-copy"));
    if (!source) return;
    var text = source.textContent.trim();
    var done = function () {
      var label = button.textContent;
      button.textContent = "Copied";
      setTimeout(function () { button.textContent = label; }, 1500);
    };
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(text).then(done);
    } else {
      var range = document.createRange();
      range.selectNodeContents(source);
      var selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      try { document.execCommand("copy"); done(); } catch (e) { /* text stays selected */ }
    }
  });

  // <form data-confirm="...">: ask before a destructive POST.
  document.addEventListener("submit", function (event) {
    var message = event.target.getAttribute("data-confirm");
    if (message && !window.confirm(message)) event.preventDefault();
  });
})();

// The nav collapses behind "Menu" on narrow screens.
(function () {
  "use strict";
  var toggle = document.getElementById("nav-toggle");
  if (!toggle) return;
  toggle.addEventListener("click", function () {
    var header = toggle.closest("header");
    var open = header.classList.toggle("open");
    toggle.setAttribute("aria-expanded", open ? "true" : "false");
  });
})();

// Activity filters and totals: open on wide screens; on a phone behind a toggle each.
(function () {
  "use strict";
  if (!window.matchMedia("(min-width: 761px)").matches) return;
  ["filters-box", "totals-box"].forEach(function (id) {
    var box = document.getElementById(id);
    if (box) box.open = true;
  });
})();
