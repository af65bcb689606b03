// Message browser: the newest messages as soon as the page opens; scans with live progress and stop,
// paging, live tail with pause, export, republish.
(function () {
  "use strict";
  var form = document.getElementById("browse-form");
  if (!form) return;
  var rows = document.getElementById("message-rows");
  var progress = document.getElementById("scan-progress");
  var stopButton = document.getElementById("stop-button");
  var scanButton = document.getElementById("scan-button");
  var tailButton = document.getElementById("tail-button");
  var pauseButton = document.getElementById("pause-button");
  var errorBox = document.getElementById("ws-error");
  var pager = document.getElementById("pager");
  var noMessages = document.getElementById("no-messages");
  var paused = false, buffered = [], tailing = false, ws = null, positions = "";
  // Each scan is numbered; replies of a scan that was replaced (or given up for the tail) are ignored.
  var scanId = 0, autoscan = form.dataset.autoscan === "1";

  function params(extra) {
    var data = {};
    new FormData(form).forEach(function (v, k) { if (k !== "run" && v !== "") data[k] = v; });
    Object.keys(extra || {}).forEach(function (k) { data[k] = extra[k]; });
    return data;
  }
  function query(extra) { return new URLSearchParams(params(extra)).toString(); }
  function showError(text) {
    if (text) { errorBox.textContent = text; errorBox.classList.remove("hidden"); } else { errorBox.classList.add("hidden"); }
  }
  function exportLinks() {
    var api = "/api/v1/clusters/" + encodeURIComponent(document.getElementById("live-status").dataset.cluster) +
      "/topics/" + encodeURIComponent(form.dataset.ws.split("/topics/")[1].split("/messages/")[0]) + "/messages/?";
    document.getElementById("export-jsonl").href = api + query({format: "jsonl", limit: "10000"});
    document.getElementById("export-csv").href = api + query({format: "csv", limit: "10000"});
  }
  form.addEventListener("input", exportLinks);
  exportLinks();

  function connect() {
    var proto = location.protocol === "https:" ? "wss://" : "ws://";
    ws = new WebSocket(proto + location.host + form.dataset.ws);
    ws.onopen = function () {
      if (autoscan) { autoscan = false; scan(); }  // the newest messages, without a click
    };
    ws.onmessage = function (ev) {
      var msg = JSON.parse(ev.data);
      if ((msg.type === "progress" || msg.type === "result" || msg.type === "error") && "id" in msg && msg.id !== scanId) {
        return;  // a replaced scan
      }
      if (msg.type === "progress") {
        if (!msg.done) progress.textContent = "scanning… read " + msg.scanned + ", matched " + msg.matched;
      } else if (msg.type === "result") {
        rows.innerHTML = msg.html;
        noMessages.classList.toggle("hidden", msg.count > 0);
        progress.textContent = "read " + msg.scanned + ", matched " + msg.matched + " · " + (msg.reason || "");
        positions = msg.positions;
        document.getElementById("earlier-page").href = "?" + query({run: "1", direction: "backward", positions: msg.earlier});
        document.getElementById("later-page").href = "?" + query({run: "1", direction: "forward", positions: msg.later});
        pager.classList.toggle("hidden", !msg.count && !msg.stopped);  // a stopped scan can be continued
        scanButton.disabled = false; stopButton.disabled = true;
      } else if (msg.type === "records") {
        if (paused) { buffered.push(msg.html); pauseButton.textContent = "Resume (" + buffered.length + " batches waiting)"; }
        else { rows.insertAdjacentHTML("afterbegin", msg.html); }
      } else if (msg.type === "tailing") {
        tailing = true; tailButton.textContent = "Stop tail"; pauseButton.disabled = false;
        progress.textContent = "following new messages…";
      } else if (msg.type === "tail_stopped") {
        tailing = false; tailButton.textContent = "Live tail"; pauseButton.disabled = true;
      } else if (msg.type === "error") {
        showError(msg.message); scanButton.disabled = false; stopButton.disabled = true;
      }
    };
    ws.onclose = function (ev) {
      // 4401 signed out, 4403 no longer allowed: the error box holds the server's sentence and the page
      // stops trying; 4429, too many sockets for this user: tried again slowly.
      if (ev.code === 4401 || ev.code === 4403) {
        ws = null; tailing = false;
        scanButton.disabled = stopButton.disabled = tailButton.disabled = pauseButton.disabled = true;
        return;
      }
      setTimeout(connect, ev.code === 4429 ? 30000 : 2000);
    };
  }
  connect();

  function scan() {
    showError("");
    scanId += 1;
    scanButton.disabled = true; stopButton.disabled = false;
    progress.textContent = "scanning…";
    ws.send(JSON.stringify({action: "scan", id: scanId, params: params()}));
  }
  form.addEventListener("submit", function (ev) {
    if (!ws || ws.readyState !== 1) return;  // without the socket the form loads the page instead
    ev.preventDefault();
    autoscan = false;
    history.replaceState(null, "", "?" + query({run: "1"}));
    scan();
  });
  stopButton.addEventListener("click", function () { ws.send(JSON.stringify({action: "stop"})); });
  tailButton.addEventListener("click", function () {
    showError("");
    if (tailing) { ws.send(JSON.stringify({action: "stop_tail"})); return; }
    if (!stopButton.disabled) {  // the tail replaces the rows: a scan still running would overwrite them
      ws.send(JSON.stringify({action: "stop"}));
      scanId += 1; scanButton.disabled = false; stopButton.disabled = true; progress.textContent = "";
    }
    autoscan = false;
    rows.innerHTML = ""; buffered = []; pager.classList.add("hidden"); noMessages.classList.add("hidden"); paused = false; pauseButton.textContent = "Pause";
    ws.send(JSON.stringify({action: "tail", params: params()}));
  });
  pauseButton.addEventListener("click", function () {
    paused = !paused;
    if (!paused) {
      buffered.forEach(function (html) { rows.insertAdjacentHTML("afterbegin", html); });
      buffered = []; pauseButton.textContent = "Pause";
    } else { pauseButton.textContent = "Resume"; }
  });
  rows.addEventListener("click", function (ev) {
    var button = ev.target.closest ? ev.target.closest(".republish") : null;
    if (!button) return;
    var target = prompt("Republish this message to which topic?", form.dataset.ws.split("/topics/")[1].split("/messages/")[0]);
    if (!target) return;
    var f = document.getElementById("republish-form");
    f.partition.value = button.dataset.partition; f.offset.value = button.dataset.offset; f.target.value = target;
    f.submit();
  });
})();
