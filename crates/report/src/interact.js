// kicklab report: values on hover and zoom for every chart (svg.kl-chart,
// svg.kl-map) of the page. Inlined in index.html by kicklab-report; no
// network, no library. A chart works without it (static SVG).
//
// Hover: the nearest point of any series (a line chart) or the cell under
// the pointer (a map) is shown in a tooltip. Zoom: drag a box over the
// plot (a flat box zooms x only and fits y to the data in its x range, a
// narrow one y only; a drag under MIN_BOX px both ways is a click);
// double-click or "reset zoom" goes back. window.kicklabCharts.init(svg) sets up a chart
// drawn later (the explorer's).
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var tip = null;
  var clipId = 0;
  // The least drag, in the chart's pixels, that zooms on an axis.
  var MIN_BOX = 20;

  function tipDiv() {
    if (!tip) {
      tip = document.createElement("div");
      tip.className = "kl-tip";
      tip.setAttribute("role", "status");
      document.body.appendChild(tip);
    }
    return tip;
  }

  function showTip(ev, lines) {
    var t = tipDiv();
    t.textContent = "";
    lines.forEach(function (line, i) {
      var d = document.createElement(i === 0 ? "b" : "div");
      d.textContent = line;
      t.appendChild(d);
    });
    t.style.display = "block";
    var x = ev.clientX + 14;
    var y = ev.clientY + 14;
    if (x + t.offsetWidth > window.innerWidth - 4) x = ev.clientX - t.offsetWidth - 14;
    if (y + t.offsetHeight > window.innerHeight - 4) y = ev.clientY - t.offsetHeight - 14;
    t.style.left = Math.max(0, x) + window.scrollX + "px";
    t.style.top = Math.max(0, y) + window.scrollY + "px";
  }

  function hideTip() {
    if (tip) tip.style.display = "none";
  }

  // A value for the tooltip: 6 significant digits, no trailing zeros.
  function fmt(v) {
    if (!isFinite(v)) return String(v);
    var a = Math.abs(v);
    if (a !== 0 && (a >= 1e7 || a < 1e-4)) return v.toExponential(4);
    return String(Number(v.toPrecision(6)));
  }

  // About n round ticks in [a, b] (as the Rust side draws them).
  function niceTicks(a, b, n) {
    var raw = (b - a) / Math.max(1, n);
    if (!(raw > 0) || !isFinite(raw)) return { ticks: [a], step: 1 };
    var mag = Math.pow(10, Math.floor(Math.log10(raw)));
    var step = 10 * mag;
    [1, 2, 2.5, 5, 10].some(function (m) {
      if (m * mag >= raw) {
        step = m * mag;
        return true;
      }
      return false;
    });
    var out = [];
    for (var v = Math.ceil(a / step) * step; v <= b + step * 1e-9; v += step) {
      out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
    }
    return { ticks: out, step: step };
  }

  function tickLabel(v, step) {
    var d = Math.max(0, -Math.floor(Math.log10(step)));
    var scaled = step * Math.pow(10, d);
    if (Math.abs(scaled - Math.round(scaled)) > 1e-9) d += 1;
    return v.toFixed(Math.min(d, 20));
  }

  function make(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    Object.keys(attrs).forEach(function (k) {
      e.setAttribute(k, attrs[k]);
    });
    if (parent) parent.appendChild(e);
    return e;
  }

  function svgPoint(svg, ev) {
    var m = svg.getScreenCTM();
    if (!m) return { x: -1, y: -1 };
    var p = svg.createSVGPoint();
    p.x = ev.clientX;
    p.y = ev.clientY;
    return p.matrixTransform(m.inverse());
  }

  function nums(s) {
    return s.trim().split(/[\s,]+/).map(Number);
  }

  // The geometry of every element in the zoom group, as drawn.
  function record(zoom) {
    var items = [];
    zoom.querySelectorAll("*").forEach(function (e) {
      var t = e.tagName.toLowerCase();
      var a = function (k) {
        return Number(e.getAttribute(k));
      };
      if (t === "polyline") items.push({ e: e, t: t, v: nums(e.getAttribute("points")) });
      else if (t === "circle") items.push({ e: e, t: t, v: [a("cx"), a("cy")] });
      else if (t === "line") items.push({ e: e, t: t, v: [a("x1"), a("y1"), a("x2"), a("y2")] });
      else if (t === "rect") items.push({ e: e, t: t, v: [a("x"), a("y"), a("width"), a("height")] });
      else if (t === "path") {
        // The markers of points above the axis: "M x y ..." at the top edge.
        var d = e.getAttribute("d");
        var m = /^M\s*([-\d.]+)[\s,]+([-\d.]+)(.*)$/.exec(d);
        if (m) items.push({ e: e, t: t, v: [Number(m[1]), Number(m[2])], rest: m[3] });
      }
    });
    return items;
  }

  function Chart(svg) {
    this.svg = svg;
    this.map = svg.classList.contains("kl-map");
    var md = svg.querySelector("metadata.kl-data");
    this.meta = md ? JSON.parse(md.textContent) : null;
    var p = nums(svg.getAttribute("data-plot"));
    this.plot = { x: p[0], y: p[1], w: p[2], h: p[3] };
    this.view = { x: p[0], y: p[1], w: p[2], h: p[3] };
    this.zoom = svg.querySelector("g.kl-zoom");
    this.ticks = svg.querySelector("g.kl-ticks");
    this.labels = svg.querySelector("g.kl-labels");
    this.items = this.zoom ? record(this.zoom) : [];
    // Clip what moves to the plot.
    var id = "kl-clip-" + ++clipId;
    var defs = make("defs", {}, null);
    var cp = make("clipPath", { id: id }, defs);
    make("rect", { x: p[0], y: p[1], width: p[2], height: p[3] }, cp);
    svg.insertBefore(defs, svg.firstChild);
    if (this.zoom) this.zoom.setAttribute("clip-path", "url(#" + id + ")");
    this.newTicks = make("g", { class: "kl-ticks2" }, null);
    svg.insertBefore(this.newTicks, this.zoom || null);
    this.hl = make("circle", { r: 6, fill: "none", stroke: "#000", "stroke-width": 2, class: "kl-hl", display: "none" }, svg);
    this.reset = make("text", { class: "kl-reset", "font-size": 14, fill: "#1f5fbf", "text-anchor": "end", display: "none" }, svg);
    this.reset.textContent = "\u21ba reset zoom";
    this.reset.setAttribute("x", p[0] + p[2]);
    this.reset.setAttribute("y", p[1] - 6);
    this.sel = null;
    this.pixels = this.map ? null : this.pointPixels();
    if (this.map) {
      // The cells' own text goes to our tooltip (no second, native one).
      svg.querySelectorAll("g.kl-zoom rect").forEach(function (r) {
        var t = r.querySelector("title");
        if (t) {
          r.setAttribute("data-tip", t.textContent);
          t.remove();
        }
      });
    }
    this.listen();
  }

  // Every finite point of every series at its unzoomed pixel position.
  Chart.prototype.pointPixels = function () {
    var m = this.meta;
    var out = [];
    if (!m) return out;
    var pl = this.plot;
    m.s.forEach(function (ser, i) {
      ser.p.forEach(function (pt) {
        var yv = m.log ? (pt[1] > 0 ? Math.log10(pt[1]) : NaN) : pt[1];
        var xv = m.xlog ? (pt[0] > 0 ? Math.log10(pt[0]) : NaN) : pt[0];
        if (!isFinite(yv) || !isFinite(xv)) return;
        out.push({
          s: i,
          x: pt[0],
          y: pt[1],
          px: pl.x + ((xv - m.x[0]) / (m.x[1] - m.x[0])) * pl.w,
          py: pl.y + pl.h - ((yv - m.y[0]) / (m.y[1] - m.y[0])) * pl.h,
        });
      });
    });
    return out;
  };

  Chart.prototype.tx = function (x) {
    return this.plot.x + ((x - this.view.x) * this.plot.w) / this.view.w;
  };
  Chart.prototype.ty = function (y) {
    return this.plot.y + ((y - this.view.y) * this.plot.h) / this.view.h;
  };
  // A drawn position back to the unzoomed one.
  Chart.prototype.ux = function (x) {
    return this.view.x + ((x - this.plot.x) * this.view.w) / this.plot.w;
  };
  Chart.prototype.uy = function (y) {
    return this.view.y + ((y - this.plot.y) * this.view.h) / this.plot.h;
  };

  Chart.prototype.zoomed = function () {
    var p = this.plot;
    var v = this.view;
    return v.x !== p.x || v.y !== p.y || v.w !== p.w || v.h !== p.h;
  };

  Chart.prototype.apply = function () {
    var self = this;
    var f = function (v) {
      return v.toFixed(2);
    };
    this.items.forEach(function (it) {
      var v = it.v;
      var e = it.e;
      if (it.t === "polyline") {
        var pts = [];
        for (var i = 0; i + 1 < v.length; i += 2) pts.push(f(self.tx(v[i])) + "," + f(self.ty(v[i + 1])));
        e.setAttribute("points", pts.join(" "));
      } else if (it.t === "circle") {
        e.setAttribute("cx", f(self.tx(v[0])));
        e.setAttribute("cy", f(self.ty(v[1])));
      } else if (it.t === "line") {
        e.setAttribute("x1", f(self.tx(v[0])));
        e.setAttribute("y1", f(self.ty(v[1])));
        e.setAttribute("x2", f(self.tx(v[2])));
        e.setAttribute("y2", f(self.ty(v[3])));
      } else if (it.t === "rect") {
        var x0 = self.tx(v[0]);
        var y0 = self.ty(v[1]);
        e.setAttribute("x", f(x0));
        e.setAttribute("y", f(y0));
        e.setAttribute("width", f(self.tx(v[0] + v[2]) - x0));
        e.setAttribute("height", f(self.ty(v[1] + v[3]) - y0));
      } else if (it.t === "path") {
        // Stays on the top edge: what is above the axis stays above.
        e.setAttribute("d", "M" + f(self.tx(v[0])) + " " + v[1] + it.rest);
      }
    });
    var z = this.zoomed();
    if (this.ticks) this.ticks.style.display = z ? "none" : "";
    if (this.labels) this.labels.style.display = z ? "none" : "";
    this.reset.setAttribute("display", z ? "inline" : "none");
    this.newTicks.textContent = "";
    if (z) this.drawTicks();
    this.hl.setAttribute("display", "none");
  };

  Chart.prototype.tick = function (x, y, text, anchor, grid) {
    var p = this.plot;
    if (grid === "x") make("line", { x1: x, y1: p.y, x2: x, y2: p.y + p.h, stroke: "#e4e4e4" }, this.newTicks);
    if (grid === "y") make("line", { x1: p.x, y1: y, x2: p.x + p.w, y2: y, stroke: "#e4e4e4" }, this.newTicks);
    var t = make("text", { class: "tick", x: x, y: y, "font-size": 14, "text-anchor": anchor }, this.newTicks);
    t.textContent = text;
  };

  // Ticks for the zoomed view.
  Chart.prototype.drawTicks = function () {
    var self = this;
    var p = this.plot;
    var m = this.meta;
    if (!m) return;
    var bottom = p.y + p.h;
    if (this.map) {
      var nx = m.xs.length;
      var ny = m.ys.length;
      var cw = p.w / nx;
      var ch = p.h / ny;
      var shown = function (n, pos, lo, hi) {
        var idx = [];
        for (var i = 0; i < n; i++) if (pos(i) >= lo && pos(i) <= hi) idx.push(i);
        if (idx.length > 5) {
          var k = idx.length - 1;
          idx = [0, 0.25, 0.5, 0.75, 1].map(function (q) {
            return idx[Math.round(q * k)];
          });
        }
        return idx;
      };
      var xpos = function (i) {
        return self.tx(p.x + (i + 0.5) * cw);
      };
      var ypos = function (j) {
        return self.ty(p.y + (ny - 1 - j + 0.5) * ch);
      };
      shown(nx, xpos, p.x, p.x + p.w).forEach(function (i) {
        self.tick(xpos(i), bottom + 18, fmt(m.xs[i]), "middle", null);
      });
      shown(ny, ypos, p.y, bottom).forEach(function (j) {
        self.tick(p.x - 6, ypos(j) + 5, fmt(m.ys[j]), "end", null);
      });
      return;
    }
    // Data ranges of the view.
    var dx = function (px) {
      return m.x[0] + ((px - p.x) / p.w) * (m.x[1] - m.x[0]);
    };
    var dy = function (py) {
      return m.y[1] - ((py - p.y) / p.h) * (m.y[1] - m.y[0]);
    };
    var v = this.view;
    var xa = dx(v.x);
    var xb = dx(v.x + v.w);
    if (m.xlog) {
      // Powers of 2 in the view (x in log10 units).
      var a = Math.ceil(xa / Math.LOG10_2 - 1e-9);
      var b = Math.floor(xb / Math.LOG10_2 + 1e-9);
      for (var e = a; e <= b; e++) {
        var lx = e * Math.LOG10_2;
        self.tick(p.x + ((lx - xa) / (xb - xa)) * p.w, bottom + 18, fmt(Math.pow(2, e)), "middle", "x");
      }
    } else {
      var xt = niceTicks(xa, xb, Math.max(2, Math.min(10, Math.floor(p.w / 90))));
      xt.ticks.forEach(function (x) {
        var px = p.x + ((x - xa) / (xb - xa)) * p.w;
        self.tick(px, bottom + 18, tickLabel(x, xt.step), "middle", "x");
      });
    }
    var ya = dy(v.y + v.h);
    var yb = dy(v.y);
    var ypx = function (y) {
      return bottom - ((y - ya) / (yb - ya)) * p.h;
    };
    if (m.log) {
      var ts = [];
      for (var e = Math.floor(ya); e <= Math.ceil(yb); e++) {
        [1, 2, 5].forEach(function (k) {
          var t = Math.log10(k) + e;
          if (t >= ya && t <= yb) ts.push(t);
        });
      }
      ts.forEach(function (t) {
        self.tick(p.x - 6, ypx(t) + 5, fmt(Math.pow(10, t)), "end", "y");
      });
    } else {
      var yt = niceTicks(ya, yb, 6);
      yt.ticks.forEach(function (y) {
        self.tick(p.x - 6, ypx(y) + 5, tickLabel(y, yt.step), "end", "y");
      });
    }
  };

  Chart.prototype.inPlot = function (q) {
    var p = this.plot;
    return q.x >= p.x && q.x <= p.x + p.w && q.y >= p.y && q.y <= p.y + p.h;
  };

  Chart.prototype.hover = function (ev) {
    var q = svgPoint(this.svg, ev);
    if (this.sel || !this.inPlot(q)) {
      this.hl.setAttribute("display", "none");
      hideTip();
      return;
    }
    if (this.map) {
      var r = ev.target.closest ? ev.target.closest("rect[data-tip]") : null;
      if (!r) {
        hideTip();
        return;
      }
      var text = r.getAttribute("data-tip");
      var k = text.lastIndexOf(": ");
      var head = k >= 0 ? text.slice(k + 2) : text;
      var rest = k >= 0 ? text.slice(0, k).split(", ") : [];
      showTip(ev, [head].concat(rest));
      return;
    }
    var best = null;
    var bd = 30 * 30;
    for (var i = 0; i < this.pixels.length; i++) {
      var pt = this.pixels[i];
      var x = this.tx(pt.px);
      var y = this.ty(pt.py);
      if (x < this.plot.x - 1 || x > this.plot.x + this.plot.w + 1) continue;
      var d = (x - q.x) * (x - q.x) + (y - q.y) * (y - q.y);
      if (d < bd) {
        bd = d;
        best = pt;
      }
    }
    if (!best) {
      this.hl.setAttribute("display", "none");
      hideTip();
      return;
    }
    var m = this.meta;
    // Series drawn through the same point (model and simulator agreeing)
    // are named together.
    var names = [];
    this.pixels.forEach(function (pt) {
      if (pt.x === best.x && pt.y === best.y && names.indexOf(m.s[pt.s].n) < 0) names.push(m.s[pt.s].n);
    });
    var hy = Math.min(Math.max(this.ty(best.py), this.plot.y), this.plot.y + this.plot.h);
    this.hl.setAttribute("cx", this.tx(best.px));
    this.hl.setAttribute("cy", hy);
    this.hl.setAttribute("stroke", m.s[best.s].c);
    this.hl.setAttribute("display", "inline");
    showTip(ev, [names.join(" = "), m.xl + " = " + fmt(best.x), m.yl + " = " + fmt(best.y)]);
  };

  Chart.prototype.listen = function () {
    var self = this;
    var svg = this.svg;
    svg.addEventListener("mousemove", function (ev) {
      self.hover(ev);
    });
    svg.addEventListener("mouseleave", function () {
      self.hl.setAttribute("display", "none");
      hideTip();
    });
    svg.addEventListener("dblclick", function (ev) {
      ev.preventDefault();
      self.view = { x: self.plot.x, y: self.plot.y, w: self.plot.w, h: self.plot.h };
      self.apply();
    });
    this.reset.addEventListener("click", function () {
      self.view = { x: self.plot.x, y: self.plot.y, w: self.plot.w, h: self.plot.h };
      self.apply();
    });
    svg.addEventListener("mousedown", function (ev) {
      if (ev.button !== 0) return;
      var q = svgPoint(svg, ev);
      if (!self.inPlot(q)) return;
      ev.preventDefault();
      hideTip();
      var start = q;
      self.sel = make("rect", { class: "kl-sel", x: q.x, y: q.y, width: 0, height: 0, fill: "rgba(31,119,180,0.12)", stroke: "#1f77b4" }, svg);
      var clampX = function (x) {
        return Math.min(Math.max(x, self.plot.x), self.plot.x + self.plot.w);
      };
      var clampY = function (y) {
        return Math.min(Math.max(y, self.plot.y), self.plot.y + self.plot.h);
      };
      var box = function (e) {
        var c = svgPoint(svg, e);
        var x0 = Math.min(start.x, clampX(c.x));
        var y0 = Math.min(start.y, clampY(c.y));
        return { x: x0, y: y0, w: Math.abs(clampX(c.x) - start.x), h: Math.abs(clampY(c.y) - start.y) };
      };
      var move = function (e) {
        var b = box(e);
        self.sel.setAttribute("x", b.x);
        self.sel.setAttribute("y", b.y);
        self.sel.setAttribute("width", b.w);
        self.sel.setAttribute("height", b.h);
      };
      var up = function (e) {
        window.removeEventListener("mousemove", move);
        window.removeEventListener("mouseup", up);
        var b = box(e);
        self.sel.remove();
        self.sel = null;
        // A drag shorter than MIN_BOX both ways is a click, not a box.
        if (b.w < MIN_BOX && b.h < MIN_BOX) return;
        var p = self.plot;
        // A flat box zooms x only, a narrow one y only.
        var flat = b.h < MIN_BOX;
        var nb = {
          x: b.w < MIN_BOX ? p.x : b.x,
          w: b.w < MIN_BOX ? p.w : b.w,
          y: flat ? p.y : b.y,
          h: flat ? p.h : b.h,
        };
        var x0 = self.ux(nb.x);
        var y0 = self.uy(nb.y);
        var view = { x: x0, y: y0, w: self.ux(nb.x + nb.w) - x0, h: self.uy(nb.y + nb.h) - y0 };
        if (self.pixels) {
          var within = function (pt, y) {
            return pt.px >= view.x && pt.px <= view.x + view.w && (!y || (pt.py >= view.y && pt.py <= view.y + view.h));
          };
          var inX = self.pixels.filter(function (pt) {
            return within(pt, false);
          });
          // No data in the window at all: nothing to zoom to.
          if (inX.length === 0) return;
          // A flat box, or a box with no data in it, takes y from the data
          // in its x range: the chart is never left empty.
          var inBox = inX.filter(function (pt) {
            return within(pt, true);
          });
          if (flat || inBox.length === 0) {
            var lo = Infinity;
            var hi = -Infinity;
            inX.forEach(function (pt) {
              lo = Math.min(lo, Math.max(pt.py, p.y));
              hi = Math.max(hi, Math.min(pt.py, p.y + p.h));
            });
            var pad = Math.max((hi - lo) * 0.08, 4);
            view.y = Math.max(lo - pad, p.y);
            view.h = Math.min(hi + pad, p.y + p.h) - view.y;
          }
        }
        self.view = view;
        self.apply();
      };
      window.addEventListener("mousemove", move);
      window.addEventListener("mouseup", up);
    });
  };

  function init(svg) {
    if (svg.klChart || !svg.getAttribute("data-plot")) return svg.klChart || null;
    svg.klChart = new Chart(svg);
    return svg.klChart;
  }

  function initAll() {
    document.querySelectorAll("svg.kl-chart, svg.kl-map").forEach(init);
  }

  window.kicklabCharts = { init: init, format: fmt };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", initAll);
  else initAll();
})();
