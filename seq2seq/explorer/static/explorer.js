// The attention explorer's page: asks /api/runs what is served, sends the sentence to
// /api/translate, and draws the maps of the method the switch shows as tables (rows: the
// English tokens, columns: the Chinese ones, <eos> last in both), with the translations
// under each intervention beside the model's own. Values are never recomputed here: a cell
// shows the number the server sent (data-weight), its colour a viridis ramp of it; the
// switch redraws the last answer, it asks the server nothing.
"use strict";

const VIRIDIS = [
  [68, 1, 84], [72, 40, 120], [62, 74, 137], [49, 104, 142], [38, 130, 142],
  [31, 158, 137], [53, 183, 121], [109, 205, 89], [180, 222, 44], [253, 231, 37],
];

function colour(weight) {
  const x = Math.min(Math.max(weight, 0), 1) * (VIRIDIS.length - 1);
  const k = Math.min(Math.floor(x), VIRIDIS.length - 2);
  const f = x - k;
  const rgb = VIRIDIS[k].map((c, i) => Math.round(c + f * (VIRIDIS[k + 1][i] - c)));
  return `rgb(${rgb.join(",")})`;
}

function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value !== undefined && value !== null) node.setAttribute(name, value);
  }
  for (const child of children) {
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const $ = (id) => document.getElementById(id);
const EMPTY_OUTPUT = "(an empty translation: the model wrote <eos> first)";

function showMessage(text) {
  const message = $("message");
  message.textContent = text;
  message.hidden = !text;
}

function describeRuns(runs) {
  const parts = runs.map((run) => {
    const kind = run.attention === "none" ? "no attention" : `${run.attention} attention`;
    const heads = run.heads > 1 ? `, ${run.heads} heads` : "";
    const score = run.test_bleu == null ? "" : ` — test BLEU ${run.test_bleu.toFixed(1)}`;
    return `${run.name} (${kind}${heads}, step ${run.step}${score})`;
  });
  $("runs-summary").textContent = parts.join("  ·  ");
}

function fillExamples(examples) {
  const select = $("examples");
  examples.forEach((example, index) => {
    select.append(element("option", { value: index }, `${example.text}   (${example.length} words)`));
  });
  select.addEventListener("change", () => {
    const example = examples[Number(select.value)];
    if (select.value === "" || !example) return;
    $("sentence").value = example.text;
    translate();
  });
  $("sentence").addEventListener("input", () => { select.value = ""; });
}

// What the switch offers, and how the page speaks of each map and of a cell's value.
const MAPS = {
  attention: {
    value: "weight",
    note: () => "Attention: the weights the decoder read the source with, one map per head; each row sums to 1.",
  },
  grad_x_input: {
    value: "share",
    scaled: true,
    note: () => "Gradient × input: how much each source word moved the log-probability of the row's word " +
      "(the L2 norm over its embedding), as shares of the row, coloured up to the map's largest share.",
  },
  integrated_gradients: {
    value: "share",
    scaled: true,
    note: (steps) => `Integrated gradients from the all-zero embedding, with ${steps} steps here ` +
      "(evaluate.py --explain uses 32, to answer at once), as shares of the row, coloured up to the " +
      "map's largest share; δ is how far a row's attributions sum from the change of its " +
      "log-probability (Captum's convergence delta).",
  },
  gold: {
    value: "gold",
    note: () => "Gold links of a test sentence: a reference word's row spread over its sure links " +
      "(else its possible ones); a word without links on <eos>, which AER reads as unaligned.",
  },
};

function chosenMap() {
  return document.querySelector("#map-switch input:checked").value;
}

function heatmap(map, columns, rows, view) {
  const gold = new Map();
  for (const [i, j] of view.possible || []) gold.set(`${i},${j}`, "possible");
  for (const [i, j] of view.sure || []) gold.set(`${i},${j}`, "sure");
  const value = MAPS[map.method].value;
  // attributions spread over more words than attention: coloured up to the map's largest share
  const top = MAPS[map.method].scaled ? Math.max(...map.weights.flat(), 1e-9) : 1;
  const head = element("tr", {}, element("th", { scope: "col" }));
  for (const column of columns) {
    head.append(element("th", { scope: "col", lang: column === "<eos>" ? null : "zh-Hans", class: "src" },
      element("span", {}, column)));
  }
  const body = element("tbody");
  map.weights.forEach((row, j) => {
    const tr = element("tr", {}, element("th", { scope: "row", class: "tgt" }, rows[j]));
    row.forEach((weight, i) => {
      tr.append(element("td", {
        "data-weight": weight, "data-row": j, "data-col": i,
        class: gold.get(`${i},${j}`) || null,
        title: `${rows[j]} ← ${columns[i]}: ${weight.toFixed(3)}`,
      }));
      tr.lastChild.style.background = colour(weight / top); // CSSOM: allowed by the page's CSP
    });
    body.append(tr);
  });
  const table = element("table", {
    class: "heatmap", "data-method": map.method, "data-head": map.head, "data-layer": map.layer,
  }, element("thead", {}, head), body);
  table.addEventListener("mouseover", (event) => {
    const cell = event.target.closest("td");
    if (!cell) return;
    const j = Number(cell.dataset.row), i = Number(cell.dataset.col);
    $("readout").textContent =
      `${map.title}: ${rows[j]} ← ${columns[i]}  ${value} ${Number(cell.dataset.weight).toFixed(4)}`;
  });
  return table;
}

const READINGS = {
  output: "while writing its output",
  reference: "while reading the reference (teacher forcing, as AER is scored)",
};

// Why a view has no map of the chosen method.
function missing(method, view, answer, run) {
  if (method === "attention" && run.attention === "none") {
    return ["no-attention",
      "No attention: this model reads the whole sentence as one fixed vector, so there is no map to draw."];
  }
  if (method === "gold" && !answer.reference) {
    return ["no-gold", "Gold links come with a test sentence: pick one from the list."];
  }
  if (method === "gold") {
    return ["no-gold", "The gold links are the reference's: see the maps while reading the reference."];
  }
  return ["no-map", "This map was not asked for."];
}

function renderView(view, answer, run, method) {
  const part = element("div", { class: "view", "data-reading": view.reading });
  part.append(element("h3", {}, READINGS[view.reading] || view.reading));
  const shown = view.maps.filter((map) => map.method === method);
  if (view.aer && view.aer[method] != null) {
    const perHead = shown.length > 1
      ? ` · per head ${shown.map((map) => map.aer.toFixed(2)).join(", ")}` : "";
    part.append(element("p", { class: "aer" }, `sentence AER ${view.aer[method].toFixed(3)}`,
      `${shown.length > 1 ? " (heads averaged)" : ""}${perHead}`));
  }
  if (view.sure) {
    part.append(element("p", { class: "legend" }, "gold:",
      element("span", { class: "sure-key" }), "sure", element("span", { class: "possible-key" }), "possible"));
  }
  if (!shown.length) {
    const [kind, text] = missing(method, view, answer, run);
    part.append(element("p", { class: kind }, text));
    return part;
  }
  const maps = element("div", { class: "maps" });
  for (const map of shown) {
    let caption = map.title;
    if (map.method === "integrated_gradients") {
      caption += ` (${run.ig_steps} steps, mean |δ| ${map.convergence_delta.toFixed(3)})`;
    }
    if (shown.length > 1 && map.aer != null) caption += ` (AER ${map.aer.toFixed(2)})`;
    maps.append(element("figure", {}, element("figcaption", {}, caption),
      heatmap(map, answer.source, view.rows, view)));
  }
  part.append(maps);
  return part;
}

function renderInterventions(answer) {
  const same = (output) => output.join(" ") === answer.output.join(" ");
  const body = element("tbody", {},
    element("tr", { class: "own" }, element("th", { scope: "row" }, "its own attention"),
      element("td", { lang: "en" }, answer.text || EMPTY_OUTPUT), element("td")));
  for (const steered of answer.interventions) {
    body.append(element("tr", { "data-intervention": steered.name },
      element("th", { scope: "row" }, steered.label),
      element("td", { lang: "en" }, steered.text || EMPTY_OUTPUT),
      element("td", { class: same(steered.output) ? "same" : "differs" },
        same(steered.output) ? "= the same" : "≠ differs")));
  }
  return element("table", { class: "interventions" },
    element("caption", {}, "The translation with the attention replaced (free-running, the same search):"),
    body);
}

function renderRun(answer, run, method) {
  const kind = run.attention === "none" ? "no attention"
    : `${run.attention}${run.heads > 1 ? `, ${run.heads} heads` : ""}`;
  const section = element("section", { class: "run", "data-run": answer.run },
    element("h2", {}, answer.run, " ", element("span", { class: "kind" }, `(${kind})`)),
    element("p", { class: "output", lang: "en" }, answer.text || EMPTY_OUTPUT));
  if (answer.reference) {
    const same = answer.reference.join(" ") === answer.output.join(" ");
    section.append(element("p", { class: "reference" }, `reference: ${answer.reference.join(" ")} `,
      element("span", { class: same ? "same" : "differs" }, same ? "✓ the same" : "✗ differs")));
  }
  if (answer.unknown.length) {
    section.append(element("p", { class: "unknown" }, `unknown words (read as <unk>): ${answer.unknown.join(" ")}`));
  }
  if (answer.interventions.length) section.append(renderInterventions(answer));
  for (const view of answer.views) section.append(renderView(view, answer, run, method));
  section.append(element("p", { class: "timing" }, `${answer.milliseconds.toFixed(1)} ms`));
  return section;
}

let runs = [];
let lastAnswer = null;

function render() {
  const method = chosenMap();
  const steps = runs.length ? runs[0].ig_steps : 0;
  $("map-note").textContent = MAPS[method].note(steps);
  if (!lastAnswer) return;
  $("results").replaceChildren(...lastAnswer.runs.map((a, k) => renderRun(a, runs[k], method)));
}

async function translate() {
  const button = $("translate");
  button.disabled = true;
  showMessage("");
  try {
    const response = await fetch("/api/translate", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ text: $("sentence").value, beam_size: Number($("search").value) }),
    });
    const answer = await response.json().catch(() => ({}));
    if (!response.ok) {
      lastAnswer = null;
      $("results").replaceChildren();
      showMessage(answer.error || `the server answered ${response.status}`);
      return;
    }
    lastAnswer = answer;
    render();
  } catch (error) {
    showMessage("the server did not answer: is scripts/serve.py still running?");
  } finally {
    button.disabled = false;
    document.body.dataset.state = "ready";
  }
}

async function start() {
  try {
    const response = await fetch("/api/runs");
    const info = await response.json();
    runs = info.runs;
    describeRuns(info.runs);
    fillExamples(info.examples);
    $("sentence-hint").textContent =
      `(segmented or not; at most ${info.limits.characters} characters)`;
    for (const run of info.runs) {
      for (const note of run.notes) showMessage(`${run.name}: ${note}`);
    }
  } catch (error) {
    showMessage("could not reach the server: is scripts/serve.py still running?");
  }
  $("map-switch").addEventListener("change", render);
  render();
  $("query").addEventListener("submit", (event) => {
    event.preventDefault();
    translate();
  });
  document.body.dataset.state = "ready";
}

start();
