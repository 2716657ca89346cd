// Warden console: the live inbox and the deadline countdown. Every page works without it.
"use strict";
(function () {
  function countdown() {
    var now = Date.now();
    document.querySelectorAll(".deadline[data-deadline]").forEach(function (el) {
      var at = Date.parse(el.getAttribute("data-deadline"));
      if (isNaN(at)) { return; }
      var s = Math.max(0, Math.round((at - now) / 1000));
      var m = Math.floor(s / 60);
      el.textContent = s === 0 ? "deadline passed: denied" :
        "denies in " + (m > 0 ? m + " min " : "") + (s % 60) + " s";
      el.classList.toggle("soon", s < 60);
    });
  }

  function fill(card, c) {
    var el = card.querySelector.bind(card);
    var root = card.firstElementChild;
    root.setAttribute("data-id", c.id);
    root.setAttribute("aria-label", "Approval " + c.tool);
    el(".tool").textContent = c.tool;
    el(".reason").textContent = c.reason || "";
    el(".args").textContent = c.args ? JSON.stringify(c.args, null, 2) : "";
    el(".session").textContent = c.session || "";
    el(".tenant").textContent = c.tenant || "";
    el(".deadline").setAttribute("data-deadline", c.deadline);
    el("form").setAttribute("action", "/inbox/" + encodeURIComponent(c.id));
    el("input[name=digest]").value = c.digest;
  }

  function live(list) {
    var tpl = document.getElementById("card-template");
    var none = document.getElementById("no-cards");
    var src = new EventSource(list.getAttribute("data-events"));
    src.addEventListener("open", function () { list.setAttribute("data-live", "1"); });
    src.addEventListener("card", function (ev) {
      var c = JSON.parse(ev.data);
      var old = list.querySelector('[data-id="' + CSS.escape(c.id) + '"]');
      if (c.state !== "pending") {
        if (old) { old.remove(); }
      } else if (!old) {
        var card = tpl.content.cloneNode(true);
        fill(card, c);
        list.prepend(card);
      }
      none.hidden = list.children.length > 0;
      countdown();
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var list = document.getElementById("cards");
    if (list && window.EventSource) { live(list); }
    countdown();
    setInterval(countdown, 1000);
  });
})();
