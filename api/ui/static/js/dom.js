// Small DOM helpers: the whole interface is built with h(), no framework.

let seq = 0;
/** A unique id for label/input pairs. */
export function uid(prefix = "f") {
  seq += 1;
  return `${prefix}-${seq}`;
}

/**
 * h("button", {class: "x", onclick: fn, "aria-label": "..."}, "text", child)
 * Properties starting with "on" become listeners; true/false attributes are toggled;
 * null, undefined and false children are skipped; arrays are flattened.
 */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2), value);
    } else if (key === "value" || key === "checked") {
      el[key] = value;
    } else if (value === true) {
      el.setAttribute(key, "");
    } else {
      el.setAttribute(key, String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replace the content of el. */
export function mount(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A labelled control: the label names the input for screen readers and clicks. */
export function field(label, input, hint) {
  if (!input.id) input.id = uid();
  const parts = [h("label", { for: input.id }, label), input];
  if (hint) {
    const hintId = uid("hint");
    input.setAttribute("aria-describedby", hintId);
    parts.push(h("small", { id: hintId, class: "hint" }, hint));
  }
  return h("div", { class: "field" }, parts);
}

export function input(props = {}) {
  return h("input", { type: "text", autocomplete: "off", spellcheck: "false", ...props });
}

/** Every error as words: the API's messages, or what went wrong on the way. */
export function errorMessages(err) {
  if (err && Array.isArray(err.messages) && err.messages.length) return err.messages;
  if (err && err.message) return [err.message];
  return [String(err)];
}

export function errorBox(err, title = "Error") {
  const messages = errorMessages(err);
  return h(
    "div",
    { class: "alert error", role: "alert" },
    h("strong", {}, title + (err && err.status ? ` (HTTP ${err.status})` : "") + ": "),
    messages.length === 1 ? messages[0] : h("ul", {}, messages.map((m) => h("li", {}, m))),
  );
}

export function okBox(text) {
  return h("div", { class: "alert ok", role: "status" }, text);
}

/** A slot whose content a form replaces with its outcome (error or success). */
export function outcome() {
  const el = h("div", { class: "outcome" });
  return {
    el,
    error(err, title) {
      mount(el, errorBox(err, title));
    },
    ok(text) {
      mount(el, okBox(text));
    },
    clear() {
      mount(el);
    },
    show(...nodes) {
      mount(el, ...nodes);
    },
  };
}

/** Run an async action from a form or button: busy state, errors shown in `out`. */
export async function act(out, fn, button) {
  if (button) button.disabled = true;
  out.clear();
  try {
    return await fn();
  } catch (err) {
    out.error(err);
    return undefined;
  } finally {
    if (button) button.disabled = false;
  }
}

/** A confirmation in a modal <dialog> (keyboard: Escape cancels, focus starts on Cancel). */
export function confirmDialog(message, confirmLabel = "Confirm") {
  return new Promise((resolve) => {
    const titleId = uid("dlg");
    const cancel = h("button", { type: "button", class: "secondary" }, "Cancel");
    const ok = h("button", { type: "button", class: "danger" }, confirmLabel);
    const dialog = h(
      "dialog",
      { "aria-labelledby": titleId },
      h("p", { id: titleId }, message),
      h("div", { class: "actions" }, cancel, ok),
    );
    const done = (value) => {
      dialog.close();
      dialog.remove();
      resolve(value);
    };
    cancel.addEventListener("click", () => done(false));
    ok.addEventListener("click", () => done(true));
    dialog.addEventListener("cancel", (e) => {
      e.preventDefault();
      done(false);
    });
    document.body.append(dialog);
    dialog.showModal();
    cancel.focus();
  });
}

/** Copy text; the Clipboard API needs a secure context, so fall back to a selection. */
export async function copyText(text) {
  if (navigator.clipboard && window.isSecureContext) {
    await navigator.clipboard.writeText(text);
    return;
  }
  const area = h("textarea", { class: "sr-only", "aria-hidden": "true" });
  area.value = text;
  document.body.append(area);
  area.select();
  document.execCommand("copy");
  area.remove();
}

/** Announce a short message to screen readers (and show it briefly). */
export function announce(text) {
  const live = document.getElementById("live");
  if (live) {
    live.textContent = "";
    live.textContent = text;
  }
}

/** A secret value: masked until revealed, with a copy button. */
export function secretValue(value, label = "value") {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  const shown = h("code", { class: "masked" }, "••••••••");
  let revealed = false;
  const reveal = h(
    "button",
    { type: "button", class: "small secondary", "aria-pressed": "false", "aria-label": `Reveal ${label}` },
    "Reveal",
  );
  reveal.addEventListener("click", () => {
    revealed = !revealed;
    shown.textContent = revealed ? text : "••••••••";
    shown.classList.toggle("masked", !revealed);
    reveal.setAttribute("aria-pressed", String(revealed));
    reveal.textContent = revealed ? "Hide" : "Reveal";
    reveal.setAttribute("aria-label", `${revealed ? "Hide" : "Reveal"} ${label}`);
  });
  const copy = h("button", { type: "button", class: "small secondary", "aria-label": `Copy ${label}` }, "Copy");
  copy.addEventListener("click", async () => {
    try {
      await copyText(text);
      copy.textContent = "Copied";
      announce(`${label} copied`);
      setTimeout(() => (copy.textContent = "Copy"), 1500);
    } catch (err) {
      copy.textContent = "Copy failed";
      announce(`Copy failed: ${errorMessages(err)[0]}`);
    }
  });
  return h("span", { class: "secret" }, shown, " ", reveal, " ", copy);
}

/** A table inside a scrolling wrapper, so narrow screens scroll it instead of the page. */
export function table(caption, headers, rows) {
  return h(
    "div",
    { class: "table-wrap", tabindex: "0", role: "region", "aria-label": caption },
    h(
      "table",
      {},
      h("caption", { class: "sr-only" }, caption),
      h("thead", {}, h("tr", {}, headers.map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, rows.map((r) => h("tr", {}, r.map((c) => h("td", {}, c))))),
    ),
  );
}

export function section(title, ...children) {
  return h("section", { class: "card" }, h("h2", {}, title), children);
}

export function pageTitle(text) {
  document.title = `${text} · Coffer`;
  return h("h1", {}, text);
}

/** A duration in seconds as Vault writes it (e.g. 1h2m3s); 0 as "system default". */
export function duration(seconds) {
  if (!seconds) return "system default";
  let s = Number(seconds);
  const parts = [];
  for (const [unit, size] of [["d", 86400], ["h", 3600], ["m", 60]]) {
    if (s >= size) {
      parts.push(`${Math.floor(s / size)}${unit}`);
      s %= size;
    }
  }
  if (s || !parts.length) parts.push(`${s}s`);
  return parts.join("");
}
