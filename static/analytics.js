// Analytics and lag report charts: cluster throughput per minute and the worst groups' lag (Plotly.js).
// Also inlined into the downloadable report file, so it must not depend on anything but Plotly.
(function () {
  "use strict";
  function draw() {
    var data = document.getElementById("analytics-charts");
    if (!data || !window.Plotly) return;
    var d = JSON.parse(data.textContent);
    var dark = getComputedStyle(document.documentElement).getPropertyValue("--bg").trim().startsWith("#0");
    var layout = function (title) {
      return {height: 280, margin: {l: 60, r: 10, t: 10, b: 40}, paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)",
              font: {color: dark ? "#e3e7ef" : "#1d2330"}, legend: {orientation: "h", y: -0.25},
              yaxis: {title: {text: title}, rangemode: "tozero", gridcolor: "rgba(128,128,128,0.2)"},
              xaxis: {gridcolor: "rgba(128,128,128,0.2)", rangeselector: {bgcolor: dark ? "#242b38" : "#eef0f4", activecolor: dark ? "#3b4660" : "#d0d5de",
                font: {color: dark ? "#e3e7ef" : "#1d2330"}, buttons: [
                {count: 15, label: "15m", step: "minute", stepmode: "backward"},
                {count: 1, label: "1h", step: "hour", stepmode: "backward"},
                {count: 1, label: "1d", step: "day", stepmode: "backward"}, {step: "all", label: "all"}]}}};
    };
    var tp = document.getElementById("throughput-chart");
    if (tp) {
      Plotly.react(tp, [{x: d.throughput.t.map(function (t) { return new Date(t); }), y: d.throughput.messages_per_s,
                         type: "scatter", mode: "lines+markers", marker: {size: 5}, name: "messages/s", line: {color: "#3b5bdb"}}],
                   layout("messages/s"), {displayModeBar: false, responsive: true});
    }
    var lag = document.getElementById("lag-chart");
    if (lag) {
      var traces = Object.keys(d.lag).map(function (g) {
        return {x: d.lag[g].t.map(function (t) { return new Date(t); }), y: d.lag[g].lag, type: "scatter", mode: "lines+markers", marker: {size: 5}, name: g};
      });
      Plotly.react(lag, traces, layout("lag (messages)"), {displayModeBar: false, responsive: true});
    }
  }
  document.addEventListener("theme:changed", draw);
  draw();
})();
