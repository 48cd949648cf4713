// ACL policies: list, read, create, edit (server-side errors shown at their line), delete.

import { api, encodePath, listKeys } from "../api.js";
import { act, confirmDialog, errorMessages, field, h, input, outcome, pageTitle, table } from "../dom.js";

const FIXED = new Set(["root"]);

export async function policiesPage(parts, ctx) {
  const [name, mode] = parts;
  if (name === undefined || name === "") return list();
  if (mode === "new" || name === "+new") return edit(ctx, "", "");
  const reply = await api("GET", `sys/policies/acl/${encodePath(name)}`);
  return edit(ctx, name, (reply.data && reply.data.policy) || "");
}

async function list() {
  const names = await listKeys("sys/policies/acl");
  return h(
    "div",
    {},
    pageTitle("Policies"),
    h("p", { class: "actions" }, h("a", { class: "button", href: "#/policies/+new" }, "Create policy")),
    table("ACL policies", ["Name"], names.map((n) => [h("a", { href: `#/policies/${encodeURIComponent(n)}` }, n)])),
  );
}

/**
 * Where an error points in the policy text, as a 1-based line: "line 3, column 1" from
 * the parser, or else the line declaring the path a semantic error names
 * (`path "x": invalid capability "jump"`).
 */
export function errorLine(message, text) {
  const match = /line (\d+)/i.exec(message);
  if (match) return Number(match[1]);
  const named = /path "((?:[^"\\]|\\.)*)"/.exec(message.replace(/^failed to parse policy "[^"]*":\s*/, ""));
  if (!named) return null;
  const literal = named[1].replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const declares = new RegExp(`^\\s*path\\s+"${literal}"`);
  const index = text.split("\n").findIndex((line) => declares.test(line));
  return index >= 0 ? index + 1 : null;
}

/** The lines around `line`, numbered, the offending one marked. */
function excerpt(text, line, message) {
  const lines = text.split("\n");
  const first = Math.max(1, line - 2);
  const last = Math.min(lines.length, line + 2);
  const items = [];
  for (let n = first; n <= last; n += 1) {
    const bad = n === line;
    items.push(
      h(
        "li",
        { value: String(n), class: bad ? "bad" : "", "aria-current": bad ? "true" : false },
        h("code", {}, lines[n - 1] || " "),
        bad ? h("span", { class: "sr-only" }, ` (error here: ${message})`) : null,
      ),
    );
  }
  return h("ol", { class: "excerpt", start: String(first), "aria-label": `Policy text around line ${line}` }, items);
}

function selectLine(area, line) {
  const lines = area.value.split("\n");
  const start = lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0);
  const end = start + (lines[line - 1] || "").length;
  area.focus();
  area.setSelectionRange(start, end);
}

function edit(ctx, name, text) {
  const out = outcome();
  const creating = !name;
  const nameInput = input({ id: "policy-name", value: name, readonly: !creating });
  const area = h("textarea", { id: "policy-text", rows: "12", spellcheck: "false", class: "mono" });
  area.value = text;
  const gutter = h("div", { class: "gutter", "aria-hidden": "true" });
  const renumber = () => {
    const count = area.value.split("\n").length;
    gutter.textContent = Array.from({ length: count }, (_, i) => i + 1).join("\n");
    gutter.scrollTop = area.scrollTop;
  };
  area.addEventListener("input", renumber);
  area.addEventListener("scroll", () => (gutter.scrollTop = area.scrollTop));
  renumber();
  const save = h("button", { type: "submit" }, "Save policy");
  const buttons = [save];
  if (!creating && !FIXED.has(name) && name !== "default") {
    const del = h("button", { type: "button", class: "danger" }, "Delete policy");
    del.addEventListener("click", async () => {
      if (!(await confirmDialog(`Delete policy ${name}? Tokens that carry it lose its grants.`, "Delete"))) return;
      await act(out, async () => {
        await api("DELETE", `sys/policies/acl/${encodePath(name)}`);
        ctx.go("policies");
      }, del);
    });
    buttons.push(del);
  }
  const form = h(
    "form",
    {
      class: "card",
      onsubmit: async (e) => {
        e.preventDefault();
        area.removeAttribute("aria-invalid");
        const target = nameInput.value.trim();
        try {
          save.disabled = true;
          out.clear();
          if (!target) throw new Error("enter a policy name");
          await api("PUT", `sys/policies/acl/${encodePath(target)}`, { body: { policy: area.value } });
          out.ok(`Policy ${target} saved.`);
          if (creating) ctx.go("policies", target);
        } catch (err) {
          const message = errorMessages(err).join("; ");
          const line = errorLine(message, area.value);
          area.setAttribute("aria-invalid", "true");
          out.error(err, "The policy was not saved");
          if (line) {
            out.el.append(h("p", {}, `Error at line ${line}:`), excerpt(area.value, line, message));
            selectLine(area, line);
          }
        } finally {
          save.disabled = false;
        }
      },
    },
    field("Name", nameInput),
    out.el, // above the editor: the error and its line stay in view next to the text
    h("div", { class: "field" }, h("label", { for: "policy-text" }, "Policy (HCL or JSON)"), h("div", { class: "editor" }, gutter, area)),
    h("div", { class: "actions" }, buttons, h("a", { class: "button secondary", href: "#/policies" }, "Back to list")),
  );
  area.setAttribute("aria-describedby", "policy-help");
  return h(
    "div",
    {},
    pageTitle(creating ? "Create policy" : `Policy ${name}`),
    h("p", { id: "policy-help" }, "The server checks the policy when you save; a parse error is shown with its line."),
    form,
  );
}
