"""One self-contained HTML page to browse a sentence pair's attention.

Choose the kind (encoder self, decoder self, encoder-decoder), the layer and
the head (or the mean of the heads), or name them in the address
(``index.html#kind=encoder_decoder&layer=0&head=mean``); hover a query token to see where it
attends, in the spirit of Figures 3-5 of "Attention Is All You Need": its key
tokens are shaded by weight, and its row of the heatmap below is outlined.
The weights travel inside the page as JSON; the page loads nothing else.
Tokens are put in the page as text (``textContent``), never as HTML.
"""
from __future__ import annotations

import html
import json
import os

from t2t_lite.visualization.attention_maps import AttentionMaps
from t2t_lite.visualization.heatmaps import TITLES

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Attention: __TITLE__</title>
<style>
body { font-family: sans-serif; margin: 1.5em; color: #222; }
.controls label { margin-right: 1.2em; }
.tokens { margin: 1em 0; line-height: 2.2; }
.tokens::before { content: attr(data-label); display: inline-block; width: 6em;
                  color: #777; font-size: 0.85em; }
.token { padding: 0.15em 0.3em; margin: 0.1em; border-radius: 3px; cursor: default;
         display: inline-block; }
.query.active { outline: 2px solid #d33; }
table.grid { border-collapse: collapse; font-size: 12px; }
table.grid th { font-weight: normal; padding: 0 3px; }
table.grid th.key { writing-mode: vertical-rl; transform: rotate(180deg); }
table.grid td { width: 22px; height: 22px; }
tr.active th { color: #d33; font-weight: bold; }
</style></head>
<body>
<h1>Attention: __TITLE__</h1>
<div class="controls">
  <label>kind <select id="kind"></select></label>
  <label>layer <select id="layer"></select></label>
  <label>head <select id="head"></select></label>
</div>
<p>Hover a query token (top line, or a row of the heatmap) to shade the tokens it attends to.</p>
<div class="tokens" id="queries" data-label="query"></div>
<div class="tokens" id="keys" data-label="attends to"></div>
<table class="grid" id="grid"></table>
<script type="application/json" id="attention-data">__DATA__</script>
<script>
"use strict";
const data = JSON.parse(document.getElementById("attention-data").textContent);
const select = id => document.getElementById(id);
function fill(element, options) {
  element.replaceChildren(...options.map(([value, text]) => {
    const option = document.createElement("option");
    option.value = value; option.textContent = text; return option; }));
}
function current() {
  const kind = data.kinds[select("kind").value];
  const layer = kind.weights[Number(select("layer").value)];
  const head = select("head").value;
  const rows = head === "mean"
    ? layer[0].map((row, q) => row.map((_, k) =>
        layer.reduce((sum, h) => sum + h[q][k], 0) / layer.length))
    : layer[Number(head)];
  return {kind, rows};
}
function shade(weight) { return `rgba(40, 90, 200, ${Math.min(1, weight).toFixed(3)})`; }
function span(text, className) {
  const element = document.createElement("span");
  element.className = "token " + className; element.textContent = text; return element;
}
function focus(q) {
  const {kind, rows} = current();
  document.querySelectorAll(".query").forEach((e, i) => e.classList.toggle("active", i === q));
  document.querySelectorAll("#keys .token").forEach((e, k) => {
    e.style.background = shade(rows[q][k]);
    e.style.color = rows[q][k] > 0.5 ? "white" : "";
    e.title = rows[q][k].toFixed(3); });
  document.querySelectorAll("#grid tr.row").forEach((e, i) => e.classList.toggle("active", i === q));
}
function render() {
  const {kind, rows} = current();
  select("queries").replaceChildren(...kind.queries.map((t, q) => {
    const e = span(t, "query"); e.addEventListener("mouseenter", () => focus(q)); return e; }));
  select("keys").replaceChildren(...kind.keys.map(t => span(t, "key")));
  const header = document.createElement("tr");
  header.appendChild(document.createElement("th"));
  kind.keys.forEach(t => { const th = document.createElement("th");
    th.className = "key"; th.textContent = t; header.appendChild(th); });
  const body = rows.map((row, q) => {
    const tr = document.createElement("tr"); tr.className = "row";
    const th = document.createElement("th"); th.textContent = kind.queries[q];
    tr.appendChild(th);
    row.forEach((w, k) => { const td = document.createElement("td");
      td.style.background = shade(w); td.title = `${kind.queries[q]} -> ${kind.keys[k]}: ${w.toFixed(3)}`;
      tr.appendChild(td); });
    tr.addEventListener("mouseenter", () => focus(q));
    return tr; });
  select("grid").replaceChildren(header, ...body);
  focus(0);
}
function chooseKind() {
  const kind = data.kinds[select("kind").value];
  fill(select("layer"), kind.weights.map((_, i) => [i, String(i)]));
  fill(select("head"), [["mean", "mean of heads"],
                        ...kind.weights[0].map((_, i) => [i, String(i)])]);
  render();
}
// The view is in the address (#kind=encoder_decoder&layer=1&head=mean), to link to it.
function remember() {
  location.replace("#" + new URLSearchParams({kind: select("kind").value,
    layer: select("layer").value, head: select("head").value}));
}
function choose(id, value) {
  if (value !== null && [...select(id).options].some(o => o.value === value)) select(id).value = value;
}
fill(select("kind"), Object.keys(data.kinds).map(k => [k, data.kinds[k].title]));
const view = new URLSearchParams(location.hash.slice(1));
choose("kind", view.get("kind"));
chooseKind();
choose("layer", view.get("layer"));
choose("head", view.get("head"));
render();
select("kind").addEventListener("change", () => { chooseKind(); remember(); });
select("layer").addEventListener("change", () => { render(); remember(); });
select("head").addEventListener("change", () => { render(); remember(); });
</script>
</body></html>
"""


def page_data(maps: AttentionMaps) -> dict:
    """What the page's script reads: per kind its title, tokens and weights
    [layers][heads][queries][keys] rounded to 4 decimals."""
    kinds = {}
    for kind, weights in maps.weights.items():
        queries, keys = maps.axes(kind)
        kinds[kind] = {"title": TITLES[kind], "queries": queries, "keys": keys,
                       "weights": weights.round(4).tolist()}
    return {"kinds": kinds}


def write_page(maps: AttentionMaps, path: str, title: str) -> str:
    """Writes the page to ``path``; returns it."""
    data = json.dumps(page_data(maps), ensure_ascii=False).replace("</", "<\\/")
    escaped_title = html.escape(title)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(_PAGE.replace("__TITLE__", escaped_title).replace("__DATA__", data))
    return path
