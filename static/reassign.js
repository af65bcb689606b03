// The plan chart: replicas and preferred leaders per broker, before and after (Plotly.js from the plotly package).
(function () {
  "use strict";
  function draw() {
    var data = document.getElementById("plan-brokers");
    var chart = document.getElementById("plan-chart");
    if (!data || !chart || !window.Plotly) return;
    var brokers = JSON.parse(data.textContent);
    var dark = getComputedStyle(document.documentElement).getPropertyValue("--bg").trim().startsWith("#0");
    var color = dark ? "#e3e7ef" : "#1d2330";
    var x = brokers.map(function (b) { return "broker " + b.broker + (b.removed ? " (retiring)" : b.added ? " (new)" : ""); });
    function bar(name, key, c, dash) {
      return {x: x, y: brokers.map(function (b) { return b[key]; }), name: name, type: "bar",
              marker: {color: c, opacity: dash ? 0.45 : 1}};
    }
    Plotly.react(chart, [
      bar("replicas before", "replicas_before", "#3b5bdb", true), bar("replicas after", "replicas_after", "#3b5bdb", false),
      bar("leaders before", "leaders_before", "#e8590c", true), bar("leaders after", "leaders_after", "#e8590c", false)
    ], {
      barmode: "group", height: 280, margin: {l: 50, r: 10, t: 10, b: 60}, paper_bgcolor: "rgba(0,0,0,0)",
      plot_bgcolor: "rgba(0,0,0,0)", font: {color: color}, legend: {orientation: "h", y: -0.25},
      yaxis: {title: {text: "count"}, rangemode: "tozero", gridcolor: "rgba(128,128,128,0.2)"}
    }, {displayModeBar: false, responsive: true});
  }
  // The execute and cancel forms follow the job's state as the live progress fragment reports it.
  function actions() {
    var state = document.querySelector("#job-progress .job-state");
    if (!state) return;
    var s = state.dataset.state;
    var exec = document.getElementById("execute-form"), cancel = document.getElementById("cancel-form");
    if (exec) exec.classList.toggle("hidden", s !== "planned");
    if (cancel) {
      cancel.classList.toggle("hidden", ["planned", "queued", "running"].indexOf(s) < 0);
      var button = cancel.querySelector("button");
      if (button) button.textContent = s === "planned" ? "Discard the plan" : "Cancel (moves go back)";
    }
  }
  document.addEventListener("theme:changed", draw);
  document.addEventListener("fragment:updated", actions);
  draw();
  actions();
})();
