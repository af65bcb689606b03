// The group page's lag chart (Plotly.js from the plotly package); redrawn after every live update.
(function () {
  "use strict";
  function draw() {
    var data = document.getElementById("lag-history");
    var chart = document.getElementById("lag-chart");
    if (!data || !chart || !window.Plotly) return;
    var h = JSON.parse(data.textContent);
    if (!h.t.length) return;
    var dark = getComputedStyle(document.documentElement).getPropertyValue("--bg").trim().startsWith("#0");
    var color = dark ? "#e3e7ef" : "#1d2330";
    var times = h.t.map(function (t) { return new Date(t * 1000); });
    Plotly.react(chart, [
      {x: times, y: h.lag, name: "lag (messages)", type: "scatter", mode: "lines", line: {color: "#3b5bdb"}},
      {x: times, y: h.time_lag, name: "time lag (s)", type: "scatter", mode: "lines", yaxis: "y2", line: {color: "#e8590c"}}
    ], {
      height: 260, margin: {l: 60, r: 60, t: 10, b: 40}, paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)",
      font: {color: color}, legend: {orientation: "h", y: -0.25},
      yaxis: {title: {text: "lag (messages)"}, rangemode: "tozero", gridcolor: "rgba(128,128,128,0.2)"},
      yaxis2: {title: {text: "time lag (s)"}, overlaying: "y", side: "right", rangemode: "tozero", showgrid: false,
               tickmode: "auto", nticks: 6},
      xaxis: {gridcolor: "rgba(128,128,128,0.2)"}
    }, {displayModeBar: false, responsive: true});
  }
  document.addEventListener("fragment:updated", draw);
  document.addEventListener("theme:changed", draw);
  draw();
})();
