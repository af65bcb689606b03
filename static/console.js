// Live updates: one websocket per page; the server sends status and rendered fragments.
(function () {
  "use strict";
  var bar = document.getElementById("live-status");
  function relTimes(scope) {
    (scope || document).querySelectorAll("[data-epoch-ms]").forEach(function (el) {
      var ms = Number(el.getAttribute("data-epoch-ms"));
      if (ms > 0) el.textContent = Math.max(0, Math.round((Date.now() - ms) / 1000)) + " s ago";
    });
  }
  relTimes();
  if (!bar) return;
  var takenAt = Number(bar.dataset.takenAt) || null;
  var ageEl = document.getElementById("snapshot-age");
  var stateEl = document.getElementById("live-state");
  var dot = document.getElementById("live-dot");
  var banner = document.getElementById("banner");
  var socketUp = false;

  // The dot is green only while the socket is up and the watcher reaches the cluster.
  function showState() {
    if (!socketUp) { stateEl.textContent = "reconnecting…"; dot.className = "dot down"; }
    else if (bar.dataset.reachable === "0") { stateEl.textContent = "cluster unreachable"; dot.className = "dot fault"; }
    else if (bar.dataset.reachable === "1") { stateEl.textContent = "live"; dot.className = "dot live"; }
    else { stateEl.textContent = "waiting for a snapshot"; dot.className = "dot"; }
  }

  function showAge() {
    if (takenAt) {
      var age = Math.max(0, Date.now() / 1000 - takenAt);
      ageEl.textContent = age < 120 ? Math.round(age) + " s" : Math.round(age / 60) + " min";
      bar.classList.toggle("stale", age > 10);
    }
    relTimes();
  }
  setInterval(showAge, 1000);
  showAge();

  function setBanner(text) {
    if (text) { banner.textContent = text; banner.classList.remove("hidden"); }
    else { banner.classList.add("hidden"); }
  }

  function connect(delay) {
    var proto = location.protocol === "https:" ? "wss://" : "ws://";
    var params = new URLSearchParams(location.search);
    params.set("view", bar.dataset.view);
    if (bar.dataset.topic) params.set("topic", bar.dataset.topic);
    if (bar.dataset.group) params.set("group", bar.dataset.group);
    if (bar.dataset.job) params.set("job", bar.dataset.job);
    // A page's own live parameters (a connector's page: its Connect cluster and name), as a query string.
    if (bar.dataset.params) new URLSearchParams(bar.dataset.params).forEach(function (v, k) { params.set(k, v); });
    var ws = new WebSocket(proto + location.host + "/ws/clusters/" + encodeURIComponent(bar.dataset.cluster) + "/live/?" + params.toString());
    ws.onopen = function () {
      socketUp = true; delay = 1000;
      showState();
    };
    ws.onmessage = function (ev) {
      var msg = JSON.parse(ev.data);
      if (msg.type === "status") {
        if (msg.taken_at) takenAt = msg.taken_at;
        bar.dataset.reachable = msg.reachable ? "1" : "0";
        setBanner(msg.reachable ? "" : (msg.error || "Cluster " + bar.dataset.cluster + " is unreachable.") + " Showing the last known state.");
        showState();
        showAge();
      } else if (msg.type === "fragment") {
        var target = document.getElementById(msg.target);
        if (target) { target.innerHTML = msg.html; relTimes(target); document.dispatchEvent(new CustomEvent("fragment:updated", {detail: msg.target})); }
      } else if (msg.type === "prepend") {
        var rows = document.getElementById(msg.target);
        if (rows) {
          rows.insertAdjacentHTML("afterbegin", msg.html);
          var none = document.getElementById("no-events");
          if (none) none.remove();
          Array.prototype.slice.call(rows.children, 0, msg.count).forEach(function (r) { r.classList.add("fresh"); });
        }
      } else if (msg.type === "notice") {
        setBanner(msg.message);
      }
    };
    ws.onclose = function (ev) {
      socketUp = false;
      showState();
      // 4401 signed out, 4403 no longer allowed: the banner holds the server's sentence and the page stops
      // trying; 4429, too many sockets for this user: tried again slowly, as one may have closed meanwhile.
      if (ev.code === 4401 || ev.code === 4403) { stateEl.textContent = "closed"; return; }
      // Spread over half to one and a half times the delay: the pages of a restarted web process do not all come back at once.
      var wait = ev.code === 4429 ? 30000 : delay * (0.5 + Math.random());
      setTimeout(function () { connect(Math.min(delay * 2, 10000)); }, wait);
    };
  }
  connect(1000);
})();
