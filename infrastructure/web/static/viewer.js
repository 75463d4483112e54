// agentlog serve: progressive enhancement only. Pages work without this file.
// Live rows arrive as server-sent events and are added with textContent, never
// as markup, so nothing a session holds can become HTML here.
"use strict";

(function () {
  function cell(row, value, className) {
    var td = document.createElement("td");
    if (className) td.className = className;
    if (value instanceof Node) td.appendChild(value); else td.textContent = value;
    row.appendChild(td);
    return td;
  }

  function when(ms) {
    if (typeof ms !== "number") return "";
    var d = new Date(ms);
    return isNaN(d) ? "" : d.toISOString().replace("T", " ").slice(0, 19);
  }

  function follow(url) {
    var rows = document.getElementById("timeline-rows");
    var count = document.getElementById("event-count");
    var table = document.getElementById("timeline");
    var atEnd = !document.querySelector("section.timeline a[rel=next]");
    var status = document.createElement("span");
    status.id = "live-status";
    status.textContent = "connecting…";
    var heading = document.querySelector("section.timeline h2");
    if (heading) { heading.appendChild(document.createTextNode(" ")); heading.appendChild(status); }
    var source = new EventSource(url);
    source.onopen = function () { status.textContent = "live"; };
    source.onerror = function () { status.textContent = "reconnecting…"; };
    source.addEventListener("append", function (message) {
      var event;
      try { event = JSON.parse(message.data); } catch (e) { return; }
      if (count && typeof event.count === "number") count.textContent = String(event.count);
      if (table && typeof event.count === "number") table.setAttribute("data-count", String(event.count));
      if (!rows || !atEnd) return;
      var tr = document.createElement("tr");
      tr.className = "ev fresh";
      var link = document.createElement("a");
      link.href = location.pathname.replace(/\/$/, "") + "/event/" + String(event.seq);
      link.textContent = String(event.seq);
      cell(tr, link, "num");
      cell(tr, String(event.type));
      var badge = document.createElement("span");
      badge.className = "surface " + (event.surface === "current" ? "current" : "log-only");
      badge.textContent = event.surface === "current" ? "current" : "log-only";
      cell(tr, badge);
      cell(tr, when(event.time));
      rows.appendChild(tr);
    });
  }

  function foldAll() {
    var tools = document.querySelectorAll("details.tool");
    if (!tools.length) return;
    var heading = document.querySelector("section.conversation h2");
    if (!heading) return;
    var button = document.createElement("button");
    button.type = "button";
    button.className = "fold";
    button.textContent = "expand tool calls";
    var open = false;
    button.addEventListener("click", function () {
      open = !open;
      tools.forEach(function (d) { d.open = open; });
      button.textContent = open ? "fold tool calls" : "expand tool calls";
    });
    heading.appendChild(document.createTextNode(" "));
    heading.appendChild(button);
  }

  document.addEventListener("DOMContentLoaded", function () {
    var live = document.body.getAttribute("data-live");
    if (live && window.EventSource) follow(live);
    foldAll();
  });
})();
