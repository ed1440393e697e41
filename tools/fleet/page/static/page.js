// The fleet page (tools/fleet/page): draws layout.json (racks, inventory facts) and
// view.json (each node's state, written by `fleet page`). Every value is untrusted text:
// it reaches the DOM through textContent and setAttribute only, never as HTML.
"use strict";
(function () {
  var U = 9; // px per rack unit
  var layout = null;
  var view = null;
  var selected = null;
  var stateNames = {};

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    if (text !== undefined && text !== null) { e.textContent = String(text); }
    return e;
  }

  function getJSON(name) {
    return fetch(name, { cache: "no-store" }).then(function (r) {
      if (!r.ok) { throw new Error(name + ": HTTP " + r.status); }
      return r.json();
    });
  }

  function nodeState(host) {
    var v = view && view.nodes ? view.nodes[host] : null;
    var s = v && typeof v.state === "string" ? v.state : "unknown";
    return Object.prototype.hasOwnProperty.call(stateNames, s) ? s : "unknown";
  }

  function nodeBox(host, extra) {
    var b = el("button", "dev node " + (extra || ""), host);
    var s = nodeState(host);
    b.type = "button";
    b.classList.add("state-" + s);
    b.setAttribute("data-node", host);
    b.setAttribute("data-state", s);
    b.title = host + ": " + stateNames[s];
    b.addEventListener("click", function () { select(host); });
    return b;
  }

  function drawRack(rack) {
    var box = el("div", "rack");
    box.setAttribute("data-rack", rack.name);
    box.appendChild(el("h3", null, rack.name + " (" + rack.height + "U)"));
    var units = el("div", "units");
    units.style.height = rack.height * U + "px";
    rack.devices.forEach(function (d) {
      var top = d.unit + d.height - 1;
      var b = d.kind === "node" ? nodeBox(d.name)
        : el("div", "dev switch", d.name + " " + d.model);
      if (d.kind !== "node") { b.setAttribute("data-switch", d.name); }
      b.style.top = (rack.height - top) * U + "px";
      b.style.height = d.height * U + "px";
      b.setAttribute("data-unit", String(d.unit));
      units.appendChild(b);
    });
    box.appendChild(units);
    return box;
  }

  function drawLegend() {
    var lg = document.getElementById("legend");
    lg.textContent = "";
    lg.appendChild(el("h2", null, "Legend"));
    var counts = {};
    Object.keys(layout.nodes).forEach(function (h) {
      var s = nodeState(h);
      counts[s] = (counts[s] || 0) + 1;
    });
    layout.states.forEach(function (pair) {
      var item = el("div", "item");
      item.appendChild(el("span", "swatch state-" + pair[0]));
      item.appendChild(el("span", null, pair[1] + ": " + (counts[pair[0]] || 0)));
      item.setAttribute("data-legend", pair[0]);
      lg.appendChild(item);
    });
  }

  function row(table, label, value) {
    var tr = el("tr");
    tr.appendChild(el("td", null, label));
    tr.appendChild(el("td", null, value === null || value === undefined ? "-" : value));
    table.appendChild(tr);
  }

  function ports(iface) {
    return iface.switch && iface.port ? iface.switch + " port " + iface.port : "not cabled";
  }

  function select(host) {
    var facts = layout.nodes[host];
    if (!facts) { return; }
    selected = host;
    document.querySelectorAll(".dev.selected").forEach(function (e) {
      e.classList.remove("selected");
    });
    document.querySelectorAll(".dev.node").forEach(function (e) {
      if (e.getAttribute("data-node") === host) { e.classList.add("selected"); }
    });
    var v = (view && view.nodes && view.nodes[host]) || { problems: [], fields: [] };
    var d = document.getElementById("details");
    d.textContent = "";
    d.setAttribute("data-node", host);
    d.appendChild(el("h2", null, host));
    var s = nodeState(host);
    var badge = el("p", "badge state-" + s, stateNames[s]);
    badge.setAttribute("data-state", s);
    d.appendChild(badge);
    d.appendChild(el("h3", null, "Problems"));
    var ul = el("ul", "problems");
    (v.problems || []).forEach(function (p) { ul.appendChild(el("li", null, p)); });
    if (!ul.children.length) { ul.appendChild(el("li", "hint", "none")); }
    d.appendChild(ul);
    d.appendChild(el("h3", null, "Status"));
    var st = el("table", "status");
    row(st, "status", v.status);
    (v.fields || []).forEach(function (f) { row(st, f[0], f[1]); });
    d.appendChild(st);
    d.appendChild(el("h3", null, "Inventory"));
    var inv = el("table", "inventory");
    row(inv, "group", facts.group + " (profile " + facts.profile + ")");
    row(inv, "roles", (facts.roles || []).join(", "));
    row(inv, "partition", facts.partition);
    row(inv, "lifecycle", facts.state);
    row(inv, "address", facts.address);
    (facts.interfaces || []).forEach(function (i) {
      row(inv, i.nic, (i.address || "-") + " on " + i.network + ", mac " + (i.mac || "-") +
        ", " + ports(i));
    });
    var b = facts.bmc || {};
    row(inv, "bmc", (b.address || "-") + " (" + b.protocol + "), mac " + b.mac + ", " + ports(b));
    row(inv, "serial", facts.serial);
    d.appendChild(inv);
  }

  function draw() {
    stateNames = {};
    layout.states.forEach(function (p) { stateNames[p[0]] = p[1]; });
    document.getElementById("title").textContent = "fleet: site " + layout.site;
    var racks = document.getElementById("racks");
    racks.textContent = "";
    var notes = el("ul", "notices");
    notes.id = "notices";
    ((view && view.notices) || []).forEach(function (n) { notes.appendChild(el("li", null, n)); });
    if (notes.children.length) { racks.appendChild(notes); }
    layout.rows.forEach(function (r) {
      var sec = el("div", "row");
      sec.appendChild(el("h2", null, r.label));
      var line = el("div", "rackline");
      r.racks.forEach(function (rack) { line.appendChild(drawRack(rack)); });
      sec.appendChild(line);
      racks.appendChild(sec);
    });
    if (layout.unplaced.length) {
      var un = el("div", "row");
      un.id = "unplaced";
      un.appendChild(el("h2", null, "in no rack (" + layout.unplaced.length + ")"));
      layout.unplaced.forEach(function (h) { un.appendChild(nodeBox(h)); });
      racks.appendChild(un);
    }
    if (view && view.unknown_nodes && view.unknown_nodes.length) {
      racks.appendChild(el("p", "hint", "status for nodes the inventory does not have: " +
        view.unknown_nodes.join(", ")));
    }
    drawLegend();
    var collected = view && view.collected_ts != null ? stamp(view.collected_ts * 1000)
      : view && view.collected;
    var when = !view ? "no status yet" : (collected ? "status collected " + collected +
      ", " : "") + "page written " + (stamp(Date.parse(view.refreshed)) || view.refreshed);
    document.getElementById("refreshed").textContent = "last refreshed: " + when +
      "; loaded " + stamp(Date.now(), true);
    var want = selected || decodeURIComponent(location.hash.replace(/^#node=/, ""));
    if (want && layout.nodes[want]) { select(want); }
  }

  // A time as people read it, as fleet.master.text.stamp writes one: UTC and its age
  // (the largest whole unit), the age counted now: the page redraws every minute.
  function stamp(ms, noAge) {
    var d = new Date(typeof ms === "number" ? ms : NaN);
    if (isNaN(d.getTime())) { return null; }  // not a time, or out of Date's range
    var utc = d.toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
    var s = Math.max(0, (Date.now() - ms) / 1000), age = Math.floor(s) + "s";
    [["d", 86400], ["h", 3600], ["m", 60]].some(function (u) {
      if (s >= u[1]) { age = Math.floor(s / u[1]) + u[0]; return true; }
      return false;
    });
    return noAge ? utc : utc + " (" + age + " ago)";
  }

  function fail(err) {
    var e = document.getElementById("error");
    e.hidden = false;
    e.textContent = "fleet page: " + err.message;
  }

  function refresh() {
    return getJSON("layout.json").then(function (l) {
      layout = l;
      return getJSON("view.json").then(function (v) { view = v; }, function (err) {
        view = null;
        fail(err);
      });
    }).then(draw).catch(fail);
  }

  document.addEventListener("DOMContentLoaded", function () {
    document.getElementById("reload").addEventListener("click", refresh);
    refresh();
    setInterval(refresh, 60000);
  });
})();
