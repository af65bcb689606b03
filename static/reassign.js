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
  document.addEventListener("theme:changed", draw);
  draw();
})();
