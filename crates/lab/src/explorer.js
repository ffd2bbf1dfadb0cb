// The report's explorer: the inputs go to kicklab's model and simulator,
// compiled to WebAssembly (kicklab-wasm) and inlined in the page as
// base64; the answers (JSON) and the charts (SVG drawn by kicklab-report's
// Rust code) come back and are shown. The interface is the module's C ABI:
// kl_input(len) -> where to write the request (key=value lines),
// kl_explore() / kl_simulate() -> the answer's length, kl_output() -> where
// it is.
(function () {
  "use strict";
  var root = document.getElementById("kl-ex");
  if (!root) return;
  function $(id) {
    return document.getElementById(id);
  }
  var NAMES = ["len", "kp", "kc", "wp", "wc", "np", "nc", "sp", "sc", "vp", "vc"];
  var RANGES = {
    len: ["1", "512"],
    kp: ["1", "64"],
    kc: ["1", "64"],
    wp: ["0.1us", "3us"],
    wc: ["0.1us", "3us"],
  };
  var status = $("kl-ex-status");
  var ex = null;
  var enc = new TextEncoder();
  var dec = new TextDecoder();
  var defaults = {};
  NAMES.forEach(function (n) {
    defaults[n] = [$("kl-ex-" + n).value, $("kl-ex-" + n + "-r").value];
  });

  var compiled = null;

  // One request to the module; bad input comes back as {error}. Should
  // the module trap all the same (a bug, or memory exhausted), the error
  // says so and a fresh instance takes the next request.
  function call(fn, text) {
    try {
      var bytes = enc.encode(text);
      var at = ex.kl_input(bytes.length);
      new Uint8Array(ex.memory.buffer, at, bytes.length).set(bytes);
      var n = ex[fn]();
      var out = new Uint8Array(ex.memory.buffer, ex.kl_output(), n);
      return JSON.parse(dec.decode(out));
    } catch (e) {
      ex = new WebAssembly.Instance(compiled, {}).exports;
      return { error: "the model stopped on these inputs (" + e + "); it has been restarted" };
    }
  }

  function pairRequest() {
    var lines = NAMES.map(function (n) {
      return n + "=" + $("kl-ex-" + n).value.trim();
    });
    lines.push("mode=" + $("kl-ex-mode").value);
    return lines;
  }

  function exploreRequest() {
    var lines = pairRequest();
    lines.push(
      "vary=" + $("kl-ex-vary").value + "=" + $("kl-ex-from").value.trim() + ".." +
        $("kl-ex-to").value.trim() + ":" + $("kl-ex-points").value.trim()
    );
    return lines.join("\n");
  }

  function simRequest() {
    var lines = pairRequest();
    lines.push("messages=" + $("kl-ex-messages").value.trim());
    lines.push("seed=" + $("kl-ex-seed").value.trim());
    lines.push("strategy=" + $("kl-ex-strategy").value.trim());
    lines.push("exp=" + ($("kl-ex-exp").checked ? "1" : "0"));
    return lines.join("\n");
  }

  function set(id, text) {
    $(id).textContent = text;
  }

  // A typed value's slider position: a duration's number in us, a
  // distribution's first number, a count as is; null if none.
  function sliderValue(text, unit) {
    var m = /^\s*(?:[a-z]+:)?\s*([0-9]*\.?[0-9]+(?:e[-+]?[0-9]+)?)\s*(ns|us|µs|μs|ms|s)?/i.exec(text);
    if (!m) return null;
    var v = Number(m[1]);
    if (!unit) return v;
    var scale = { ns: 1e-3, us: 1, "µs": 1, "μs": 1, ms: 1e3, s: 1e6 }[(m[2] || "ns").toLowerCase()];
    return v * (scale === undefined ? 1e-3 : scale);
  }

  var M_PER_WAKEUP = { FC: 1, FP: 1, EWC: 1, EWP: 1 };

  function show(r) {
    var charts = [$("kl-ex-chart-t"), $("kl-ex-chart-e")];
    if (r.error) {
      set("kl-ex-error", r.error);
      ["kl-ex-regime", "kl-ex-T", "kl-ex-T-ns", "kl-ex-rate", "kl-ex-E", "kl-ex-E-ns", "kl-ex-m", "kl-ex-round", "kl-ex-poll"].forEach(
        function (id) {
          set(id, "\u2013");
        }
      );
      set("kl-ex-meaning", "");
      set("kl-ex-cmd", "");
      charts.forEach(function (c) {
        c.style.opacity = "0.35";
      });
      return;
    }
    set("kl-ex-error", "");
    set("kl-ex-regime", r.regime);
    set("kl-ex-meaning", "(" + r.meaning + ")" + (r.other_text ? "; " + r.other_text : ""));
    set("kl-ex-T", r.T);
    set("kl-ex-T-ns", String(r.T_ns));
    set("kl-ex-rate", String(Math.round(r.throughput_per_s)));
    set("kl-ex-E", r.E);
    set("kl-ex-E-ns", String(r.E_ns));
    set(
      "kl-ex-m",
      r.m === null || r.m === undefined
        ? "none (no batches in " + r.regime + ")"
        : r.m + (M_PER_WAKEUP[r.regime] ? " (messages per wake-up)" : " (messages beyond L per round, eq. 3)")
    );
    set("kl-ex-round", r.round || "none (no notifications in steady state)");
    set(
      "kl-ex-poll",
      r.poll ? "T_GP = " + r.poll.T + ", E_GP = " + r.poll.E + ": " + r.poll.vs : "\u2013"
    );
    set("kl-ex-cmd", r.command);
    charts.forEach(function (c, i) {
      c.style.opacity = "";
      c.innerHTML = r.charts[i];
      var svg = c.querySelector("svg");
      if (svg && window.kicklabCharts) window.kicklabCharts.init(svg);
    });
  }

  // Recompute and redraw; the time it took goes on the page.
  function changed() {
    if (!ex) return;
    var t0 = performance.now();
    var r = call("kl_explore", exploreRequest());
    var t1 = performance.now();
    show(r);
    var ms = performance.now() - t0;
    set("kl-ex-ms", ms.toFixed(1));
    set("kl-ex-ms-wasm", (t1 - t0).toFixed(1));
    root.setAttribute("data-ms", ms.toFixed(2));
    requestAnimationFrame(function () {
      requestAnimationFrame(function () {
        set("kl-ex-frame", (performance.now() - t0).toFixed(1));
      });
    });
  }

  function simulate() {
    if (!ex) return;
    var t0 = performance.now();
    var r = call("kl_simulate", simRequest());
    var ms = performance.now() - t0;
    if (r.error) {
      set("kl-ex-error", r.error);
      return;
    }
    set("kl-ex-error", "");
    set("kl-ex-sim-T", r.T);
    set("kl-ex-sim-E", r.E);
    // The exact numbers, for whoever compares (the browser test).
    $("kl-ex-sim-T").setAttribute("data-ns", String(r.T_ns));
    $("kl-ex-sim-E").setAttribute("data-ns", String(r.E_ns));
    var m = r.model;
    set("kl-ex-sim-mT", m ? m.T : "no closed form");
    set("kl-ex-sim-mE", m ? m.E : "no closed form");
    set("kl-ex-sim-rT", m ? m.T_ratio.toFixed(4) : "\u2013");
    set("kl-ex-sim-rE", m ? m.E_ratio.toFixed(4) : "\u2013");
    set(
      "kl-ex-sim-more",
      r.messages + " messages measured (" + r.strategy + "; " + r.events + " events) in " + ms.toFixed(1) +
        " ms; E: P " + r.E_p + ", C " + r.E_c + "; notifications per message P\u2192C " +
        r.notifications_p_per_message.toFixed(4) + ", C\u2192P " + r.notifications_c_per_message.toFixed(4) +
        "; who sleeps: " + r.sleeper + (r.latency ? "; latency " + r.latency : "")
    );
    set("kl-ex-sim-cmd", r.command);
  }

  function wire() {
    NAMES.forEach(function (n) {
      var text = $("kl-ex-" + n);
      var slider = $("kl-ex-" + n + "-r");
      var unit = slider.getAttribute("data-unit");
      slider.addEventListener("input", function () {
        text.value = slider.value + unit;
        changed();
      });
      text.addEventListener("input", function () {
        var v = sliderValue(text.value, unit);
        if (v !== null) slider.value = String(v);
        // An unset V follows its N.
        ["vp", "vc"].forEach(function (vn) {
          if (n === "n" + vn[1] && !$("kl-ex-" + vn).value.trim()) {
            var nv = sliderValue(text.value, "us");
            if (nv !== null) $("kl-ex-" + vn + "-r").value = String(nv);
          }
        });
        changed();
      });
    });
    ["kl-ex-mode", "kl-ex-from", "kl-ex-to", "kl-ex-points"].forEach(function (id) {
      $(id).addEventListener("input", changed);
    });
    $("kl-ex-vary").addEventListener("change", function () {
      var r = RANGES[$("kl-ex-vary").value] || ["0us", "10us"];
      $("kl-ex-from").value = r[0];
      $("kl-ex-to").value = r[1];
      changed();
    });
    $("kl-ex-defaults").addEventListener("click", function () {
      NAMES.forEach(function (n) {
        $("kl-ex-" + n).value = defaults[n][0];
        $("kl-ex-" + n + "-r").value = defaults[n][1];
      });
      $("kl-ex-mode").value = "notify";
      $("kl-ex-vary").value = "wp";
      $("kl-ex-from").value = "0.1us";
      $("kl-ex-to").value = "3us";
      $("kl-ex-points").value = "200";
      changed();
    });
    $("kl-ex-run").addEventListener("click", simulate);
    $("kl-ex-form").addEventListener("submit", function (ev) {
      ev.preventDefault();
    });
  }

  function disable() {
    root.querySelectorAll("input, select, button").forEach(function (e) {
      e.disabled = true;
    });
  }

  var b64 = $("kl-wasm").textContent.trim();
  if (!b64) {
    status.textContent = root.getAttribute("data-why");
    disable();
    return;
  }
  var bin = atob(b64);
  var bytes = new Uint8Array(bin.length);
  for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  var t0 = performance.now();
  WebAssembly.instantiate(bytes, {})
    .then(function (m) {
      compiled = m.module;
      ex = m.instance.exports;
      status.textContent =
        "kicklab's model and simulator: a " + Math.round(bytes.length / 1024) + " KiB WebAssembly module, loaded in " +
        (performance.now() - t0).toFixed(0) + " ms.";
      wire();
      changed();
      root.setAttribute("data-ready", "1");
    })
    .catch(function (e) {
      status.textContent = "The explorer's WebAssembly module did not load: " + e;
      disable();
    });
})();
