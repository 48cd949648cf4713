// Namespaces below the current one: list, create, delete, switch to.

import { api, encodePath, listKeys, session } from "../api.js";
import { act, confirmDialog, field, h, input, outcome, pageTitle, section, table } from "../dom.js";

export async function namespacesPage(parts, ctx) {
  const out = outcome();
  const here = session.namespace;
  const keys = await listKeys("sys/namespaces");
  const join = (child) => [here, child.replace(/\/$/, "")].filter(Boolean).join("/");
  const rows = keys.map((key) => {
    const full = join(key);
    const use = h("button", { type: "button", class: "small secondary", "aria-label": `Switch to ${full}` }, "Switch to");
    use.addEventListener("click", () => {
      session.save({ namespace: full });
      ctx.go("secrets");
    });
    const del = h("button", { type: "button", class: "small danger", "aria-label": `Delete ${full}` }, "Delete");
    del.addEventListener("click", async () => {
      if (!(await confirmDialog(`Delete namespace ${full} and everything in it?`, "Delete"))) return;
      await act(out, async () => {
        await api("DELETE", `sys/namespaces/${encodePath(key.replace(/\/$/, ""))}`);
        ctx.render();
      }, del);
    });
    return [h("code", {}, full), h("span", { class: "row-actions" }, use, " ", del)];
  });
  const name = input({ id: "ns-new" });
  const submit = h("button", { type: "submit" }, "Create namespace");
  const create = h(
    "form",
    {
      onsubmit: async (e) => {
        e.preventDefault();
        await act(out, async () => {
          const n = name.value.trim().replace(/^\/+|\/+$/g, "");
          if (!n) throw new Error("enter a name");
          await api("POST", `sys/namespaces/${encodePath(n)}`, { body: {} });
          ctx.render();
        }, submit);
      },
    },
    field("Name", name, `Created inside ${here || "the root namespace"}.`),
    submit,
  );
  const up = here
    ? h("button", { type: "button", class: "secondary", onclick: () => {
        session.save({ namespace: here.split("/").slice(0, -1).join("/") });
        ctx.render();
      } }, "Go to the parent namespace")
    : null;
  return h(
    "div",
    {},
    pageTitle("Namespaces"),
    h("p", {}, `Current namespace: ${here || "root"}. `, up),
    section("Child namespaces", rows.length ? table("Namespaces", ["Path", "Actions"], rows) : h("p", {}, "None."), out.el),
    section("Create", create),
  );
}
