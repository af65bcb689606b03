// Alert channel form: show the address fields of the chosen kind (a URL, or e-mail addresses).
(function () {
  "use strict";
  var kind = document.getElementById("channel-kind");
  if (!kind) return;
  function show() {
    kind.form.querySelectorAll("[data-kinds]").forEach(function (el) {
      el.classList.toggle("hidden", el.getAttribute("data-kinds").split(" ").indexOf(kind.value) < 0);
    });
  }
  kind.addEventListener("change", show);
  show();
})();

// Alert rule form: show the threshold or status field only for conditions that use it, with its unit.
(function () {
  "use strict";
  var select = document.getElementById("rule-condition");
  if (!select) return;
  var form = select.form;
  var help = {
    group_status: "a group's lag status is at least the chosen status",
    group_lag: "a group's total lag is above the threshold",
    partition_lag: "one of a group's partitions lags by more than the threshold",
    time_lag: "a group's time lag is above the threshold",
    under_replicated: "a topic has partitions with fewer in-sync replicas than replicas",
    under_min_isr: "a topic has partitions below min.insync.replicas",
    offline: "a topic has partitions without a leader",
    broker_down: "a broker left the cluster or the console cannot reach it",
    no_controller: "the cluster has no active controller",
    controller_moved: "the active controller changed",
    quorum_lag: "a KRaft quorum follower is more than the threshold behind the leader",
    produce_rate_zero: "a topic received no records for the rule's duration (at least 60 s)",
    job_failed: "a reassignment or an analytics run failed"
  };
  function show() {
    var option = select.options[select.selectedIndex];
    var unit = option.getAttribute("data-unit");
    form.querySelector("[data-needs=threshold]").classList.toggle("hidden", !unit);
    form.querySelector("[data-needs=status]").classList.toggle("hidden", select.value !== "group_status");
    document.getElementById("threshold-unit").textContent = unit || "";
    document.getElementById("condition-help").textContent = (help[select.value] || "") + " · target: " + option.getAttribute("data-target");
  }
  select.addEventListener("change", show);
  show();
})();
