// History chart of a topic (messages/s) or a group (lag and time lag) from the latest analytics run.
(function () {
  "use strict";
  function draw() {
    var data = document.getElementById("history-data");
    var chart = document.getElementById("history-chart");
    if (!data || !chart || !window.Plotly) return;
    var h = JSON.parse(data.textContent);
    var dark = getComputedStyle(document.documentElement).getPropertyValue("--bg").trim().startsWith("#0");
    var x = h.t.map(function (t) { return new Date(t * 1000); });
    var traces, y1;
    if (h.lag) {
      traces = [{x: x, y: h.lag, name: "lag (messages)", type: "scatter", mode: "lines", line: {color: "#3b5bdb"}},
                {x: x, y: h.time_lag, name: "time lag (s)", type: "scatter", mode: "lines", yaxis: "y2", line: {color: "#e8590c"}}];
      y1 = "lag (messages)";
    } else {
      traces = [{x: x, y: h.messages_per_s, name: "messages/s", type: "scatter", mode: "lines", line: {color: "#3b5bdb"}}];
      y1 = "messages/s";
    }
    Plotly.react(chart, traces, {
      height: 260, margin: {l: 60, r: 60, t: 10, b: 40}, paper_bgcolor: "rgba(0,0,0,0)", plot_bgcolor: "rgba(0,0,0,0)",
      font: {color: dark ? "#e3e7ef" : "#1d2330"}, legend: {orientation: "h", y: -0.3},
      yaxis: {title: {text: y1}, rangemode: "tozero", gridcolor: "rgba(128,128,128,0.2)"},
      yaxis2: {title: {text: "time lag (s)"}, overlaying: "y", side: "right", rangemode: "tozero", showgrid: false},
      xaxis: {gridcolor: "rgba(128,128,128,0.2)", rangeselector: {bgcolor: dark ? "#242b38" : "#eef0f4", activecolor: dark ? "#3b4660" : "#d0d5de",
                font: {color: dark ? "#e3e7ef" : "#1d2330"}, buttons: [
        {count: 15, label: "15m", step: "minute", stepmode: "backward"}, {count: 1, label: "1h", step: "hour", stepmode: "backward"},
        {count: 1, label: "1d", step: "day", stepmode: "backward"}, {step: "all", label: "all"}]}}
    }, {displayModeBar: false, responsive: true});
  }
  document.addEventListener("theme:changed", draw);
  draw();
})();
