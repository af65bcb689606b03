// What every page shares, without inline script or handler attributes (the Content-Security-Policy
// allows neither): the saved theme, applied in <head> before the page paints; the theme toggle; the
// cluster switch; selects that submit their form when changed.
(function () {
  "use strict";
  var root = document.documentElement;
  function saved() {
    try { return localStorage.getItem("theme"); } catch (e) { return null; }  // storage can be disabled
  }
  var theme = saved();
  if (theme) root.setAttribute("data-theme", theme);

  function toggleTheme() {
    var current = root.getAttribute("data-theme");
    var dark = current === "dark" || (current !== "light" && matchMedia("(prefers-color-scheme: dark)").matches);
    var next = dark ? "light" : "dark";
    root.setAttribute("data-theme", next);
    try { localStorage.setItem("theme", next); } catch (e) { /* the choice lasts for this page only */ }
    document.dispatchEvent(new CustomEvent("theme:changed", {detail: next}));
  }

  // The system's light/dark switching (theme "auto") restyles the page through CSS alone; charts
  // draw their colours in script, so they are told too.
  if (window.matchMedia) {
    var system = matchMedia("(prefers-color-scheme: dark)");
    var onSystemChange = function () {
      document.dispatchEvent(new CustomEvent("theme:changed", {detail: root.getAttribute("data-theme")}));
    };
    if (system.addEventListener) system.addEventListener("change", onSystemChange);
    else if (system.addListener) system.addListener(onSystemChange);
  }

  // Delegated from the document: this runs in <head>, before the elements exist.
  document.addEventListener("click", function (ev) {
    var toggle = ev.target.closest ? ev.target.closest(".theme-toggle") : null;
    if (toggle) toggleTheme();
  });
  document.addEventListener("change", function (ev) {
    var el = ev.target;
    if (el.matches && el.matches("select.cluster-switch")) {
      var option = el.options[el.selectedIndex];
      if (option && option.dataset.href) location.href = option.dataset.href;
    } else if (el.matches && el.matches("select[data-autosubmit]") && el.form) {
      el.form.submit();
    }
  });
})();
